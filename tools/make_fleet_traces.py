#!/usr/bin/env python3
"""Traces for fleet planning (docs/capacity.md).

week:   the shared Azure hour repeated over 7 days with a daily shape: each
        copy of the hour keeps a row with probability p(hour of day), a
        sinusoid from 0.35 at 04:00 to 1.0 at 16:00 (seeded). Plain CSV
        (arrival_s,input_tokens,output_tokens).
prefix: one hour of Poisson arrivals whose prompts open with one of a few
        shared system prompts (Zipf popularity): a Mooncake JSON Lines file
        whose one hash id per row is the system prompt (prefix-affinity's key).
step:   a load step for autoscaling (tools/autoscale_verify.py):
        Poisson arrivals at --base req/s, at --peak req/s from --up to --down
        seconds, over --span seconds; prompt and output lengths uniform in
        --input and --output (LO..HI). Plain CSV.

usage: make_fleet_traces.py week   AZURE_CSV OUT.csv [--seed N]
       make_fleet_traces.py prefix OUT.jsonl [--rate R] [--prompts K] [--seed N]
       make_fleet_traces.py step   OUT.csv [--span S] [--base R] [--peak R] [--up S] [--down S]
                                    [--input LO..HI] [--output LO..HI] [--seed N]
"""
import argparse
import csv
import datetime
import json
import math
import random


def week(args):
    rng = random.Random(args.seed)
    rows = []
    with open(args.input) as f:
        reader = csv.reader(f)
        next(reader)
        start = None
        for ts, ctx, gen in reader:
            t = datetime.datetime.fromisoformat(ts[:26])
            start = start or t
            rows.append(((t - start).total_seconds(), int(ctx), int(gen)))
    span = rows[-1][0] - rows[0][0]
    period = span + span / (len(rows) - 1)
    copies = math.ceil(7 * 86400 / period)
    kept = 0
    with open(args.output, "w") as out:
        out.write("arrival_s,input_tokens,output_tokens\n")
        for c in range(copies):
            for s, i, o in rows:
                at = c * period + s
                if at >= 7 * 86400:
                    break
                hour = (at / 3600) % 24
                p = 0.675 - 0.325 * math.cos(2 * math.pi * (hour - 4) / 24)
                if rng.random() < p:
                    out.write(f"{at:.6f},{i},{o}\n")
                    kept += 1
    print(f"{kept} rows over 7 days ({copies} copies of {len(rows)} rows)")


def prefix(args):
    rng = random.Random(args.seed)
    weights = [1 / (k + 1) for k in range(args.prompts)]
    t = 0.0
    n = 0
    with open(args.output, "w") as out:
        while t < 3600:
            t += rng.expovariate(args.rate)
            k = rng.choices(range(args.prompts), weights)[0]
            # a prompt of one 512-token block at most: its one hash id is the system prompt's
            # (a Mooncake row has at most ceil(input_length / 512) hash ids)
            row = {"timestamp": int(t * 1000), "input_length": rng.randint(200, 500),
                   "output_length": rng.randint(16, 128), "hash_ids": [k]}
            out.write(json.dumps(row) + "\n")
            n += 1
    print(f"{n} requests, {args.prompts} system prompts")


def step(args):
    rng = random.Random(args.seed)
    lo_in, hi_in = (int(x) for x in args.input.split(".."))
    lo_out, hi_out = (int(x) for x in args.output.split(".."))
    t = 0.0
    n = 0
    with open(args.output_file, "w") as out:
        out.write("arrival_s,input_tokens,output_tokens\n")
        while True:
            # thinning-free: the rate in force at the current time (the step's edges are sharp enough
            # at these rates: a gap is well under a second)
            t += rng.expovariate(args.peak if args.up <= t < args.down else args.base)
            if t >= args.span:
                break
            out.write(f"{t:.6f},{rng.randint(lo_in, hi_in)},{rng.randint(lo_out, hi_out)}\n")
            n += 1
    print(f"{n} requests over {args.span:g} s: {args.base:g} req/s, {args.peak:g} from {args.up:g} s to "
          f"{args.down:g} s")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    w = sub.add_parser("week")
    w.add_argument("input")
    w.add_argument("output")
    w.add_argument("--seed", type=int, default=1)
    p = sub.add_parser("prefix")
    p.add_argument("output")
    p.add_argument("--rate", type=float, default=20)
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--seed", type=int, default=1)
    s = sub.add_parser("step")
    s.add_argument("output_file")
    s.add_argument("--span", type=float, default=480)
    s.add_argument("--base", type=float, default=2)
    s.add_argument("--peak", type=float, default=10)
    s.add_argument("--up", type=float, default=120)
    s.add_argument("--down", type=float, default=300)
    s.add_argument("--input", default="32..128")
    s.add_argument("--output", default="8..32")
    s.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    {"week": week, "prefix": prefix, "step": step}[args.what](args)


if __name__ == "__main__":
    main()
