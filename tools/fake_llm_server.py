#!/usr/bin/env python3
"""A fake LLM server whose scheduler and step cost are known exactly: the
tests' ground truth for BatchPilot's remote calibration, scraping and
tuning.

It serves, over HTTP on 127.0.0.1, the surface and the Prometheus metric
names of vLLM, TGI or SGLang (--flavour), but computes nothing: one
scheduler thread runs iteration-level continuous batching and sleeps for
each step's cost on the wall clock, then sends the tokens that step made.
Its scheduler is written here from the servers' published semantics (vLLM
V1's: running requests first, then waiting ones FCFS, one token budget per
step shared by decodes and prefill chunks); it neither imports nor mirrors
BatchPilot's engine/sched/server_models, so that a test against it proves
something about BatchPilot's models rather than comparing them with
themselves.

    python3 tools/fake_llm_server.py --port 0 --flavour vllm
    -> "listening on http://127.0.0.1:PORT" (the first line on stdout)

The step. Each step, on one thread:
  1. decodes: every running request whose prompt is prefilled gets one
     token (1 from the token budget each), in the order they joined;
  2. prefill chunks: running requests part-way through their prompt, then
     waiting ones FCFS, each a chunk of at most what is left of the budget
     (with --chunked-prefill off, only whole prompts that fit; the queue's
     head that does not fit waits, nothing overtakes it), while fewer than
     --max-num-seqs requests run;
  3. the step costs
        --step-ms + --prefill-us-per-token x prefill tokens
                  + --decode-us-per-seq x decodes
     and the thread sleeps until a deadline on the monotonic clock (steps
     back to back: each deadline is the last one plus the cost, so time
     lost to the interpreter is caught up, not accumulated; a step more
     than 50 ms late starts the schedule again from now, and is logged);
  4. when the step ends, each request it fed makes its token: the step
     that completes a prompt's prefill makes the first output token (the
     prompt counts as prefill; a 1-token prompt too), every decode one
     more. A streamed request's token is written to its connection then.
     A request ends after exactly max_tokens tokens (the server ignores
     EOS: there is none). A client that hangs up is aborted.
  KV (--kv-tokens, default unlimited): blocks of --block-size tokens; a
  request holds the blocks of the tokens computed for it. A waiting
  request is admitted only if its chunk's blocks are free; a running one
  that needs a block when none is free preempts the last-joined running
  request (recompute: it goes back to the head of the queue and prefills
  its prompt and its tokens so far again), as vLLM V1 does.

Tokens. A prompt of token ids (a list of ints) has that many tokens. A text
prompt has one token per whitespace-separated word (at least 1): this is
what BatchPilot's openai-chat client assumes of a server whose tokenizer it
does not know (it sends one word, "k ", per trace token), so its input
counts agree with usage.prompt_tokens. A chat prompt counts the words of
every message's content (no template tokens). Each output token is " a".

Flavours (what BatchPilot reads of each: engine/telemetry/target_metrics.*,
app/remote/settings_fetch.cpp, engine/sim/remote_settings.*):
  all     GET /health, GET /v1/models, POST /v1/completions and
          /v1/chat/completions (stream or not; stream_options.include_usage;
          max_tokens, max_completion_tokens; n must be 1), GET /metrics
  vllm    /v1/models carries max_model_len; a model name other than --model
          is 404. Metrics (labels model_name, engine="0"):
          vllm:num_requests_running, vllm:num_requests_waiting,
          vllm:kv_cache_usage_perc and vllm:gpu_cache_usage_perc (with
          --kv-tokens), vllm:prompt_tokens_total, vllm:generation_tokens_total,
          vllm:request_success_total{finished_reason="length"},
          vllm:num_preemptions_total, vllm:prefix_cache_queries_total and
          _hits_total (no prefix cache: hits 0), and the histograms
          vllm:iteration_tokens_total, vllm:time_to_first_token_seconds,
          vllm:time_per_output_token_seconds, vllm:inter_token_latency_seconds,
          vllm:e2e_request_latency_seconds, vllm:request_queue_time_seconds,
          vllm:request_prompt_tokens, vllm:request_generation_tokens.
          Settings: vllm:cache_config_info (labels block_size, num_gpu_blocks,
          ...), as vLLM publishes them; vLLM publishes neither max_num_seqs nor
          max_num_batched_tokens, and neither does this.
  tgi     GET /info (TGI 2.2's shape: max_batch_size = --max-batch-size,
          max_batch_total_tokens = --max-batch-total-tokens, max_total_tokens =
          --max-model-len, max_concurrent_requests, waiting_served_ratio,
          max_waiting_tokens). Past --max-concurrent-requests a request gets
          429. /v1/completions takes text prompts only, as TGI's does (a list
          of token ids is 422). Metrics: tgi_queue_size,
          tgi_batch_current_size, tgi_batch_current_max_tokens,
          tgi_batch_max_total_tokens, tgi_request_count,
          tgi_request_success, tgi_batch_inference_count{method}, and the
          histograms tgi_request_input_length, tgi_request_generated_tokens,
          tgi_request_duration, tgi_request_queue_duration,
          tgi_request_mean_time_per_token_duration, tgi_batch_next_size.
  sglang  GET /get_server_info and /server_info (max_running_requests,
          chunked_prefill_size, max_prefill_tokens, max_total_num_tokens,
          context_length, ...), GET /get_model_info. Metrics (label
          model_name): sglang:num_running_reqs, sglang:num_queue_reqs,
          sglang:token_usage and sglang:num_used_tokens (with a KV pool),
          sglang:gen_throughput, sglang:cache_hit_rate (0),
          sglang:prompt_tokens_total, sglang:generation_tokens_total,
          sglang:num_requests_total, and the histograms
          sglang:time_to_first_token_seconds, sglang:inter_token_latency_seconds,
          sglang:e2e_request_latency_seconds.
  The vllm flavour runs the scheduler above; tgi and sglang run their own
  (tools/fake_llm_schedulers.py: TGI v3's prefill-alone batches with its
  waiting_served_ratio / max_waiting_tokens / block budgets, SGLang's
  prefill-first steps with chunked prefill, new-token-ratio admission and
  retraction), with the same step cost. "running" is every admitted
  request (holding KV, prefilling or decoding), "waiting" the rest.
  --hide-settings publishes no scheduler settings: no cache_config_info,
  TGI's /info without the batching fields (TGI 2.3+'s shape) and no
  tgi_batch_max_total_tokens, no SGLang server info (404).

Flags: --port N (0: a free one), --flavour vllm|tgi|sglang, --model NAME
(fake-llm), --max-num-seqs (16), --max-num-batched-tokens (1024),
--chunked-prefill on|off (on), --kv-tokens N (unlimited), --block-size (16),
--max-model-len (4096), --step-ms (4), --prefill-us-per-token (20),
--decode-us-per-seq (60), --max-concurrent-requests (TGI; 128),
--hide-settings, --log-steps FILE (one JSON line per step: start and end in
seconds since the server started, kind (prefill, decode or mixed), prefill
tokens and sequences, decodes, running and waiting after the step, cost and
lateness in ms, preemptions, and the flavour scheduler's own fields).
TGI's and SGLang's own flags (--max-batch-prefill-tokens,
--max-batch-total-tokens, --max-batch-size, --waiting-served-ratio,
--max-waiting-tokens; --max-running-requests, --chunked-prefill-size,
--max-prefill-tokens, --max-total-tokens, --schedule-conservativeness) are
described in tools/fake_llm_schedulers.py; the generic ones map onto them
when they are not given.
--log-requests FILE (each POST request's body as one JSON line, as it came:
what the client asked of the server).

Exits 0 on SIGTERM or SIGINT. Python 3.11 standard library only.
"""
import argparse
import collections
import json
import math
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import fake_llm_schedulers

TOKEN_TEXT = " a"
MAX_LAG_S = 0.050  # a step later than this restarts the schedule from now


# --------------------------------------------------------------------------
# Metrics


class Histogram:
    def __init__(self, buckets):
        self.buckets = list(buckets)
        self.counts = [0] * len(self.buckets)
        self.count = 0
        self.sum = 0.0

    def observe(self, v):
        self.count += 1
        self.sum += v
        for i, edge in enumerate(self.buckets):
            if v <= edge:
                self.counts[i] += 1


LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                   20.0, 40.0, 80.0]
ITL_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3,
               0.4, 0.5, 0.75, 1.0, 2.5]
# vLLM's iteration-token buckets when it captures no CUDA graphs.
ITERATION_BUCKETS = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
LENGTH_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000]


class Stats:
    """Everything /metrics shows; changed by the scheduler under `lock`."""

    def __init__(self):
        self.lock = threading.Lock()
        self.running = 0
        self.waiting = 0
        self.kv_used_blocks = 0
        self.running_reserved_tokens = 0  # TGI: prompt + max_tokens of the running batch
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.requests_received = 0
        self.requests_success = 0
        self.preemptions = 0
        self.steps_prefill = 0  # steps with a prefill chunk
        self.steps_decode = 0  # steps of decodes only
        self.iteration_tokens = Histogram(ITERATION_BUCKETS)
        self.batch_next_size = Histogram([1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
        self.ttft = Histogram(LATENCY_BUCKETS)
        self.itl = Histogram(ITL_BUCKETS)
        self.tpot = Histogram(ITL_BUCKETS)
        self.e2e = Histogram(LATENCY_BUCKETS)
        self.queue_time = Histogram(LATENCY_BUCKETS)
        self.prompt_len = Histogram(LENGTH_BUCKETS)
        self.gen_len = Histogram(LENGTH_BUCKETS)
        self.recent_tokens = collections.deque()  # (time, tokens) of the last 10 s, for gen_throughput


def _labels(base, extra=None):
    items = dict(base)
    if extra:
        items.update(extra)
    if not items:
        return ""
    return "{" + ",".join('%s="%s"' % (k, str(v).replace("\\", "\\\\").replace('"', '\\"'))
                          for k, v in items.items()) + "}"


def _num(v):
    if isinstance(v, float):
        if math.isinf(v):
            return "+Inf" if v > 0 else "-Inf"
        return repr(v)
    return "%d.0" % v if isinstance(v, int) else str(v)


class Exposition:
    def __init__(self, labels):
        self.base = labels
        self.lines = []

    def family(self, name, kind, help_text):
        self.lines.append("# HELP %s %s" % (name, help_text))
        self.lines.append("# TYPE %s %s" % (name, kind))

    def gauge(self, name, value, help_text, extra=None):
        self.family(name, "gauge", help_text)
        self.sample(name, value, extra)

    def counter(self, name, value, help_text, extra=None):
        # prometheus_client names a counter's family with its _total.
        self.family(name, "counter", help_text)
        self.sample(name, value, extra)

    def sample(self, name, value, extra=None):
        self.lines.append("%s%s %s" % (name, _labels(self.base, extra), _num(value)))

    def histogram(self, name, h, help_text, extra=None):
        self.family(name, "histogram", help_text)
        for edge, count in zip(h.buckets, h.counts):
            e = dict(extra or {})
            e["le"] = _num(float(edge))
            self.sample(name + "_bucket", count, e)
        e = dict(extra or {})
        e["le"] = "+Inf"
        self.sample(name + "_bucket", h.count, e)
        self.sample(name + "_count", h.count, extra)
        self.sample(name + "_sum", float(h.sum), extra)

    def text(self):
        return "\n".join(self.lines) + "\n"


# --------------------------------------------------------------------------
# The scheduler


class Req:
    _ids = iter(range(1, 1 << 62))

    def __init__(self, prompt_tokens, max_tokens, emit):
        self.id = next(Req._ids)
        self.prompt_tokens = prompt_tokens
        self.max_tokens = max_tokens
        self.emit = emit  # emit(index, last) in the scheduler thread when a token is made; False: client gone
        self.arrival = time.monotonic()
        self.generated = 0
        self.computed = 0  # tokens in the KV cache (prompt, then outputs fed back)
        self.blocks = 0
        self.first_scheduled = None
        self.token_times = []
        self.finished_at = None
        self.aborted = False
        self.done = threading.Event()

    @property
    def known_tokens(self):
        """Prompt plus every output token made so far: what must be computed before the next token."""
        return self.prompt_tokens + self.generated

    @property
    def to_compute(self):
        return self.known_tokens - self.computed

    @property
    def decoding(self):
        return self.generated > 0 and self.to_compute == 1


class Scheduler(threading.Thread):
    def __init__(self, cfg, stats, log):
        super().__init__(name="scheduler", daemon=True)
        self.cfg = cfg
        self.stats = stats
        self.log = log
        self.cond = threading.Condition()
        self.waiting = collections.deque()
        self.running = []  # in the order they joined
        self.stopping = False
        self.epoch = time.monotonic()
        self.block_size = cfg.block_size
        self.total_blocks = cfg.kv_tokens // cfg.block_size if cfg.kv_tokens else None
        self.used_blocks = 0

    # Called from the HTTP threads.
    def submit(self, req):
        with self.cond:
            self.waiting.append(req)
            with self.stats.lock:
                self.stats.requests_received += 1
                self.stats.waiting = len(self.waiting)
            self.cond.notify()

    def abort(self, req):
        with self.cond:
            req.aborted = True
            self.cond.notify()

    def stop(self):
        with self.cond:
            self.stopping = True
            self.cond.notify()

    def reject(self, prompt, max_tokens):
        """(status, message) for a request this scheduler could never serve; None: it can."""
        return None

    def log_fields(self):
        """More fields for this step's --log-steps line."""
        return {}

    def in_flight(self):
        with self.cond:
            return len(self.waiting) + len(self.running)

    # KV blocks.
    def _blocks_for(self, tokens):
        return -(-tokens // self.block_size)

    def _grow(self, req, tokens_after):
        """Allocates blocks for `tokens_after` computed tokens; False when they are not free."""
        need = self._blocks_for(tokens_after) - req.blocks
        if need <= 0:
            return True
        if self.total_blocks is not None and self.used_blocks + need > self.total_blocks:
            return False
        self.used_blocks += need
        req.blocks += need
        return True

    def _free(self, req):
        self.used_blocks -= req.blocks
        req.blocks = 0

    def _preempt_last(self):
        victim = self.running.pop()
        self._free(victim)
        victim.computed = 0
        self.waiting.appendleft(victim)
        return victim

    def _drop_aborted(self):
        for r in [r for r in self.running if r.aborted]:
            self.running.remove(r)
            self._free(r)
            r.done.set()
        if any(r.aborted for r in self.waiting):
            for r in [r for r in self.waiting if r.aborted]:
                self.waiting.remove(r)
                r.done.set()

    def _plan(self):
        """The step's items [(req, tokens, is_decode)] and its preemptions, under self.cond."""
        cfg = self.cfg
        budget = cfg.max_num_batched_tokens
        items = []
        preempted = 0
        scheduled = set()
        # 1. decodes, then 2a. running requests part-way through a prefill, in the order they joined.
        for phase in ("decode", "prefill"):
            i = 0
            while i < len(self.running) and budget > 0:
                r = self.running[i]
                if r.id in scheduled or (phase == "decode") != r.decoding:
                    i += 1
                    continue
                n = r.to_compute
                if phase == "prefill":
                    if not cfg.chunked_prefill and n > budget:
                        i += 1
                        continue
                    n = min(n, budget)
                while not self._grow(r, r.computed + n):
                    victim = self._preempt_last()
                    preempted += 1
                    if victim.id in scheduled:  # already in this step: taken out again
                        for k, (q, m, _) in enumerate(items):
                            if q is victim:
                                budget += m
                                del items[k]
                                break
                        scheduled.discard(victim.id)
                    if victim is r:
                        break
                if r not in self.running:
                    # it preempted itself: nothing else can be made room for
                    break
                items.append((r, n, phase == "decode"))
                scheduled.add(r.id)
                budget -= n
                i += 1
        # 2b. waiting requests, FCFS, while fewer than max_num_seqs run.
        while self.waiting and budget > 0 and len(self.running) < cfg.max_num_seqs:
            r = self.waiting[0]
            n = r.to_compute
            if not cfg.chunked_prefill and n > budget:
                break
            n = min(n, budget)
            if not self._grow(r, r.computed + n):
                break
            self._start(r, n, items)
            budget -= n
        return items, preempted

    def _start(self, r, n, items, now=None):
        """The waiting queue's front `r` joins the running set and feeds `n` tokens this step."""
        self.waiting.popleft()
        self.running.append(r)
        if r.first_scheduled is None:
            r.first_scheduled = now if now is not None else time.monotonic()
        items.append((r, n, False))

    def run(self):
        deadline = None  # the last step's end; None: idle since
        while True:
            with self.cond:
                self._drop_aborted()
                while not self.stopping and not self.running and not self.waiting:
                    deadline = None
                    if self.log:
                        self.log.flush()
                    with self.stats.lock:
                        self.stats.running = 0
                        self.stats.waiting = 0
                        self.stats.kv_used_blocks = self.used_blocks
                        self.stats.running_reserved_tokens = 0
                    self.cond.wait()
                    self._drop_aborted()
                if self.stopping:
                    return
                items, preempted = self._plan()
            now = time.monotonic()
            late = 0.0
            if deadline is None:
                start = now
            elif now - deadline > MAX_LAG_S:
                late = now - deadline
                start = now
            else:
                start = deadline
            prefill_tokens = sum(n for _, n, d in items if not d)
            prefill_seqs = sum(1 for _, _, d in items if not d)
            decodes = sum(1 for _, _, d in items if d)
            cost = (self.cfg.step_ms * 1e-3 + self.cfg.prefill_us_per_token * 1e-6 * prefill_tokens +
                    self.cfg.decode_us_per_seq * 1e-6 * decodes)
            deadline = start + cost
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                time.sleep(left)
            end = time.monotonic()
            self._finish_step(items, end)
            with self.cond:
                running, waiting = len(self.running), len(self.waiting)
            if self.log:
                kind = ("mixed" if prefill_seqs and decodes else "prefill" if prefill_seqs
                        else "decode" if decodes else "empty")
                self.log.write(json.dumps({
                    "start": round(start - self.epoch, 6), "end": round(end - self.epoch, 6), "kind": kind,
                    "prefill_tokens": prefill_tokens, "prefill_seqs": prefill_seqs, "decodes": decodes,
                    "running": running, "waiting": waiting, "cost_ms": round(cost * 1e3, 4),
                    "late_ms": round(late * 1e3, 3), "preempted": preempted,
                    "kv_used_blocks": self.used_blocks, **self.log_fields()}) + "\n")
            with self.stats.lock:
                self.stats.preemptions += preempted
                self.stats.iteration_tokens.observe(prefill_tokens + decodes)
                self.stats.batch_next_size.observe(len(items))
                if prefill_seqs:
                    self.stats.steps_prefill += 1
                else:
                    self.stats.steps_decode += 1

    def _finish_step(self, items, end):
        made = []  # (req, index, last)
        finished = []
        with self.cond:
            for r, n, _ in items:
                if r.aborted or r not in self.running:
                    continue
                r.computed += n
                if r.computed < r.known_tokens:
                    continue  # a prefill chunk that did not finish the prompt
                r.generated += 1
                r.token_times.append(end)
                last = r.generated >= r.max_tokens
                made.append((r, r.generated - 1, last))
                if last:
                    self.running.remove(r)
                    self._free(r)
                    r.finished_at = end
                    finished.append(r)
            running, waiting = len(self.running), len(self.waiting)
            reserved = sum(r.prompt_tokens + r.max_tokens for r in self.running)
            used = self.used_blocks
        # The tokens go out as the step ends, from this thread: no other
        # thread's wake-up stands between the step and its tokens.
        for r, index, last in made:
            if not r.aborted and not r.emit(index, last):
                self.abort(r)
        with self.stats.lock:
            s = self.stats
            s.running, s.waiting, s.kv_used_blocks, s.running_reserved_tokens = running, waiting, used, reserved
            s.generation_tokens += len(made)
            s.recent_tokens.append((end, len(made)))
            while s.recent_tokens and s.recent_tokens[0][0] < end - 10:
                s.recent_tokens.popleft()
            for r, index, _ in made:
                if index == 0:
                    s.prompt_tokens += r.prompt_tokens
                    s.ttft.observe(end - r.arrival)
                    s.queue_time.observe((r.first_scheduled or end) - r.arrival)
                else:
                    s.itl.observe(r.token_times[index] - r.token_times[index - 1])
            for r in finished:
                s.requests_success += 1
                s.e2e.observe(end - r.arrival)
                s.prompt_len.observe(r.prompt_tokens)
                s.gen_len.observe(r.generated)
                if r.generated > 1:
                    s.tpot.observe((r.token_times[-1] - r.token_times[0]) / (r.generated - 1))
        for r in finished:
            r.done.set()


# --------------------------------------------------------------------------
# Flavours: metrics and settings


def kv_usage(cfg, stats):
    return stats.kv_used_blocks / (cfg.kv_tokens // cfg.block_size)


def vllm_metrics(cfg, s):
    e = Exposition({"model_name": cfg.model, "engine": "0"})
    e.gauge("vllm:num_requests_running", s.running, "Number of requests in model execution batches.")
    e.gauge("vllm:num_requests_waiting", s.waiting, "Number of requests waiting to be processed.")
    if cfg.kv_tokens:
        u = kv_usage(cfg, s)
        e.gauge("vllm:kv_cache_usage_perc", u, "KV-cache usage. 1 means 100 percent usage.")
        e.gauge("vllm:gpu_cache_usage_perc", u, "GPU KV-cache usage. 1 means 100 percent usage.")
    e.counter("vllm:num_preemptions_total", s.preemptions, "Cumulative number of preemption from the engine.")
    e.counter("vllm:prefix_cache_queries_total", s.prompt_tokens,
              "Prefix cache queries, in terms of number of queried tokens.")
    e.counter("vllm:prefix_cache_hits_total", 0, "Prefix cache hits, in terms of number of cached tokens.")
    e.counter("vllm:prompt_tokens_total", s.prompt_tokens, "Number of prefill tokens processed.")
    e.counter("vllm:generation_tokens_total", s.generation_tokens, "Number of generation tokens processed.")
    e.family("vllm:request_success_total", "counter", "Count of successfully processed requests.")
    for reason in ("stop", "length", "abort"):
        e.sample("vllm:request_success_total", s.requests_success if reason == "length" else 0,
                 {"finished_reason": reason})
    e.histogram("vllm:request_prompt_tokens", s.prompt_len, "Number of prefill tokens processed.")
    e.histogram("vllm:request_generation_tokens", s.gen_len, "Number of generation tokens processed.")
    e.histogram("vllm:iteration_tokens_total", s.iteration_tokens, "Histogram of number of tokens per engine_step.")
    e.histogram("vllm:time_to_first_token_seconds", s.ttft, "Histogram of time to first token in seconds.")
    e.histogram("vllm:time_per_output_token_seconds", s.itl, "Histogram of time per output token in seconds.")
    e.histogram("vllm:inter_token_latency_seconds", s.itl, "Histogram of inter-token latency in seconds.")
    e.histogram("vllm:e2e_request_latency_seconds", s.e2e, "Histogram of e2e request latency in seconds.")
    e.histogram("vllm:request_queue_time_seconds", s.queue_time,
                "Histogram of time spent in WAITING phase for request.")
    if not cfg.hide_settings:
        blocks = str(cfg.kv_tokens // cfg.block_size) if cfg.kv_tokens else "None"
        info = Exposition({})
        info.gauge("vllm:cache_config_info", 1.0, "Information of the LLMEngine CacheConfig", {
            "block_size": str(cfg.block_size), "cache_dtype": "auto", "calculate_kv_scales": "False",
            "cpu_offload_gb": "0", "enable_prefix_caching": "False", "engine": "0",
            "gpu_memory_utilization": "0.9", "is_attention_free": "False", "num_cpu_blocks": "None",
            "num_gpu_blocks": blocks, "num_gpu_blocks_override": "None", "sliding_window": "None",
            "swap_space": "4"})
        e.lines += info.lines
    return e.text()


def tgi_metrics(cfg, s):
    e = Exposition({})
    e.gauge("tgi_queue_size", s.waiting, "Current queue size")
    e.gauge("tgi_batch_current_size", s.running, "Current batch size")
    e.gauge("tgi_batch_current_max_tokens", s.running_reserved_tokens, "Maximum tokens for the current batch")
    if cfg.kv_tokens and not cfg.hide_settings:
        e.gauge("tgi_batch_max_total_tokens", cfg.kv_tokens, "Maximum total tokens of a batch")
    e.counter("tgi_request_count", s.requests_received, "Total number of requests")
    e.counter("tgi_request_success", s.requests_success, "Number of successful requests")
    e.family("tgi_batch_inference_count", "counter", "Inference calls per method (prefill or decode)")
    e.sample("tgi_batch_inference_count", s.steps_prefill, {"method": "prefill"})
    e.sample("tgi_batch_inference_count", s.steps_decode, {"method": "decode"})
    e.histogram("tgi_request_input_length", s.prompt_len, "Input token length per request")
    e.histogram("tgi_request_generated_tokens", s.gen_len, "Generated tokens per request")
    e.histogram("tgi_request_duration", s.e2e, "Total time spent processing the request (e2e latency)")
    e.histogram("tgi_request_queue_duration", s.queue_time, "Time spent in the queue per request")
    e.histogram("tgi_request_mean_time_per_token_duration", s.tpot, "Mean time per token per request")
    e.histogram("tgi_batch_next_size", s.batch_next_size, "Batch size of the next batch")
    return e.text()


def sglang_metrics(cfg, s):
    e = Exposition({"model_name": cfg.model})
    e.gauge("sglang:num_running_reqs", s.running, "The number of running requests.")
    e.gauge("sglang:num_queue_reqs", s.waiting, "The number of requests in the waiting queue.")
    if cfg.kv_tokens:
        e.gauge("sglang:num_used_tokens", s.kv_used_blocks * cfg.block_size, "The number of used tokens.")
        e.gauge("sglang:token_usage", kv_usage(cfg, s), "The token usage.")
    window = sum(n for _, n in s.recent_tokens)
    span = (s.recent_tokens[-1][0] - s.recent_tokens[0][0]) if len(s.recent_tokens) > 1 else 0
    e.gauge("sglang:gen_throughput", window / span if span > 0 else 0.0, "The generation throughput (token/s).")
    e.gauge("sglang:cache_hit_rate", 0.0, "The prefix cache hit rate.")
    e.counter("sglang:prompt_tokens_total", s.prompt_tokens, "Number of prefill tokens processed.")
    e.counter("sglang:generation_tokens_total", s.generation_tokens, "Number of generation tokens processed.")
    e.counter("sglang:num_requests_total", s.requests_success, "Number of requests processed.")
    e.histogram("sglang:time_to_first_token_seconds", s.ttft, "Histogram of time to first token in seconds.")
    e.histogram("sglang:inter_token_latency_seconds", s.itl, "Histogram of inter-token latency in seconds.")
    e.histogram("sglang:e2e_request_latency_seconds", s.e2e, "Histogram of E2E request latency in seconds.")
    return e.text()


def tgi_info(cfg):
    info = {
        "model_id": cfg.model, "model_sha": None, "model_pipeline_tag": "text-generation",
        "max_concurrent_requests": cfg.max_concurrent_requests, "max_best_of": 2, "max_stop_sequences": 4,
        "max_input_tokens": cfg.max_input_tokens, "max_total_tokens": cfg.max_model_len,
        "validation_workers": 2, "max_client_batch_size": 4, "router": "text-generation-router",
        "version": "2.2.0", "sha": None, "docker_label": None,
    }
    if not cfg.hide_settings:
        # TGI 2.2 and older also list its batching settings.
        info.update({"model_dtype": "torch.float16", "model_device_type": "cuda",
                     "waiting_served_ratio": cfg.waiting_served_ratio, "max_waiting_tokens": cfg.max_waiting_tokens,
                     "max_batch_size": cfg.max_num_seqs})
        if cfg.kv_tokens:
            info["max_batch_total_tokens"] = cfg.kv_tokens
    return info


def sglang_server_info(cfg):
    return {
        "model_path": cfg.model, "tokenizer_path": cfg.model, "served_model_name": cfg.model,
        "host": "127.0.0.1", "port": cfg.port, "context_length": cfg.max_model_len,
        "max_running_requests": cfg.max_num_seqs, "max_prefill_tokens": cfg.max_prefill_tokens,
        "chunked_prefill_size": cfg.chunked_prefill_size, "max_total_tokens": cfg.kv_tokens,
        "max_total_num_tokens": cfg.kv_tokens, "page_size": cfg.block_size, "schedule_policy": "fcfs",
        "schedule_conservativeness": cfg.schedule_conservativeness, "enable_mixed_chunk": False,
        "disable_radix_cache": True,
        "enable_metrics": True, "version": "0.4.0",
    }


# --------------------------------------------------------------------------
# HTTP


class BadRequest(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def words(text):
    return len(text.split())


def count_prompt(prompt, flavour):
    """Tokens of a completions prompt: token ids, or one per word of text."""
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (list, str)):
        prompt = prompt[0]  # a batch of one
    if isinstance(prompt, str):
        return max(1, words(prompt))
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
        if flavour == "tgi":
            # TGI's CompletionRequest takes a string or strings (router/src/lib.rs Prompt).
            raise BadRequest(422, "Failed to deserialize the JSON body into the target type: prompt: data did "
                                  "not match any variant of untagged enum PromptDeserializer")
        return len(prompt)
    raise BadRequest(400, "prompt must be a string, a list of token ids, or a batch of one of them")


def count_chat(messages):
    if not isinstance(messages, list) or not messages:
        raise BadRequest(400, "messages must be a non-empty list")
    n = 0
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, str):
            n += words(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    n += words(part["text"])
    return max(1, n)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-llm-server/1"

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt, *args):
        pass

    @property
    def cfg(self):
        return self.server.cfg

    # Writing.
    def send_body(self, status, body, content_type="application/json"):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def send_error_json(self, status, message):
        f = self.cfg.flavour
        if f == "tgi":
            if status == 400:
                status = 422  # TGI answers a request it does not validate with 422
            if status == 422 and message.startswith("Failed to deserialize"):
                return self.send_body(status, message, "text/plain; charset=utf-8")
            kind = {429: "overloaded", 404: "not_found"}.get(status, "validation")
            return self.send_body(status, {"error": message, "error_type": kind})
        kind = {400: "BadRequestError", 404: "NotFoundError"}.get(status, "InternalServerError")
        self.send_body(status, {"error": {"message": message, "type": kind, "param": None, "code": status}})

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    # Routing.
    def do_GET(self):
        path = self.path.split("?", 1)[0]
        cfg = self.cfg
        if path == "/health":
            return self.send_body(200, b"", "application/json")
        if path == "/metrics":
            render = {"vllm": vllm_metrics, "tgi": tgi_metrics, "sglang": sglang_metrics}[cfg.flavour]
            with self.server.stats.lock:
                text = render(cfg, self.server.stats)
            return self.send_body(200, text, "text/plain; version=0.0.4; charset=utf-8")
        if path == "/v1/models":
            card = {"id": cfg.model, "object": "model", "created": int(self.server.started),
                    "owned_by": {"vllm": "vllm", "sglang": "sglang"}.get(cfg.flavour, cfg.model)}
            if cfg.flavour in ("vllm", "sglang"):
                card.update({"root": cfg.model, "parent": None, "max_model_len": cfg.max_model_len})
            return self.send_body(200, {"object": "list", "data": [card]})
        if cfg.flavour == "tgi" and path == "/info":
            return self.send_body(200, tgi_info(cfg))
        if cfg.flavour == "sglang" and path in ("/get_server_info", "/server_info") and not cfg.hide_settings:
            return self.send_body(200, sglang_server_info(cfg))
        if cfg.flavour == "sglang" and path == "/get_model_info":
            return self.send_body(200, {"model_path": cfg.model, "tokenizer_path": cfg.model,
                                        "is_generation": True})
        return self.send_error_json(404, "Not Found")

    def do_POST(self):
        path = self.path.split("?", 1)[0]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.server.request_log is not None:
            self.log_request_body(raw)
        if path not in ("/v1/completions", "/v1/chat/completions"):
            return self.send_error_json(404, "Not Found")
        try:
            body = json.loads(raw or b"null")
            if not isinstance(body, dict):
                raise BadRequest(400, "the body must be a JSON object")
            self.generate(body, chat=path == "/v1/chat/completions")
        except BadRequest as e:
            self.send_error_json(e.status, e.message)
        except json.JSONDecodeError as e:
            self.send_error_json(400, "invalid JSON: %s" % e)

    def log_request_body(self, raw):
        """--log-requests: the body as one JSON line (a body that is no JSON as a JSON string)."""
        try:
            line = json.dumps(json.loads(raw), separators=(",", ":"))
        except ValueError:
            line = json.dumps(raw.decode("utf-8", "replace"))
        with self.server.request_log_lock:
            self.server.request_log.write(line + "\n")
            self.server.request_log.flush()

    # Generation.
    def generate(self, body, chat):
        cfg = self.cfg
        if cfg.flavour == "vllm" and body.get("model") not in (None, cfg.model):
            raise BadRequest(404, "The model `%s` does not exist." % body.get("model"))
        if body.get("n", 1) != 1:
            raise BadRequest(400, "n must be 1")
        if chat:
            prompt = count_chat(body.get("messages"))
            max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
            if max_tokens is None:
                max_tokens = cfg.max_model_len - prompt
        else:
            if "prompt" not in body:
                raise BadRequest(400, "prompt is required")
            prompt = count_prompt(body["prompt"], cfg.flavour)
            max_tokens = body.get("max_tokens", 16)
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise BadRequest(400, "max_tokens must be at least 1, got %r" % (max_tokens,))
        if prompt + max_tokens > cfg.max_model_len:
            raise BadRequest(422 if cfg.flavour == "tgi" else 400,
                             "This model's maximum context length is %d tokens. However, you requested %d "
                             "tokens (%d in the messages, %d in the completion)."
                             % (cfg.max_model_len, prompt + max_tokens, prompt, max_tokens))
        refused = self.server.scheduler.reject(prompt, max_tokens)
        if refused:
            raise BadRequest(*refused)
        if cfg.flavour == "vllm" and not cfg.chunked_prefill and prompt > cfg.max_num_batched_tokens:
            raise BadRequest(400, "the prompt (%d tokens) is longer than max_num_batched_tokens (%d) and "
                                  "chunked prefill is off" % (prompt, cfg.max_num_batched_tokens))
        if cfg.flavour == "tgi" and self.server.scheduler.in_flight() >= cfg.max_concurrent_requests:
            raise BadRequest(429, "Model is overloaded")
        stream = bool(body.get("stream", False))
        opts = body.get("stream_options") or {}
        include_usage = stream and isinstance(opts, dict) and bool(opts.get("include_usage"))
        rid = ("chatcmpl-" if chat else "cmpl-") + "%016x" % next(self.server.ids)
        created = int(time.time())
        obj = "chat.completion.chunk" if chat else "text_completion"
        head = {"id": rid, "object": obj, "created": created, "model": cfg.model}

        def event(payload):
            return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"

        def choice(last):
            if chat:
                return {"index": 0, "delta": {"content": TOKEN_TEXT}, "logprobs": None,
                        "finish_reason": "length" if last else None}
            return {"index": 0, "text": TOKEN_TEXT, "logprobs": None,
                    "finish_reason": "length" if last else None, "stop_reason": None}

        token_event = event(dict(head, choices=[choice(False)]))
        last_event = event(dict(head, choices=[choice(True)]))

        if stream:
            def emit(index, last):
                try:
                    self.chunk(last_event if last else token_event)
                    return True
                except OSError:
                    return False
        else:
            def emit(index, last):
                return True

        req = Req(prompt, max_tokens, emit)
        if stream:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if chat:
                self.chunk(event(dict(head, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                                      "logprobs": None, "finish_reason": None}])))
            self.wfile.flush()
        self.server.scheduler.submit(req)
        req.done.wait()
        usage = {"prompt_tokens": prompt, "total_tokens": prompt + req.generated,
                 "completion_tokens": req.generated}
        if req.aborted:
            self.close_connection = True
            return
        if stream:
            try:
                if include_usage:
                    self.chunk(event(dict(head, choices=[], usage=usage)))
                self.chunk(b"data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                self.close_connection = True
            return
        text = TOKEN_TEXT * req.generated
        if chat:
            out = {"id": rid, "object": "chat.completion", "created": created, "model": cfg.model,
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                "logprobs": None, "finish_reason": "length"}], "usage": usage}
        else:
            out = {"id": rid, "object": "text_completion", "created": created, "model": cfg.model,
                   "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": "length",
                                "stop_reason": None}], "usage": usage}
        self.send_body(200, out)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 256


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=8000, help="0: a free port (printed)")
    ap.add_argument("--flavour", choices=("vllm", "tgi", "sglang"), default="vllm")
    ap.add_argument("--model", default="fake-llm", help="the served model's name")
    ap.add_argument("--max-num-seqs", type=int, default=16)
    ap.add_argument("--max-num-batched-tokens", type=int, default=None, help="(1024)")
    ap.add_argument("--chunked-prefill", choices=("on", "off"), default="on")
    ap.add_argument("--kv-tokens", type=int, default=0, help="KV capacity in tokens (0: unlimited)")
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--max-model-len", type=int, default=4096)
    ap.add_argument("--step-ms", type=float, default=4.0)
    ap.add_argument("--prefill-us-per-token", type=float, default=20.0)
    ap.add_argument("--decode-us-per-seq", type=float, default=60.0)
    ap.add_argument("--max-concurrent-requests", type=int, default=128, help="TGI: 429 past it")
    ap.add_argument("--hide-settings", action="store_true", help="publish no scheduler settings")
    ap.add_argument("--log-steps", metavar="FILE", help="one JSON line per step")
    ap.add_argument("--log-requests", metavar="FILE", help="each POST body as one JSON line")
    fake_llm_schedulers.add_arguments(ap)
    cfg = fake_llm_schedulers.resolve(ap.parse_args(argv), ap.error)
    cfg.chunked_prefill = cfg.chunked_prefill == "on"
    for name in ("max_num_seqs", "max_num_batched_tokens", "block_size", "max_model_len"):
        if getattr(cfg, name) < 1:
            ap.error("--%s must be at least 1" % name.replace("_", "-"))
    if cfg.kv_tokens < 0 or (cfg.kv_tokens and cfg.kv_tokens < max(cfg.max_model_len, cfg.block_size)):
        ap.error("--kv-tokens must hold one request of --max-model-len tokens")
    if min(cfg.step_ms, cfg.prefill_us_per_token, cfg.decode_us_per_seq) < 0:
        ap.error("step costs cannot be negative")
    return cfg


def main(argv=None):
    cfg = parse_args(argv if argv is not None else sys.argv[1:])
    sys.setswitchinterval(0.0005)  # the scheduler thread wakes on time even while HTTP threads run
    log = open(cfg.log_steps, "w", encoding="utf-8") if cfg.log_steps else None
    stats = Stats()
    server = Server(("127.0.0.1", cfg.port), Handler)
    cfg.port = server.server_address[1]
    server.cfg = cfg
    server.stats = stats
    server.started = time.time()
    server.ids = iter(range(1, 1 << 62))
    server.request_log = open(cfg.log_requests, "w", encoding="utf-8") if cfg.log_requests else None
    server.request_log_lock = threading.Lock()
    server.scheduler = fake_llm_schedulers.make_scheduler(Scheduler, cfg, stats, log)
    server.scheduler.start()

    def on_signal(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print("listening on http://127.0.0.1:%d" % cfg.port, flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    finally:
        server.scheduler.stop()
        server.scheduler.join(timeout=2)
        server.server_close()
        if log:
            log.close()
        if server.request_log:
            server.request_log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
