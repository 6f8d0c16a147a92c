#!/usr/bin/env python3
"""Records a real session for docs/images (docs/reports.md, "Regenerating the images").

Starts `batchpilot --headless` on a fresh database, sends open-loop Poisson
traffic to POST /v1/infer with prompt and output lengths drawn from the
shared Azure trace (scaled down for a CPU), changes the batching config
twice through PUT /v1/config, stops the server gracefully and prints the
session id. Standard library only.

  tools/report_demo.py --exe build/report/app/batchpilot --db /tmp/demo.sqlite
"""
import argparse
import csv
import http.client
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def azure_lengths(path, scale):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows.append((max(1, round(int(r["ContextTokens"]) * scale)),
                         max(1, round(int(r["GeneratedTokens"]) * scale))))
    return rows


def request(host, port, method, path, body):
    conn = http.client.HTTPConnection(host, port, timeout=60)
    conn.request(method, path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    reply = conn.getresponse()
    data = reply.read()
    conn.close()
    return reply.status, data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--model", default="builtin:tiny-decoder")
    ap.add_argument("--preset", default="small")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--rate", type=float, default=40, help="arrivals per second (Poisson)")
    ap.add_argument("--length-scale", type=float, default=1 / 16)
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--max-length", type=int, default=256, help="cap on prompt tokens (the model's limit)")
    ap.add_argument("--trace", default=os.path.join(HERE, "..", "..", "shared", "traces", "azure_llm_conv_2023.csv"))
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    rng = random.Random(args.seed)
    lengths = azure_lengths(args.trace, args.length_scale)
    # Start small and short, then let batches grow, then cap the delay.
    initial = os.path.join(os.path.dirname(os.path.abspath(args.db)), "report_demo_config.json")
    with open(initial, "w") as f:
        json.dump({"policy": "dynamic", "max_batch_size": 1, "max_queue_delay_us": 2000}, f)
    server = subprocess.Popen([args.exe, "--headless", "--port", "0", "--model", args.model, "--preset", args.preset, "--db", args.db,
                               "--config", initial], stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    m = re.search(r"listening on http://([^:]+):(\d+)", line)
    if not m:
        server.kill()
        sys.exit("no 'listening on' line: " + line)
    host, port = m.group(1), int(m.group(2))
    changes = [(args.seconds / 3, {"max_batch_size": 16, "max_queue_delay_us": 10000}),
               (2 * args.seconds / 3, {"max_batch_size": 32, "max_queue_delay_us": 4000})]
    codes = {}
    lock = threading.Lock()

    def one(tokens, new_tokens):
        status, _ = request(host, port, "POST", "/v1/infer",
                            {"input_ids": [1 + (i * 7) % 250 for i in range(tokens)],
                             "max_new_tokens": new_tokens, "timeout_ms": 2000})
        with lock:
            codes[status] = codes.get(status, 0) + 1

    start = time.monotonic()
    threads = []
    next_change = 0
    t = 0.0
    while t < args.seconds:
        while next_change < len(changes) and changes[next_change][0] <= t:
            status, body = request(host, port, "PUT", "/v1/config", changes[next_change][1])
            print(f"{t:6.1f} s  PUT /v1/config {changes[next_change][1]} -> {status}", flush=True)
            next_change += 1
        delay = start + t - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        tokens, out = rng.choice(lengths)
        th = threading.Thread(target=one, args=(min(tokens, args.max_length), min(out, args.max_new_tokens)))
        th.start()
        threads.append(th)
        t += rng.expovariate(args.rate)
    for th in threads:
        th.join()
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=60)
    print("answers by status:", codes, flush=True)


if __name__ == "__main__":
    main()
