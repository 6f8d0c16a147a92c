#!/usr/bin/env python3
"""Prediction against a server whose truth is known.

For each server flavour of tools/fake_llm_server.py (a scheduler with set
limits and a known step cost, its own code), this:
  1. starts the fake server and calibrates it from outside
     (`batchpilot calibrate --target`), the only thing the prediction learns
     from: no trace below is used to calibrate;
  2. for each trace shape, imports a seeded synthetic trace, simulates it on
     that calibration (`replay --simulate`: the server's scheduler model) and
     replays it into the server for real (`replay --target`);
  3. prints predicted vs measured throughput, TTFT p50/p99 and TPOT p50/p99,
     and the median |error| per flavour and shape.

Shapes: short prompts; long prompts past the server's token budget (each is
chunked); shared prefixes (a few system prompts in front of most requests,
Mooncake hash ids); multi-turn conversations (closed loop, think times).

Cost: per flavour one calibration (about 110 requests, 8 s) and per shape one
real replay of N requests (--requests, default 240; about 10-20 s each):
about 2 minutes per flavour with the defaults.

    python3 bench/remote_truth.py [--flavours vllm,tgi,sglang] [--shapes short,long,prefix,multiturn]
        [--requests N] [--batchpilot PATH] [--json OUT.json]
"""
import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES = [("throughput_rps", "req/s"), ("ttft_p50_ms", "TTFT p50"), ("ttft_p99_ms", "TTFT p99"),
           ("tpot_p50_ms", "TPOT p50"), ("tpot_p99_ms", "TPOT p99")]


def poisson(rng, rate, n):
    t = 0.0
    for _ in range(n):
        t += rng.expovariate(rate)
        yield t


def write_shape(shape, path, n, seed):
    """A seeded trace of `shape`; returns the import format."""
    rng = random.Random(seed)
    if shape == "short":
        with open(path, "w") as f:
            f.write("arrival_s,input_tokens,output_tokens\n")
            for t in poisson(rng, 30.0, n):
                f.write(f"{t:.4f},{rng.randint(16, 128)},{rng.randint(16, 96)}\n")
        return "plain"
    if shape == "long":  # past a 1024-token step budget: every prompt is chunked
        with open(path, "w") as f:
            f.write("arrival_s,input_tokens,output_tokens\n")
            for t in poisson(rng, 6.0, n):
                f.write(f"{t:.4f},{rng.randint(1100, 2400)},{rng.randint(8, 48)}\n")
        return "plain"
    if shape == "prefix":  # 4 system prompts of 4 blocks of 64 tokens, then own text
        with open(path, "w") as f:
            next_id = 100
            for t in poisson(rng, 25.0, n):
                system = rng.randrange(4)
                own = rng.randint(1, 2)
                ids = [system * 10 + k for k in range(4)] + list(range(next_id, next_id + own))
                next_id += own
                f.write(json.dumps({"timestamp": int(t * 1000), "input_length": 64 * len(ids),
                                    "output_length": rng.randint(16, 64), "hash_ids": ids}) + "\n")
        return "mooncake"
    if shape == "multiturn":  # conversations of 2-5 turns, 0.2-1.5 s think time
        rows, conv, start = [], 0, 0.0
        while len(rows) < n:
            conv += 1
            start += rng.expovariate(4.0)
            for turn in range(1, rng.randint(2, 5) + 1):
                rows.append({"conversation_id": conv, "turn": turn, "timestamp": int(start * 1000),
                             "input_length": rng.randint(16, 96), "output_length": rng.randint(16, 64),
                             "think_time_ms": rng.randint(200, 1500)})
        with open(path, "w") as f:
            for r in rows[:n]:
                f.write(json.dumps(r) + "\n")
        return "multi-turn"
    raise ValueError(shape)


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\nexit {r.returncode}\n{r.stderr[-2000:]}")
    return r.stdout


def start_server(flavour, port):
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, "tools", "fake_llm_server.py"), "--port", str(port),
                          "--flavour", flavour], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    if "listening on" not in line:
        p.kill()
        raise RuntimeError(f"fake server ({flavour}) did not start: {line!r}")
    return p, line.split("listening on ")[1].strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flavours", default="vllm,tgi,sglang")
    ap.add_argument("--shapes", default="short,long,prefix,multiturn")
    ap.add_argument("--requests", type=int, default=240)
    ap.add_argument("--batchpilot", default=os.path.join(ROOT, "build", "default", "app", "batchpilot"))
    ap.add_argument("--port", type=int, default=18400)
    ap.add_argument("--json", help="write every figure here")
    a = ap.parse_args()
    B = a.batchpilot
    work = tempfile.mkdtemp(prefix="remote-truth-")
    db = os.path.join(work, "db.sqlite")
    results = []
    for fi, flavour in enumerate(a.flavours.split(",")):
        # TGI's /v1/completions takes text only: its chat endpoint carries the prompts.
        protocol = "openai-chat" if flavour == "tgi" else "openai"
        server, url = start_server(flavour, a.port + fi)
        try:
            out = run([B, "calibrate", "--target", url, "--protocol", protocol, "--model", "fake-llm", "--server",
                       flavour, "--db", db, "--json"])
            cal = json.loads(out)
            cal_id = str(cal.get("id") or cal.get("calibration", {}).get("id"))
            print(f"{flavour}: calibration {cal_id} from {cal.get('source', '?')}", flush=True)
            for si, shape in enumerate(a.shapes.split(",")):
                path = os.path.join(work, f"{flavour}-{shape}.trace")
                fmt = write_shape(shape, path, a.requests, 1000 + si)
                imp = json.loads(run([B, "import-trace", path, "--format", fmt, "--name", f"{flavour}-{shape}",
                                      "--block-tokens", "64", "--db", db, "--json"]))
                trace = str(imp["trace_id"])
                common = ["replay", "--trace", trace, "--db", db, "--json"]
                sim = json.loads(run([B, *common, "--simulate", "--calibration", cal_id]))
                real = json.loads(run([B, *common, "--target", url, "--protocol", protocol, "--model", "fake-llm"]))
                p, m = sim["comparison"]["b"], real["comparison"]["b"]
                errors = [abs(p[k] / m[k] - 1) for k, _ in FIGURES if m.get(k)]
                row = {"flavour": flavour, "shape": shape, "requests": a.requests, "calibration": cal_id,
                       "server_model": sim.get("server_model", ""), "predicted": {k: p[k] for k, _ in FIGURES},
                       "measured": {k: m[k] for k, _ in FIGURES}, "median_abs_error": statistics.median(errors),
                       "failed_real": m.get("failed", 0), "lengths": {"raised": real.get("raised"),
                                                                      "clamped": real.get("clamped")}}
                results.append(row)
                cells = "  ".join(f"{label} {p[k]:.1f}/{m[k]:.1f}" for k, label in FIGURES)
                print(f"  {shape:<10} predicted/measured: {cells}  median |error| "
                      f"{100 * row['median_abs_error']:.1f}%", flush=True)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=10)
    print("\nmedian |error| over throughput, TTFT p50/p99, TPOT p50/p99:")
    for flavour in a.flavours.split(","):
        rs = [r for r in results if r["flavour"] == flavour]
        if rs:
            print(f"  {flavour:<7} " + "  ".join(f"{r['shape']} {100 * r['median_abs_error']:.1f}%" for r in rs) +
                  f"  | all {100 * statistics.median(e for r in rs for e in [r['median_abs_error']]):.1f}%")
    if a.json:
        json.dump(results, open(a.json, "w"), indent=2)


if __name__ == "__main__":
    main()
