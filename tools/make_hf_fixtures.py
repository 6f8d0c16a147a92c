#!/usr/bin/env python3
"""Makes the Hugging Face fixtures in tests/fixtures/hf/: tiny
random checkpoints of each architecture BatchPilot runs, small byte-level BPE
tokenizers trained on tests/fixtures/hf/corpus.txt, and what the reference
implementation (transformers, tokenizers) answers for them, so that the C++
tests need no Python.

  llama/    LlamaForCausalLM: untied embeddings, GQA 4/2, head_dim 32 (not
            hidden / heads), llama3 rope scaling;
            a Llama-3-style tokenizer (Split pattern + ByteLevel, ignore_merges,
            <|begin_of_text|> prepended) and a Llama-3 chat template
  qwen2/    Qwen2ForCausalLM: tied embeddings, QKV bias, GQA 4/1; a Qwen-2-style
            tokenizer (NFC, Split pattern + ByteLevel) and a ChatML template
  mistral/  MistralForCausalLM: GQA 4/2, in two safetensors shards with an
            index; a GPT-2-style tokenizer (ByteLevel with its own pattern)

  llama-custom-chat/  LlamaForCausalLM with its own byte-level BPE tokenizer and a chat
            template of its own (<|begin|>role ... <|end|>)
  mistral-sentencepiece/  MistralForCausalLM with a SentencePiece-style tokenizer
            (Mistral v0.3's layout, byte_fallback) and Mistral Nemo's [INST] template
  gemma3/   Gemma3ForCausalLM: GeGLU, (1 + weight) RMSNorms before and
            after attention and MLP, q/k norms, sliding-window layers (window 8)
            beside a global one with their own rope base, query_pre_attn_scalar,
            linear rope scaling on the global layer, final logit softcapping,
            tied embeddings; a Gemma SentencePiece-style tokenizer with
            <start_of_turn>/<end_of_turn> and Gemma 3's chat template as it ships;
            references from the saved checkpoint reloaded in float32, prompts and
            generations longer than the window; reference.json "chats": the
            template's renderings (system, multi-turn, generation prompt on/off)
  sentencepiece/  SentencePiece-style BPE tokenizers (tokenizer.json only):
            llama2.json (Prepend + Replace normalizers, byte_fallback, decoder
            Replace/ByteFallback/Fuse/Strip), mistral-v03.json (Metaspace
            pre-tokenizer, prepend_scheme first, split off),
            gemma.json (Replace normalizer, no prefix); reference.json: ids and
            decodes from tokenizers
  qwen3/    Qwen3ForCausalLM: per-head RMSNorm on q and k, no QKV bias, head_dim 32
            (not hidden / heads), tied embeddings; a Qwen-style tokenizer with <think> and
            </think> as added (non-special) tokens and Qwen 3's real chat template
            (templates/Qwen-Qwen3-0.6B.jinja, its thinking blocks)
  qwen3-moe/  Qwen3MoeForCausalLM: 8 experts, top-2, norm_topk_prob, layer 1 a dense MLP
            (mlp_only_layers); the same tokenizer style and template

  templates/  real chat templates as models ship them (*.jinja, the text of
            each model's tokenizer_config.json / chat_template.jinja) and
            reference.json: transformers' apply_chat_template renderings of
            conversations with and without a system message, the generation
            prompt on and off, or the error a template raises

reference.json in each model folder: for fixed prompts (chosen so that every step's top-2
logit margin exceeds 1e-3), the greedy tokens and every step's float32
logits; token ids of a corpus with Unicode, whitespace runs and special
tokens (with and without the tokenizer's own specials); the decoded texts;
the chat prompt transformers renders for a conversation.

The weights are stored in bfloat16 (half the bytes) and the references are
computed from exactly those values in float32. Run from the repository root:
  python3 tools/make_hf_fixtures.py    (needs torch, transformers, tokenizers, safetensors)
  python3 tools/make_hf_fixtures.py qwen3 qwen3-moe    (only the folders named)
"""
import json
import pathlib
import random
import sys

import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (Gemma3ForCausalLM, Gemma3TextConfig, LlamaConfig, LlamaForCausalLM, MistralConfig,
                          MistralForCausalLM, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM, Qwen3Config,
                          Qwen3ForCausalLM, Qwen3MoeConfig, Qwen3MoeForCausalLM)

ROOT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "hf"
CORPUS = (ROOT / "corpus.txt").read_text()

LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")

LLAMA3_CHAT = ("{{ bos_token }}{% for message in messages %}"
               "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim"
               " + '<|eot_id|>' }}{% endfor %}"
               "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")
CHATML_CHAT = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + "
               "'<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
               "{% endif %}")

TEXTS = [
    "Hello, batching world!",
    "  leading spaces and trailing   ",
    "Whitespace    runs\t\ttabs\n\n\nand newlines.",
    "Grüße aus München — café, naïve, Ångström.",
    "e\u0301te\u0301 (decomposed accents)",
    "日本語のテキストと中文文本",
    "Emoji 🚀🔥✨ and → arrows ≤ ≥",
    "Numbers 1234567890 and 3.14159",
    "I'm sure they'll say we've done it.",
    "",
]


def train_tokenizer(style, vocab_size=420):
    if style in ("gpt2", "custom"):
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        specials = ["<|endoftext|>"] if style == "gpt2" else ["<|end_of_text|>", "<|begin|>", "<|end|>"]
    else:
        tok = Tokenizer(models.BPE(ignore_merges=(style == "llama3")))
        pattern = LLAMA3_SPLIT if style == "llama3" else QWEN2_SPLIT
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(pattern=__import__("tokenizers").Regex(pattern), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        if style in ("qwen2", "qwen3"):
            tok.normalizer = normalizers.NFC()
            specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
        else:
            specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                        "<|eot_id|>"]
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS.splitlines(), trainer=trainer)
    if style == "qwen3":  # as Qwen 3's tokenizer.json has them: added, not special, not normalized
        tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in ("<think>", "</think>")])
    if style == "llama3":
        bos = tok.token_to_id("<|begin_of_text|>")
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A $B",
                                          special_tokens=[("<|begin_of_text|>", bos)]),
        ])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok, specials


def save_tokenizer(tok, specials, style, folder):
    tok.save(str(folder / "tokenizer.json"))
    chat = {"llama3": LLAMA3_CHAT, "qwen2": CHATML_CHAT, "custom": CUSTOM_CHAT}.get(style)
    if style == "qwen3":
        chat = (ROOT / "templates" / "Qwen-Qwen3-0.6B.jinja").read_text()
    kwargs = {}
    if style == "llama3":
        kwargs = dict(bos_token="<|begin_of_text|>", eos_token="<|eot_id|>")
    elif style in ("qwen2", "qwen3"):
        kwargs = dict(eos_token="<|im_end|>", pad_token="<|endoftext|>")
    elif style == "custom":
        kwargs = dict(eos_token="<|end|>")
    else:
        kwargs = dict(eos_token="<|endoftext|>")
    fast = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"), **kwargs)
    if chat:
        fast.chat_template = chat
    fast.save_pretrained(str(folder))
    return PreTrainedTokenizerFast.from_pretrained(str(folder))


def perturb(model, seed):
    """Norm weights and biases away from their 1 / 0 initialisation, so the
    multiplications and additions they do are tested too."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.2 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))


def margins_ok(logits):
    top = torch.topk(logits, 2).values
    return float(top[0] - top[1]) > 1e-3


def greedy(model, prompt, steps):
    ids = list(prompt)
    tokens, rows = [], []
    with torch.no_grad():
        for _ in range(steps):
            logits = model(torch.tensor([ids])).logits[0, -1].float()
            if not margins_ok(logits):
                return None
            t = int(torch.argmax(logits))
            tokens.append(t)
            rows.append([float(f"{float(v):.8g}") for v in logits])  # float32's precision, half the text
            ids.append(t)
    return tokens, rows


def references(model, tok, vocab, rng, steps=6):
    prompts, out = [], []
    shared = [rng.randrange(vocab) for _ in range(20)]  # a common prefix for the prefix-cache test
    lengths = [1, 5, 17, 33, 21, 26, 40]
    for i, n in enumerate(lengths):
        for _attempt in range(200):
            prompt = (shared + [rng.randrange(vocab) for _ in range(n)]) if i >= 4 else \
                [rng.randrange(vocab) for _ in range(n)]
            got = greedy(model, prompt, steps)
            if got:
                prompts.append(prompt)
                out.append({"prompt": prompt, "tokens": got[0], "logits": got[1], "shared_prefix": 20 if i >= 4 else 0})
                break
        else:
            raise RuntimeError("no prompt with clear margins")
    return out


def tokenizer_references(fast):
    cases = []
    specials = fast.all_special_tokens
    texts = list(TEXTS)
    if specials:
        texts.append(f"before{specials[-1]}after and {specials[0]} spaced")
    if "<think>" in fast.get_vocab():  # Qwen 3's added (non-special) tokens
        texts.append("<think>\nWeigh it.\n</think>\n\nA batch<think>of 8.")
    for text in texts:
        with_specials = fast.encode(text, add_special_tokens=True)
        plain = fast.encode(text, add_special_tokens=False)
        cases.append({"text": text, "ids": with_specials, "ids_plain": plain,
                      "decoded": fast.decode(with_specials, skip_special_tokens=True),
                      "decoded_with_specials": fast.decode(with_specials, skip_special_tokens=False)})
    return cases


def build(name, style, config_cls, model_cls, config_kwargs, seed, shard=False):
    folder = ROOT / name
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*"):
        if old.name != ".gitignore":
            old.unlink()
    if style == "mistral-v03":  # SentencePiece style, Mistral Nemo's [INST] template
        train_sentencepiece(style).save(str(folder / "tokenizer.json"))
        fast = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"), bos_token="<s>",
                                       eos_token="</s>", unk_token="<unk>")
        fast.chat_template = (ROOT / "templates" / "mistralai-Mistral-Nemo-Instruct-2407.jinja").read_text()
        fast.save_pretrained(str(folder))
        fast = PreTrainedTokenizerFast.from_pretrained(str(folder))
    else:
        tok, specials = train_tokenizer(style)
        fast = save_tokenizer(tok, specials, style, folder)
    vocab = len(fast)
    torch.manual_seed(seed)
    config = config_cls(vocab_size=vocab, **config_kwargs)
    model = model_cls(config)
    perturb(model, seed)
    # bfloat16 on disk; the references from exactly those values in float32
    buffers = {n: b.clone() for n, b in model.named_buffers()}  # the rotary inv_freq, kept in float32
    model = model.to(torch.bfloat16).to(torch.float32).eval()
    model.to(torch.bfloat16).save_pretrained(str(folder), max_shard_size="150KB" if shard else "50GB",
                                             safe_serialization=True)
    model = model.to(torch.float32)
    with torch.no_grad():  # .to(bfloat16) rounded the buffers too; a loaded model computes them in float32
        for n, b in model.named_buffers():
            b.copy_(buffers[n])
    rng = random.Random(seed)
    ref = {"architecture": config.architectures[0] if config.architectures else model_cls.__name__,
           "vocab_size": vocab, "parameters": sum(p.numel() for p in model.parameters()),
           "generations": references(model, fast, vocab, rng),
           "tokenizer": tokenizer_references(fast)}
    if fast.chat_template:
        messages = [{"role": "system", "content": "You batch requests."},
                    {"role": "user", "content": "  How large should a batch be?  "},
                    {"role": "assistant", "content": "It depends on the traffic."},
                    {"role": "user", "content": "Ünïcode too: 日本"}]
        prompt = fast.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        ref["chat"] = {"messages": messages, "prompt": prompt,
                       "ids": fast.encode(prompt, add_special_tokens=False)}
        if style == "qwen3":  # every conversation, the generation prompt on and off
            ref["chats"] = [{"conversation": label, "add_generation_prompt": gen,
                             "prompt": fast.apply_chat_template(m, tokenize=False, add_generation_prompt=gen)}
                            for label, m in CONVERSATIONS.items() for gen in (True, False)]
    (folder / "reference.json").write_text(json.dumps(ref, separators=(",", ":")))
    files = sorted(p.name for p in folder.iterdir())
    print(f"{name}: {config.architectures} vocab {vocab}, {sum(p.numel() for p in model.parameters())} parameters, "
          f"files {files}")


CUSTOM_CHAT = ("{% for m in messages %}<|begin|>{{ m['role'] }}\n{{ m['content'] }}<|end|>\n{% endfor %}"
               "<|begin|>assistant\n")

# Templates not in templates/ as files: Llama 2 chat's and Mistral 7B Instruct
# v0.1's, as their tokenizer_config.json ships them.
LLAMA2_CHAT = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
    "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if loop.index0 == 0 and system_message != false %}"
    "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
    "{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}"
    "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
    "{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}")
MISTRAL_V01_CHAT = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}"
    "{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}")

# Each template's special tokens, as its model's tokenizer_config.json names them.
TEMPLATE_SPECIALS = {
    "llama-2-chat": {"bos_token": "<s>", "eos_token": "</s>"},
    "mistral-7b-instruct-v0.1": {"bos_token": "<s>", "eos_token": "</s>"},
    "mistralai-Mistral-Nemo-Instruct-2407": {"bos_token": "<s>", "eos_token": "</s>"},
    "google-gemma-2-2b-it": {"bos_token": "<bos>", "eos_token": "<eos>"},
    "microsoft-Phi-3.5-mini-instruct": {"bos_token": "<s>", "eos_token": "<|endoftext|>"},
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": {"bos_token": "<\uff5cbegin\u2581of\u2581sentence\uff5c>",
                                                 "eos_token": "<\uff5cend\u2581of\u2581sentence\uff5c>"},
    "Qwen-Qwen3-0.6B": {"eos_token": "<|im_end|>"},
    "meta-llama-Llama-3.1-8B-Instruct": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "Qwen-Qwen2.5-7B-Instruct": {"eos_token": "<|im_end|>"},
}

CONVERSATIONS = {
    "system multi-turn": [
        {"role": "system", "content": "You batch requests."},
        {"role": "user", "content": "  How large should a batch be?  "},
        {"role": "assistant", "content": "It depends on the traffic."},
        {"role": "user", "content": "\u00dcn\u00efcode too: \u65e5\u672c"}],
    "multi-turn": [
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "<think>\nGreet back.\n</think>\n\nHello. How can I help?"},
        {"role": "user", "content": "Tell me about KV caches.\nBriefly."}],
    "one user message": [{"role": "user", "content": "What is continuous batching?"}],
}


def template_references():
    """Every template in templates/ rendered by transformers for each
    conversation, the generation prompt on and off (or the error raised)."""
    folder = ROOT / "templates"
    (folder / "llama-2-chat.jinja").write_text(LLAMA2_CHAT)
    (folder / "mistral-7b-instruct-v0.1.jinja").write_text(MISTRAL_V01_CHAT)
    base = ROOT / "llama" / "tokenizer.json"
    out = {}
    for path in sorted(folder.glob("*.jinja")):
        name = path.stem
        source = path.read_text()
        specials = TEMPLATE_SPECIALS[name]
        tok = PreTrainedTokenizerFast(tokenizer_file=str(base), **specials)
        cases = []
        for label, messages in CONVERSATIONS.items():
            for gen in (True, False):
                case = {"conversation": label, "add_generation_prompt": gen}
                try:
                    case["prompt"] = tok.apply_chat_template(messages, chat_template=source, tokenize=False,
                                                             add_generation_prompt=gen)
                except Exception as e:  # jinja2's TemplateError: what raise_exception said
                    case["error"] = str(e)
                cases.append(case)
        out[name] = {"specials": specials, "cases": cases}
        print(f"templates/{name}: {sum('prompt' in c for c in cases)} renderings, "
              f"{sum('error' in c for c in cases)} errors")
    (folder / "reference.json").write_text(json.dumps({"conversations": CONVERSATIONS, "templates": out},
                                                      indent=1, ensure_ascii=False) + "\n")


def train_sentencepiece(style, vocab_size=300):
    """A SentencePiece-style BPE (as transformers converts Llama 2, Mistral and
    Gemma): <unk> <s> </s>, the 256 <0xNN> byte tokens, then pieces trained on
    the corpus with \u2581 for spaces; a small alphabet so CJK and emoji fall
    back to bytes."""
    trainer_tok = Tokenizer(models.BPE(unk_token="<unk>"))
    trainer_tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<unk>"], min_frequency=2,
                                  limit_alphabet=70, show_progress=False)
    trainer_tok.train_from_iterator(CORPUS.splitlines(), trainer=trainer)
    trained = json.loads(trainer_tok.to_str())["model"]
    specials = ["<unk>", "<s>", "</s>"] if style != "gemma" else ["<pad>", "<eos>", "<bos>", "<unk>"]
    vocab = {}
    for t in specials + [f"<0x{b:02X}>" for b in range(256)]:
        vocab[t] = len(vocab)
    for piece, _ in sorted(trained["vocab"].items(), key=lambda kv: kv[1]):
        if piece not in vocab:
            vocab[piece] = len(vocab)
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in trained["merges"]]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.add_special_tokens(specials)
    bos = "<bos>" if style == "gemma" else "<s>"
    if style == "llama2":
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
        tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])
    elif style == "mistral-v03":
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
        tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])
    else:  # gemma: spaces replaced, no prefix, nothing stripped
        tok.normalizer = normalizers.Replace(" ", "\u2581")
        tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A $B",
                                                       special_tokens=[(bos, vocab[bos])])
    return tok


def sentencepiece_references():
    folder = ROOT / "sentencepiece"
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for style in ("llama2", "mistral-v03", "gemma"):
        tok = train_sentencepiece(style)
        tok.save(str(folder / f"{style}.json"))
        fast = PreTrainedTokenizerFast(tokenizer_file=str(folder / f"{style}.json"))
        cases = []
        texts = TEXTS + ["<s>[INST] Hi there [/INST] Hello</s>", " two  spaces\nand a\ttab", "\u00e9\u0301 \u0000 bytes"]
        for text in texts:
            ids = tok.encode(text, add_special_tokens=True).ids
            plain = tok.encode(text, add_special_tokens=False).ids
            cases.append({"text": text, "ids": ids, "ids_plain": plain,
                          "decoded": tok.decode(ids, skip_special_tokens=True),
                          "decoded_with_specials": tok.decode(ids, skip_special_tokens=False),
                          "tokens": [tok.id_to_token(i) for i in plain]})
        out[style] = {"vocab_size": tok.get_vocab_size(), "cases": cases}
        # A chat through the family's template, encoded as apply_chat_template(tokenize=True) does.
        template, specials = {"llama2": ("llama-2-chat", {"bos_token": "<s>", "eos_token": "</s>"}),
                              "mistral-v03": ("mistralai-Mistral-Nemo-Instruct-2407",
                                              {"bos_token": "<s>", "eos_token": "</s>"}),
                              "gemma": ("google-gemma-2-2b-it", {"bos_token": "<bos>", "eos_token": "<eos>"})}[style]
        chat_fast = PreTrainedTokenizerFast(tokenizer_file=str(folder / f"{style}.json"), **specials)
        messages = CONVERSATIONS["multi-turn"]
        prompt = chat_fast.apply_chat_template(messages, chat_template=(ROOT / "templates" / f"{template}.jinja")
                                               .read_text(), tokenize=False, add_generation_prompt=True)
        out[style]["chat"] = {"template": template, "specials": specials, "conversation": "multi-turn",
                              "prompt": prompt, "ids": chat_fast.encode(prompt, add_special_tokens=False)}
        print(f"sentencepiece/{style}: vocab {tok.get_vocab_size()}, {len(cases)} cases")
    (folder / "reference.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


# Gemma 3's chat template as google/gemma-3-4b-it and gemma-3-1b-it ship it
# (tokenizer_config.json's chat_template).
GEMMA3_CHAT = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\\n\\n' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>\\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\\n'}}
{%- endif -%}
"""


def build_gemma3(seed=6):
    """gemma3/: a tiny Gemma3ForCausalLM whose sliding window (8 tokens) is
    shorter than its prompts and generations, with a Gemma-style tokenizer and
    Gemma 3's chat template."""
    folder = ROOT / "gemma3"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*"):
        old.unlink()
    tok = train_sentencepiece("gemma")
    tok.add_special_tokens(["<start_of_turn>", "<end_of_turn>"])
    tok.save(str(folder / "tokenizer.json"))
    fast = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"), bos_token="<bos>",
                                   eos_token="<eos>", unk_token="<unk>", pad_token="<pad>")
    fast.chat_template = GEMMA3_CHAT
    fast.save_pretrained(str(folder))
    fast = PreTrainedTokenizerFast.from_pretrained(str(folder))
    vocab = len(fast)
    end_of_turn = fast.convert_tokens_to_ids("<end_of_turn>")
    torch.manual_seed(seed)
    config = Gemma3TextConfig(
        vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
        num_key_value_heads=2, head_dim=32, query_pre_attn_scalar=24, max_position_embeddings=128,
        rms_norm_eps=1e-6, sliding_window=8,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        rope_parameters={"full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1000000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
        final_logit_softcapping=5.0, tie_word_embeddings=True, pad_token_id=0, bos_token_id=2,
        eos_token_id=[1, end_of_turn])
    model = Gemma3ForCausalLM(config)
    perturb(model, seed)
    model.to(torch.bfloat16).save_pretrained(str(folder), safe_serialization=True)
    # The references from the checkpoint as stored, reloaded in float32 (its
    # rotary tables and embedding scale computed afresh, not rounded to bf16).
    model = Gemma3ForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
    rng = random.Random(seed)
    ref = {"architecture": "Gemma3ForCausalLM", "vocab_size": vocab,
           "parameters": sum(p.numel() for p in model.parameters()),
           "generations": references(model, fast, vocab, rng, steps=8),
           "tokenizer": tokenizer_references(fast)}
    messages = CONVERSATIONS["system multi-turn"]
    prompt = fast.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ref["chat"] = {"messages": messages, "prompt": prompt, "ids": fast.encode(prompt, add_special_tokens=False)}
    chats = []
    for label, conversation in CONVERSATIONS.items():
        for gen in (True, False):
            rendered = fast.apply_chat_template(conversation, tokenize=False, add_generation_prompt=gen)
            chats.append({"conversation": label, "messages": conversation, "add_generation_prompt": gen,
                          "prompt": rendered, "ids": fast.encode(rendered, add_special_tokens=False)})
    ref["chats"] = chats
    (folder / "reference.json").write_text(json.dumps(ref, separators=(",", ":"), ensure_ascii=False))
    print(f"gemma3: vocab {vocab}, {ref['parameters']} parameters, files {sorted(p.name for p in folder.iterdir())}")


def main():
    """Builds every fixture, or those named on the command line
    (python3 tools/make_hf_fixtures.py templates sentencepiece llama-custom-chat gemma3)."""
    wanted = set(sys.argv[1:])

    def want(name):
        return not wanted or name in wanted

    # head_dim 32 (not hidden / heads): the explicit head_dim path, and a size
    # the CUDA kernel is built for
    small = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, head_dim=32,
                 max_position_embeddings=128, rms_norm_eps=1e-5)
    if want("llama"):
        build("llama", "llama3", LlamaConfig, LlamaForCausalLM,
              dict(small, num_key_value_heads=2, tie_word_embeddings=False, rope_theta=500000.0,
                   rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 32}), seed=1)
    if want("qwen2"):
        build("qwen2", "qwen2", Qwen2Config, Qwen2ForCausalLM,
              dict(small, num_key_value_heads=1, tie_word_embeddings=True, rope_theta=1000000.0), seed=2)
    if want("mistral"):
        build("mistral", "gpt2", MistralConfig, MistralForCausalLM,
              dict(small, num_key_value_heads=2, tie_word_embeddings=False, sliding_window=None), seed=3,
              shard=True)
    if want("templates"):
        template_references()
    if want("sentencepiece"):
        sentencepiece_references()
    if want("mistral-sentencepiece"):
        build("mistral-sentencepiece", "mistral-v03", MistralConfig, MistralForCausalLM,
              dict(hidden_size=64, intermediate_size=96, num_hidden_layers=1, num_attention_heads=2, head_dim=32,
                   num_key_value_heads=1, max_position_embeddings=128, rms_norm_eps=1e-5,
                   tie_word_embeddings=False, sliding_window=None), seed=5)
    if want("qwen3"):
        build("qwen3", "qwen3", Qwen3Config, Qwen3ForCausalLM,
              dict(small, num_key_value_heads=2, tie_word_embeddings=True, rope_theta=1000000.0,
                   use_sliding_window=False), seed=6)
    if want("qwen3-moe"):
        build("qwen3-moe", "qwen3", Qwen3MoeConfig, Qwen3MoeForCausalLM,
              dict(small, num_hidden_layers=3, num_key_value_heads=2, tie_word_embeddings=False,
                   rope_theta=1000000.0, intermediate_size=96, moe_intermediate_size=48, num_experts=8,
                   num_experts_per_tok=2, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[1],
                   use_sliding_window=False), seed=7)
    if want("llama-custom-chat"):
        build("llama-custom-chat", "custom", LlamaConfig, LlamaForCausalLM,
              dict(hidden_size=64, intermediate_size=96, num_hidden_layers=1, num_attention_heads=2, head_dim=32,
                   num_key_value_heads=1, max_position_embeddings=128, rms_norm_eps=1e-5,
                   tie_word_embeddings=True), seed=4)
    if want("gemma3"):
        build_gemma3()


if __name__ == "__main__":
    main()
