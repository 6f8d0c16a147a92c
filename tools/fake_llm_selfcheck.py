#!/usr/bin/env python3
"""Self-check of tools/fake_llm_server.py's schedulers (stdlib only).

For each flavour it starts the server on port 0 with --log-steps, sends a
burst of streaming requests of mixed prompt and output lengths (token-id
prompts at /v1/completions for vllm and sglang; text at
/v1/chat/completions for tgi, whose /v1/completions takes text only),
checks that every request got exactly its max tokens, then reads the step
log and checks the flavour's scheduler invariants:

  all     every step costs --step-ms + --prefill-us-per-token x prefill
          tokens + --decode-us-per-seq x decodes;
  vllm    prefill tokens + decodes <= --max-num-batched-tokens, running <=
          --max-num-seqs (as before: the vLLM scheduler is unchanged);
  tgi     no step mixes prefill and decode; a prefill's prompt tokens <=
          --max-batch-prefill-tokens, the batch's reserved tokens <=
          --max-batch-total-tokens, running <= --max-batch-size, a prefill
          that joins a running batch brings at least its minimum size
          (floor(batch x waiting_served_ratio) unless max_waiting_tokens ran
          out); some prefill joined a running batch;
  sglang  no step mixes prefill and decode; at most one request part-way
          through its prefill; running <= --max-running-requests; a prefill's
          tokens <= --chunked-prefill-size; KV used <= --max-total-tokens;
          some prompt was chunked; and a second, KV-tight and decode-heavy
          burst (sglang-retract) where the new-token-ratio estimate admits
          more than fits: some request is retracted, and still gets all its
          tokens.
It also reads the settings each flavour publishes. Exits 0 when all pass.

    python3 tools/fake_llm_selfcheck.py [--scenario vllm|tgi|sglang|sglang-retract] [-v]
"""
import argparse
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "fake_llm_server.py")
STEP_MS, PREFILL_US, DECODE_US = 2.0, 10.0, 40.0
COST = ["--step-ms", str(STEP_MS), "--prefill-us-per-token", str(PREFILL_US), "--decode-us-per-seq", str(DECODE_US)]

# name: (flavour, server flags, the limits the checks hold it to, requests, burst shape)
MIXED = "mixed"  # prompts of 5..1900 tokens, outputs of 1..80
LONG_OUTPUTS = "long-outputs"  # prompts of 100..200 tokens, outputs of 300..400, all at once
SCENARIOS = {
    "vllm": ("vllm", ["--max-num-seqs", "16", "--max-num-batched-tokens", "1024", "--kv-tokens", "16384"],
             {"budget": 1024, "running": 16}, 48, MIXED),
    "tgi": ("tgi", ["--max-batch-size", "12", "--max-batch-prefill-tokens", "2048", "--max-batch-total-tokens",
                    "8192"],
            {"prefill": 2048, "total": 8192, "running": 12}, 48, MIXED),
    "sglang": ("sglang", ["--max-running-requests", "10", "--chunked-prefill-size", "1024", "--max-prefill-tokens",
                          "2048", "--max-total-tokens", "6144"],
               {"chunk": 1024, "kv": 6144, "running": 10, "chunked": True}, 48, MIXED),
    "sglang-retract": ("sglang", ["--max-running-requests", "16", "--max-total-tokens", "4096"],
                       {"chunk": 8192, "kv": 4096, "running": 16, "retracted": True}, 24, LONG_OUTPUTS),
}


class Server:
    def __init__(self, flavour, flags, log_path):
        self.proc = subprocess.Popen([sys.executable, SERVER, "--port", "0", "--flavour", flavour, "--log-steps",
                                      log_path] + COST + flags,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            self.stop()
            raise RuntimeError("the server did not start: %r %s" % (line, self.proc.stderr.read()))
        self.port = int(line.rsplit(":", 1)[1])

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.status, body

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def stream(port, flavour, prompt_len, max_tokens, rng):
    """Sends one streaming request; the number of tokens it got back."""
    if flavour == "tgi":
        path = "/v1/chat/completions"
        body = {"model": "fake-llm", "messages": [{"role": "user", "content": "k " * prompt_len}],
                "max_completion_tokens": max_tokens, "stream": True}
    else:
        path = "/v1/completions"
        body = {"model": "fake-llm", "prompt": [rng.randrange(1, 30000) for _ in range(prompt_len)],
                "max_tokens": max_tokens, "stream": True}
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError("HTTP %d: %s" % (r.status, r.read()[:200]))
    tokens = 0
    for raw in r:
        line = raw.strip()
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        for ch in json.loads(line[6:]).get("choices", []):
            text = ch.get("text") if "text" in ch else (ch.get("delta") or {}).get("content")
            if text:
                tokens += 1
    c.close()
    return tokens


def burst(port, flavour, n, shape, seed):
    rng = random.Random(seed)
    jobs = []
    for i in range(n):
        if shape == LONG_OUTPUTS:
            jobs.append((rng.randint(100, 200), rng.randint(300, 400), 0.0))
            continue
        prompt = rng.choice([rng.randint(5, 120), rng.randint(200, 900), rng.randint(900, 1900)])
        jobs.append((prompt, rng.randint(1, 80), i * 0.004))
    errors, results = [], []

    def one(job, k):
        prompt, max_tokens, delay = job
        time.sleep(delay)
        try:
            got = stream(port, flavour, prompt, max_tokens, random.Random(seed + k))
            results.append((prompt, max_tokens, got))
            if got != max_tokens:
                errors.append("request %d (%d prompt): %d tokens, expected %d" % (k, prompt, got, max_tokens))
        except Exception as e:  # noqa: BLE001 - reported, then the check fails
            errors.append("request %d: %s" % (k, e))

    threads = [threading.Thread(target=one, args=(j, k)) for k, j in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors


def read_steps(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def check_steps(flavour, steps, lim):
    bad = []

    def fail(step, why):
        if len(bad) < 20:
            bad.append("%s: %s" % (why, json.dumps(step)))

    joins = chunked = 0
    prev_running = 0
    for s in steps:
        cost = STEP_MS + PREFILL_US * 1e-3 * s["prefill_tokens"] + DECODE_US * 1e-3 * s["decodes"]
        if abs(s["cost_ms"] - cost) > 1e-3:
            fail(s, "cost %.4f ms, expected %.4f" % (s["cost_ms"], cost))
        kind = s.get("kind")
        want = ("mixed" if s["prefill_seqs"] and s["decodes"] else "prefill" if s["prefill_seqs"]
                else "decode" if s["decodes"] else "empty")
        if kind != want:
            fail(s, "kind %r, expected %r" % (kind, want))
        if flavour == "vllm":
            if s["prefill_tokens"] + s["decodes"] > lim["budget"]:
                fail(s, "more than max_num_batched_tokens")
            if s["running"] > lim["running"]:
                fail(s, "more than max_num_seqs running")
        elif flavour == "tgi":
            if kind not in ("prefill", "decode"):
                fail(s, "a TGI step is a prefill or a decode")
            if kind == "prefill":
                if s["prefill_tokens"] > lim["prefill"]:
                    fail(s, "prefill above max_batch_prefill_tokens")
                if s["min_size"] is not None and s["prefill_seqs"] < s["min_size"]:
                    fail(s, "prefill below its minimum size")
                if s["running"] - s["prefill_seqs"] > 0 or prev_running > 0:
                    joins += 1
            if s["batch_tokens"] > lim["total"]:
                fail(s, "reserved tokens above max_batch_total_tokens")
            if s["running"] > lim["running"]:
                fail(s, "more than max_batch_size running")
        elif flavour == "sglang":
            if kind not in ("prefill", "decode"):
                fail(s, "an SGLang step is a prefill or a decode")
            if s["partial"] > 1:
                fail(s, "more than one request part-way through its prefill")
            chunked += s["partial"]
            if s["running"] > lim["running"]:
                fail(s, "more than max_running_requests running")
            if s["prefill_tokens"] > lim["chunk"]:
                fail(s, "prefill above chunked_prefill_size")
            if s["kv_used_blocks"] * 16 > lim["kv"]:
                fail(s, "KV above max_total_tokens")
        prev_running = s["running"]
    if flavour == "tgi" and joins == 0:
        bad.append("no prefill joined a running batch")
    if lim.get("chunked") and chunked == 0:
        bad.append("no prompt was chunked")
    if lim.get("retracted") and not any(s["preempted"] for s in steps):
        bad.append("no request was retracted")
    return bad


def check_settings(name, server):
    if name == "tgi":
        status, body = server.get("/info")
        info = json.loads(body)
        want = {"max_batch_size": 12, "max_batch_total_tokens": 8192, "waiting_served_ratio": 0.3,
                "max_waiting_tokens": 20, "max_input_tokens": 2048}
    elif name == "sglang":
        status, body = server.get("/get_server_info")
        info = json.loads(body)
        want = {"max_running_requests": 10, "chunked_prefill_size": 1024, "max_prefill_tokens": 2048,
                "max_total_num_tokens": 6144}
    else:
        return []
    return ["%s: %r, expected %r" % (k, info.get(k), v) for k, v in want.items() if info.get(k) != v]


def run(name, verbose):
    flavour, flags, lim, n, shape = SCENARIOS[name]
    with tempfile.TemporaryDirectory() as tmp:
        log_path = os.path.join(tmp, "steps.jsonl")
        server = Server(flavour, flags, log_path)
        try:
            problems = check_settings(name, server)
            t0 = time.monotonic()
            results, errors = burst(server.port, flavour, n, shape, seed=7)
            wall = time.monotonic() - t0
            problems += errors
        finally:
            server.stop()
        steps = read_steps(log_path)
    problems += check_steps(flavour, steps, lim)
    kinds = {}
    for s in steps:
        kinds[s["kind"]] = kinds.get(s["kind"], 0) + 1
    extra = ""
    if flavour == "sglang":
        extra = ", %d retracted, %d steps with a partial prefill" % (sum(s["preempted"] for s in steps),
                                                                      sum(1 for s in steps if s["partial"]))
    elif flavour == "vllm":
        extra = ", %d preempted" % sum(s["preempted"] for s in steps)
    print("%-14s %s: %d requests in %.2f s, %d steps %s%s" % (name, "ok" if not problems else "FAILED",
                                                             len(results), wall, len(steps), kinds, extra))
    for p in problems:
        print("    " + p)
    if verbose:
        for s in steps[:40]:
            print("    " + json.dumps(s))
    return not problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", choices=list(SCENARIOS), action="append")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    ok = True
    for name in args.scenario or list(SCENARIOS):
        ok = run(name, args.verbose) and ok
    print("selfcheck: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
