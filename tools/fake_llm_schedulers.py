"""TGI's and SGLang's schedulers for tools/fake_llm_server.py (the --flavour
tgi and sglang ground truths), written from those servers' sources, not
from BatchPilot's models (engine/sched/server_models is neither imported nor
mirrored: the point is an independent truth).

Each is a mixin over the server's own Scheduler thread: it replaces the
step's plan (`_plan`) and the KV bookkeeping, and keeps everything else of
the server's -- the thread, the step cost and its deadline-based sleep, the
token a step makes (a request's prefill ends in its first token, every
decode makes one more), streaming, aborts and the metrics. The contract it
relies on: the base keeps `waiting` (a deque, FCFS) and `running` (a list)
under `cond`, `used_blocks`/`total_blocks`/`block_size` and `_grow`/`_free`
for KV, and calls `_plan()` -> ([(req, tokens, is_decode)], preemptions)
once a step, then `_finish_step(items, end)`; a Req has prompt_tokens,
max_tokens, generated, computed (tokens in its KV), blocks, to_compute
(known - computed), decoding, first_scheduled, finished_at, aborted.
`reject(prompt, max_tokens)` answers (status, message) for a request the
scheduler could never serve, and `log_fields()` adds to a --log-steps line.

TGI (v3 router, non-chunking backend; read: text-generation-inference
backends/v3/src/backend.rs batching_task, backends/v3/src/queue.rs
State::next_batch, backends/v3/src/block_allocator.rs SimpleAllocator,
router/src/infer/mod.rs, router/src/validation.rs):
  - Requests wait in one FCFS queue. With no running batch, a batch is
    formed from the queue (no minimum size) and prefilled.
  - With a running batch, before each decode the router tries a new batch
    (the running batch does not decode during its prefill): it needs at
    least floor(batch size x --waiting-served-ratio) requests, unless the
    running batch has gone --max-waiting-tokens decode steps since its last
    prefill (the counter is 1 after a prefill and grows by one a decode);
    at most --max-batch-size minus the batch's size requests; after such a
    prefill the combined batch decodes once before the next try.
  - A batch takes queue entries in order while each fits, and stops at the
    first that does not: prompt tokens at most --max-batch-prefill-tokens
    (rounded up to a block), and each request's KV allocated up front for
    prompt + max_new_tokens - 1 tokens in --block-size blocks out of
    --max-batch-total-tokens / block size blocks, block 0 reserved (as
    SimpleAllocator does); the blocks are freed when the request ends.
    A batch smaller than its minimum goes back whole.
  - A prefill step prefills whole prompts (no chunking) and makes each new
    request's first token; the new requests then join the running batch;
    a decode step makes one token for every running request.
  - Validation: a prompt above max_input_tokens (max_model_len - 1, or
    --max-batch-prefill-tokens if lower, since TGI requires the latter to
    cover the former) is 422, as is a request whose blocks could never be
    allocated (TGI would queue it forever).
  Left out: prefix caching (the radix allocator), speculation, chunking
  backends (which concatenate prefill and decode and ignore the two
  waiting knobs), padding models (the requires_padding path), the 1024-
  token re-queueing of long generations (router/src/infer/mod.rs), and
  tgi_batch_next_size (observed per step, as the base does).

SGLang (read: sglang python/sglang/srt/managers/scheduler.py
get_next_batch_to_run, get_new_batch_prefill, update_running_batch,
event loop; schedule_policy.py PrefillAdder add_one_req, add_chunked_req,
budget_state; schedule_batch.py check_decode_mem, retract_decode;
global_config.py; v0.4-era code, page rounding as in later versions):
  - Each step is either a prefill (extend) batch or a decode batch; a
    prefill is tried first, and a decode runs when none can be formed.
  - No prefill is tried while the batch is marked full (running requests
    reached --max-running-requests, or the KV estimate ran out), unless a
    chunked request is pending; the mark is cleared when the running batch
    shrinks (a request ends, is retracted, or a chunked one moves on).
    Finished requests stay counted in the running batch until the next
    decode step filters them, as SGLang's running_batch does.
  - A prefill batch: the pending chunked request first (its next chunk),
    then waiting requests FCFS while running + batch < max_running_requests.
    KV estimate: free tokens minus, for each running request,
    min(max_new_tokens - output, 4096) x new_token_ratio; a request is
    admitted if its tokens to compute + min(max_new_tokens - output, 4096)
    are below what is left (else the batch is full), and each admitted one
    charges its whole max_new (a chunk: none). --max-prefill-tokens bounds
    the batch's input (the first request may exceed it), --chunked-prefill-
    size (0/-1: off) the batch's tokens: the request that does not fit is
    cut to what is left (a page multiple) and becomes the one chunked
    request; the rest of its prompt goes first in the next prefill. Budgets
    are charged page-rounded (--block-size is SGLang's page size).
  - new_token_ratio: starts at min(0.7 x --schedule-conservativeness, 1),
    decays by (init - 0.14 x init) / 600 each decode step down to
    0.14 x init, is reset to init whenever a loop turn finds no batch to
    run (the server idle, or a full batch that just emptied: that turn
    costs no step, the next one follows at once).
  - A decode step advances every running request by one token. If the KV
    pool (--max-total-tokens) lacks a page for each request that needs a
    new one, requests are retracted first: fewest output tokens first
    (ties: longest prompt), at least one, until 20 free tokens per
    remaining request or one request is left; they go to the end of the
    queue with their outputs and prefill prompt + outputs again; the ratio
    becomes min(1, (outputs + 20 x n) / sum of max_new_tokens) over the
    remaining n.
  - A request whose prompt + max_new_tokens could never fit the KV pool is
    400 (SGLang clips such a request's max_new_tokens instead).
  Left out: the overlap scheduler (results one step late), mixed chunked
  prefill (--enable-mixed-chunk), the radix cache and cache-aware
  policies, ignore_eos requests' own admission rule (add_one_req_ignore_eos:
  this fake does not read ignore_eos), priorities, LoRA, grammar,
  speculative decoding, disaggregation; a pending chunk that finds no free
  page waits for the next prefill (later SGLang; v0.4 would fail).

Stdlib only.
"""
import math
import time

FLAVOURS = ("tgi", "sglang")

# TGI's defaults (launcher/router).
TGI_MAX_BATCH_PREFILL_TOKENS = 4096
TGI_MAX_BATCH_TOTAL_TOKENS = 16384
TGI_WAITING_SERVED_RATIO = 0.3
TGI_MAX_WAITING_TOKENS = 20

# SGLang's defaults and constants.
SGLANG_CHUNKED_PREFILL_SIZE = 8192
SGLANG_MAX_PREFILL_TOKENS = 16384
SGLANG_CLIP_MAX_NEW_TOKENS = 4096  # SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION
SGLANG_INIT_NEW_TOKEN_RATIO = 0.7
SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR = 0.14
SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS = 600
SGLANG_RETRACT_DECODE_STEPS = 20


# --------------------------------------------------------------------------
# Flags


def add_arguments(ap):
    """The servers' own flags, under their own names (each applies to its flavour only)."""
    t = ap.add_argument_group("tgi flavour (TGI's launcher flags)")
    t.add_argument("--max-batch-prefill-tokens", type=int, default=None,
                   help="prompt tokens of one prefill batch (default %d; --max-num-batched-tokens if given)"
                        % TGI_MAX_BATCH_PREFILL_TOKENS)
    t.add_argument("--max-batch-total-tokens", type=int, default=None,
                   help="KV tokens for all running requests' prompt + max_new_tokens (default --kv-tokens, "
                        "else %d)" % TGI_MAX_BATCH_TOTAL_TOKENS)
    t.add_argument("--max-batch-size", type=int, default=None, help="running batch cap (default --max-num-seqs)")
    t.add_argument("--waiting-served-ratio", type=float, default=TGI_WAITING_SERVED_RATIO)
    t.add_argument("--max-waiting-tokens", type=int, default=TGI_MAX_WAITING_TOKENS)
    s = ap.add_argument_group("sglang flavour (SGLang's server args)")
    s.add_argument("--max-running-requests", type=int, default=None, help="default --max-num-seqs")
    s.add_argument("--chunked-prefill-size", type=int, default=None,
                   help="tokens of one prefill batch, 0/-1: no chunking (default %d; --max-num-batched-tokens "
                        "if given; -1 with --chunked-prefill off)" % SGLANG_CHUNKED_PREFILL_SIZE)
    s.add_argument("--max-prefill-tokens", type=int, default=SGLANG_MAX_PREFILL_TOKENS)
    s.add_argument("--max-total-tokens", type=int, default=None,
                   help="the KV pool in tokens (default --kv-tokens, else unlimited)")
    s.add_argument("--schedule-conservativeness", type=float, default=1.0)


def resolve(cfg, error):
    """Fills the flavour's settings from its flags and the generic ones, and
    sets the generic fields the server publishes (max_num_seqs: the running
    cap; kv_tokens: the KV size; max_input_tokens) to the flavour's values.
    `error(message)` does not return."""
    given_budget = cfg.max_num_batched_tokens is not None
    if not given_budget:
        cfg.max_num_batched_tokens = 1024
    cfg.max_input_tokens = cfg.max_model_len - 1
    if cfg.flavour == "tgi":
        if cfg.max_batch_prefill_tokens is None:
            cfg.max_batch_prefill_tokens = (cfg.max_num_batched_tokens if given_budget
                                            else TGI_MAX_BATCH_PREFILL_TOKENS)
        if cfg.max_batch_total_tokens is None:
            cfg.max_batch_total_tokens = cfg.kv_tokens or TGI_MAX_BATCH_TOTAL_TOKENS
        if cfg.max_batch_size is None:
            cfg.max_batch_size = cfg.max_num_seqs
        if min(cfg.max_batch_prefill_tokens, cfg.max_batch_total_tokens, cfg.max_batch_size) < 1:
            error("--max-batch-prefill-tokens, --max-batch-total-tokens and --max-batch-size must be at least 1")
        if cfg.max_batch_total_tokens < cfg.max_model_len:
            error("--max-batch-total-tokens must be at least --max-model-len (TGI's max_total_tokens)")
        if cfg.waiting_served_ratio < 0 or cfg.max_waiting_tokens < 0:
            error("--waiting-served-ratio and --max-waiting-tokens cannot be negative")
        cfg.max_input_tokens = min(cfg.max_input_tokens, cfg.max_batch_prefill_tokens)
        cfg.max_num_seqs = cfg.max_batch_size
        cfg.kv_tokens = cfg.max_batch_total_tokens
    elif cfg.flavour == "sglang":
        if cfg.max_running_requests is None:
            cfg.max_running_requests = cfg.max_num_seqs
        if cfg.chunked_prefill_size is None:
            if cfg.chunked_prefill in ("off", False):  # the server turns "on"/"off" into a bool after this
                cfg.chunked_prefill_size = -1
            else:
                cfg.chunked_prefill_size = cfg.max_num_batched_tokens if given_budget else SGLANG_CHUNKED_PREFILL_SIZE
        if cfg.chunked_prefill_size <= 0:
            cfg.chunked_prefill_size = -1
        if cfg.max_total_tokens is None:
            cfg.max_total_tokens = cfg.kv_tokens or None
        if cfg.max_running_requests < 1 or cfg.max_prefill_tokens < 1:
            error("--max-running-requests and --max-prefill-tokens must be at least 1")
        if cfg.max_total_tokens is not None and cfg.max_total_tokens < 1:
            error("--max-total-tokens must be at least 1")
        if cfg.schedule_conservativeness < 0:
            error("--schedule-conservativeness cannot be negative")
        cfg.max_num_seqs = cfg.max_running_requests
        cfg.kv_tokens = cfg.max_total_tokens or 0
    return cfg


def make_scheduler(base, cfg, stats, log):
    """The scheduler thread for cfg.flavour: `base` (the server's Scheduler) for vllm."""
    policy = {"tgi": TgiPolicy, "sglang": SglangPolicy}.get(cfg.flavour)
    if policy is None:
        return base(cfg, stats, log)
    cls = type(policy.__name__.replace("Policy", "Scheduler"), (policy, base), {})
    return cls(cfg, stats, log)


def _ceil_div(a, b):
    return -(-a // b)


# --------------------------------------------------------------------------
# TGI


class TgiPolicy:
    """TGI v3's batching task over a non-chunking backend (see the module docstring)."""

    def __init__(self, cfg, stats, log):
        super().__init__(cfg, stats, log)
        # SimpleAllocator: max_batch_total_tokens / block_size blocks, block 0
        # reserved for health checks.
        self.total_blocks = cfg.max_batch_total_tokens // cfg.block_size - 1
        self.waiting_tokens = 0  # decode steps since the running batch's last prefill, + 1
        self.decode_next = False  # a prefill joined the running batch: it decodes before the next try
        self.step_fields = {}

    def reject(self, prompt, max_tokens):
        if prompt > self.cfg.max_input_tokens:
            return 422, "Input validation error: `inputs` tokens must be <= %d. Given: %d" % (
                self.cfg.max_input_tokens, prompt)
        if self._reserve_blocks(prompt, max_tokens) > self.total_blocks:
            return 422, ("Input validation error: `inputs` tokens + `max_new_tokens` need more KV blocks than "
                         "max_batch_total_tokens (%d) holds" % self.cfg.max_batch_total_tokens)
        return None

    def _reserve_blocks(self, prompt, max_tokens):
        return _ceil_div(prompt + max_tokens - 1, self.block_size)

    def _next_batch(self, min_size, max_size, token_budget):
        """queue.rs State::next_batch: the requests of a new prefill batch, their blocks allocated."""
        cfg = self.cfg
        if token_budget <= 0 or not self.waiting:
            return []
        if min_size is not None and len(self.waiting) < min_size:
            return []
        if max_size is not None and max_size <= 0:
            return []
        prefill_budget = _ceil_div(cfg.max_batch_prefill_tokens, self.block_size) * self.block_size
        free = self.total_blocks - self.used_blocks
        batch, prefill, blocks = [], 0, 0
        for r in self.waiting:
            need = self._reserve_blocks(r.prompt_tokens, r.max_tokens)
            if blocks + need > free or prefill + r.prompt_tokens > prefill_budget:
                break
            batch.append((r, need))
            blocks += need
            prefill += r.prompt_tokens
            if max_size is not None and len(batch) == max_size:
                break
        if not batch or (min_size is not None and len(batch) < min_size):
            return []
        now = time.monotonic()
        items = []
        for r, need in batch:
            r.blocks = need
            self.used_blocks += need
            self._start(r, r.to_compute, items, now)
        return items

    def _plan(self):
        cfg = self.cfg
        min_size = None
        if not self.running:
            # No running batch: the outer loop's next_batch(None, max_batch_size, ...).
            items = self._next_batch(None, cfg.max_batch_size, cfg.max_batch_total_tokens)
            self.decode_next = False
        elif not self.decode_next:
            bs = len(self.running)
            if self.waiting_tokens < cfg.max_waiting_tokens:
                min_size = int(math.floor(bs * cfg.waiting_served_ratio))
            max_size = None if cfg.max_batch_size is None else cfg.max_batch_size - bs
            token_budget = cfg.max_batch_total_tokens - self.used_blocks * self.block_size
            items = self._next_batch(min_size, max_size, token_budget)
            self.decode_next = bool(items)
        else:
            items = []
        self.step_fields = {"waiting_tokens": self.waiting_tokens, "min_size": min_size}
        if items:
            self.waiting_tokens = 1
            return items, 0
        self.decode_next = False
        items = [(r, 1, True) for r in self.running if r.decoding]
        if items:
            self.waiting_tokens += 1
        return items, 0

    def _finish_step(self, items, end):
        super()._finish_step(items, end)
        with self.cond:
            reserved = sum(r.blocks for r in self.running) * self.block_size
        with self.stats.lock:
            self.stats.running_reserved_tokens = reserved  # tgi_batch_current_max_tokens: the batch's blocks

    def log_fields(self):
        return dict(self.step_fields, batch_tokens=self.used_blocks * self.block_size)


# --------------------------------------------------------------------------
# SGLang


class SglangPolicy:
    """SGLang's scheduler: prefill-first, chunked prefill, new-token-ratio admission, retraction."""

    def __init__(self, cfg, stats, log):
        super().__init__(cfg, stats, log)
        self.total_blocks = cfg.max_total_tokens // cfg.block_size if cfg.max_total_tokens else None
        self.chunk_size = cfg.chunked_prefill_size if cfg.chunked_prefill_size > 0 else None
        self.init_ratio = min(SGLANG_INIT_NEW_TOKEN_RATIO * cfg.schedule_conservativeness, 1.0)
        self.min_ratio = min(self.init_ratio * SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR, 1.0)
        self.ratio_decay = (self.init_ratio - self.min_ratio) / SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS
        self.new_token_ratio = self.init_ratio
        self.chunked = None  # the request part-way through its prefill
        self.batch_is_full = False
        self.unfiltered = 0  # finished in a decode step, still in the running batch until the next decode
        self.last_kind = None
        self.last_reqs = []
        self.step_fields = {}

    def reject(self, prompt, max_tokens):
        if self.total_blocks is None:
            return None
        if self._ceil_page(prompt + max_tokens) + self.block_size >= self.total_blocks * self.block_size:
            return 400, ("the request (%d prompt + %d max_tokens) cannot fit the KV pool (max_total_num_tokens "
                         "%d)" % (prompt, max_tokens, self.cfg.max_total_tokens))
        return None

    def _ceil_page(self, n):
        return _ceil_div(n, self.block_size) * self.block_size

    def _free_tokens(self):
        if self.total_blocks is None:
            return math.inf
        return (self.total_blocks - self.used_blocks) * self.block_size

    def _max_new(self, r):
        return min(max(r.max_tokens - r.generated, 0), SGLANG_CLIP_MAX_NEW_TOKENS)

    def _merge_last(self):
        """get_next_batch_to_run's head: what the last step left in the running batch."""
        if self.last_kind == "prefill":
            # The chunked request is taken out of the batch, and a request that
            # ended with its prefill is filtered out: either frees a slot.
            if self.chunked is not None or any(r.finished_at is not None for r in self.last_reqs):
                self.batch_is_full = False
        elif self.last_kind == "decode":
            self.unfiltered += sum(1 for r in self.last_reqs if r.finished_at is not None)

    def _prefill(self):
        """get_new_batch_prefill with PrefillAdder: [(req, tokens, False)]."""
        cfg = self.cfg
        if (self.batch_is_full or not self.waiting) and self.chunked is None:
            return []
        running_bs = sum(1 for r in self.running if r is not self.chunked) + self.unfiltered
        if running_bs >= cfg.max_running_requests:
            self.batch_is_full = True
            return []
        page = self.block_size
        rem_total = self._free_tokens() - sum(self._max_new(r) * self.new_token_ratio
                                              for r in self.running if r is not self.chunked)
        rem_input = cfg.max_prefill_tokens
        rem_chunk = self.chunk_size
        items = []

        def charge(n, max_new):
            nonlocal rem_total, rem_input, rem_chunk
            n = self._ceil_page(n)
            rem_total -= n + max_new
            rem_input -= n
            if rem_chunk is not None:
                rem_chunk -= n

        if self.chunked is not None:  # add_chunked_req
            r = self.chunked
            left = r.to_compute
            n = left if rem_chunk is None else min(left, rem_chunk)
            if self.total_blocks is not None:
                room = (self.total_blocks - self.used_blocks) * page + (r.blocks * page - r.computed)
                if n > room:
                    n = room // page * page
            if n > 0 and self._grow(r, r.computed + n):
                truncated = n < left
                charge(n, 0 if truncated else self._max_new(r))
                items.append((r, n, False))
                if not truncated:
                    self.chunked = None
        for r in list(self.waiting):  # add_one_req, FCFS
            if running_bs + len(items) >= cfg.max_running_requests:
                self.batch_is_full = True
                break
            extend = r.to_compute
            max_new = self._max_new(r)
            if self._ceil_page(extend) + max_new >= rem_total:
                self.batch_is_full = True  # NO_TOKEN
                break
            if self._ceil_page(extend) > rem_input and items:
                break
            if rem_chunk is None or self._ceil_page(extend) <= rem_chunk:
                n = extend
                charge(n, max_new)
            else:
                n = rem_chunk // page * page
                if n <= 0 or self.chunked is not None:
                    break
                self.chunked = r
                charge(n, 0)
            if not self._grow(r, r.computed + n):  # not reached: the estimate holds the pages
                if self.chunked is r:
                    self.chunked = None
                break
            self._start(r, n, items)
            # budget_state
            if rem_total <= 0:
                self.batch_is_full = True
                break
            if rem_input <= 0 or (rem_chunk is not None and rem_chunk <= 0):
                break
        return items

    def _decode(self):
        """update_running_batch: filter, check the KV, retract or decay the ratio; [(req, 1, True)], retracted."""
        if self.unfiltered:
            self.unfiltered = 0
            self.batch_is_full = False
        batch = [r for r in self.running if r is not self.chunked and r.decoding]
        if not batch:
            return [], 0
        retracted = 0
        need = sum(self._blocks_for(r.computed + 1) - r.blocks for r in batch)
        if self.total_blocks is not None and self.total_blocks - self.used_blocks < need:
            order = sorted(batch, key=lambda r: (r.generated, -r.prompt_tokens), reverse=True)
            first = True
            while first or self._free_tokens() < SGLANG_RETRACT_DECODE_STEPS * len(order):
                if len(order) == 1:
                    break
                first = False
                victim = order.pop()
                self.running.remove(victim)
                self._free(victim)
                victim.computed = 0
                self.waiting.append(victim)
                retracted += 1
            decoded = sum(r.generated for r in order)
            self.new_token_ratio = min(1.0, (decoded + SGLANG_RETRACT_DECODE_STEPS * len(order)) /
                                       max(1, sum(r.max_tokens for r in order)))
            self.batch_is_full = False
            batch = [r for r in batch if r in order]
        else:
            self.new_token_ratio = max(self.new_token_ratio - self.ratio_decay, self.min_ratio)
        items = []
        for r in batch:
            if self._grow(r, r.computed + 1):  # defensive: a request with no page left skips the step
                items.append((r, 1, True))
        return items, retracted

    def _plan(self):
        self._merge_last()
        items, retracted = self._prefill(), 0
        kind = "prefill"
        if not items:
            items, retracted = self._decode()
            kind = "decode"
        if not items:
            # No batch this turn (say every running request ended while the
            # batch was marked full, and the decode's filter just cleared the
            # mark): the event loop's idle branch resets the ratio, and its
            # next turn, at once and with no forward step, tries again.
            self.new_token_ratio = self.init_ratio
            items, kind = self._prefill(), "prefill"
        self.last_kind = kind if items else None
        self.last_reqs = [r for r, _, _ in items]
        self.step_fields = {"new_token_ratio": round(self.new_token_ratio, 5),
                            "batch_is_full": self.batch_is_full}
        return items, retracted

    def _drop_aborted(self):
        super()._drop_aborted()
        if self.chunked is not None and self.chunked.aborted:
            self.chunked = None

    def _finish_step(self, items, end):
        super()._finish_step(items, end)
        with self.cond:
            if not self.running and not self.waiting:
                self.new_token_ratio = self.init_ratio  # the event loop found nothing to run

    def log_fields(self):
        # Requests part-way through a prefill after the step (admitted, not yet decoding).
        partial = sum(1 for r in self.running if not r.decoding)
        return dict(self.step_fields, partial=partial)
