#!/usr/bin/env python3
"""Talks to a BatchPilot server with the official OpenAI Python client.

    pip install openai
    python3 tools/openai_client_check.py http://127.0.0.1:8321 [--reference FILE] [--max-tokens N]

Lists the models, then for the first one sends a chat completion, the same
chat streamed with usage (stream_options.include_usage), and a text
completion, and prints what came back. With --reference (a fixture's
reference.json from tools/make_hf_fixtures.py) the chat is the reference's
messages and its prompt must count the reference chat template's tokens.
Exits 1 on any mismatch, 2 when the client itself fails, 77 when the
`openai` package is not installed (a test runner's "skipped").
Cost: three requests of --max-tokens new tokens (default 8).
"""
import argparse
import json
import sys
import time

try:
    from openai import OpenAI
except ImportError:
    print("openai_client_check: the 'openai' package is not installed (pip install openai)", file=sys.stderr)
    sys.exit(77)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url", help="the server, e.g. http://127.0.0.1:8321")
    ap.add_argument("--reference", help="a fixture's reference.json (chat messages and their token ids)")
    ap.add_argument("--max-tokens", type=int, default=8)
    args = ap.parse_args()

    client = OpenAI(base_url=args.url.rstrip("/") + "/v1", api_key="unused", max_retries=0, timeout=120)
    messages = [{"role": "system", "content": "You batch requests."},
                {"role": "user", "content": "How large should a batch be?"}]
    expect_prompt = None
    if args.reference:
        with open(args.reference, encoding="utf-8") as f:
            chat = json.load(f)["chat"]
        messages, expect_prompt = chat["messages"], len(chat["ids"])

    failures = []
    models = client.models.list()
    model = models.data[0].id
    print(f"models: {[m.id for m in models.data]}")

    t = time.time()
    r = client.chat.completions.create(model=model, messages=messages, max_tokens=args.max_tokens)
    print(f"chat: {r.usage.prompt_tokens} prompt + {r.usage.completion_tokens} completion tokens, "
          f"finish_reason {r.choices[0].finish_reason}, {time.time() - t:.2f} s: {r.choices[0].message.content!r}")
    if r.usage.completion_tokens != args.max_tokens or r.choices[0].finish_reason != "length":
        failures.append("chat: expected max_tokens tokens and finish_reason 'length'")
    if expect_prompt is not None and r.usage.prompt_tokens != expect_prompt:
        failures.append(f"chat: {r.usage.prompt_tokens} prompt tokens, the reference template has {expect_prompt}")
    text = r.choices[0].message.content

    t = time.time()
    deltas, streamed, usage = 0, "", None
    for chunk in client.chat.completions.create(model=model, messages=messages, max_tokens=args.max_tokens,
                                                stream=True, stream_options={"include_usage": True}):
        if chunk.choices and chunk.choices[0].delta.content:
            deltas += 1
            streamed += chunk.choices[0].delta.content
        if chunk.usage:
            usage = chunk.usage
    print(f"chat, streamed: {deltas} deltas, usage {usage.prompt_tokens} + {usage.completion_tokens}, "
          f"{time.time() - t:.2f} s: {streamed!r}")
    if streamed != text:
        failures.append("chat, streamed: the deltas do not join to the non-streamed answer")
    if usage is None or usage.completion_tokens != args.max_tokens or usage.prompt_tokens != r.usage.prompt_tokens:
        failures.append("chat, streamed: the usage chunk does not match the non-streamed answer")

    c = client.completions.create(model=model, prompt="Hello, batching world!", max_tokens=args.max_tokens)
    print(f"completion: {c.usage.prompt_tokens} prompt + {c.usage.completion_tokens} completion tokens: "
          f"{c.choices[0].text!r}")
    if c.usage.completion_tokens != args.max_tokens:
        failures.append("completion: expected max_tokens tokens")

    for f in failures:
        print("MISMATCH " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # the client's own errors: connection, HTTP status, parsing
        print(f"openai_client_check: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(2)
