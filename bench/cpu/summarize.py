#!/usr/bin/env python3
"""Prints the ratios of bench/cpu_vs_llamacpp.sh from its output folder.

  summarize.py OUT_DIR CHECKPOINT_DIR

Per cell (engine figures are medians over the rounds): decode tokens/s
(BatchPilot's decode steps alone: batch / step time; llama.cpp's S_TG) and
prefill tokens/s (BatchPilot: batch x prompt / time to first token; llama.cpp's
S_PP), BatchPilot over llama.cpp. Then the batch-1 decode step against the time
to read the weights a step reads once (every layer and the LM head; of the
embedding one row) at the copy bandwidth measured in the same round.
"""
import json
import pathlib
import re
import statistics
import sys


def bp_cells(path):
    j = json.loads(path.read_text())
    return {(c["batch"], c["length"]): c for c in j["cells"]}, j


def llama_cells(path):
    out = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line.startswith("{"):
            c = json.loads(line)
            out[(c["pl"], c["pp"])] = c
    return out


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main():
    out, ckpt = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    config = json.loads((ckpt / "config.json").read_text())
    rounds = sorted(p for p in out.glob("round*") if p.is_dir())
    if not rounds:
        sys.exit("summarize: no round*/ in " + str(out))
    print(f"cpu_vs_llamacpp: {len(rounds)} round(s); engine figures are medians over rounds")
    for r in rounds:
        lines = (r / "machine.txt").read_text().strip().splitlines()
        cpu = re.sub(r"\s+", " ", lines[2]) if len(lines) > 2 else ""
        before, after = (line.split("load average:")[-1].strip() for line in (lines[0], lines[-1]))
        print(f"  {r.name}: {cpu}; load average before: {before}; after: {after}")

    bw = []
    for r in rounds:
        m = re.search(r"bandwidth\s+([\d.]+) GB/s", (r / "bandwidth.txt").read_text())
        bw.append(float(m.group(1)) if m else None)
    bandwidth = med(bw)

    comparisons = [("f32", "bp-f32-128.json", "llama-f32-128.jsonl", "float32 vs GGUF f32"),
                   ("bf16", "bp-bf16-128.json", "llama-f16-128.jsonl", "bfloat16 vs GGUF f16"),
                   ("f32", "bp-f32-1024.json", "llama-f32-1024.jsonl", "float32 vs GGUF f32, context 1,024")]
    print()
    print("| weights | batch | prompt | BatchPilot step ms | llama.cpp step ms | decode tok/s ratio"
          " | BatchPilot prefill tok/s | llama.cpp prefill tok/s | prefill ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    step1 = []
    params = None
    for _, bpname, llname, label in comparisons:
        if not (rounds[0] / bpname).exists():
            continue
        keys = sorted(bp_cells(rounds[0] / bpname)[0].keys(), key=lambda k: (k[1], k[0]))
        for key in keys:
            batch, length = key
            bstep, bpre, lstep, lpre = [], [], [], []
            for r in rounds:
                cells, j = bp_cells(r / bpname)
                params = j["parameters"]
                c = cells.get(key)
                if c:
                    bstep.append(c["tpot_ms"])
                    bpre.append(batch * length / (c["ttft_ms"] / 1e3))
                lc = llama_cells(r / llname).get(key) if (r / llname).exists() else None
                if lc:
                    lstep.append(lc["t_tg"] * 1e3 / lc["tg"])
                    lpre.append(lc["speed_pp"])
            bs, bp_, ls, lp = med(bstep), med(bpre), med(lstep), med(lpre)
            if bpname == "bp-f32-128.json" and batch == 1:
                step1 = bstep
            ratio = f"{ls / bs:.2f}x" if bs and ls else "-"
            pratio = f"{bp_ / lp:.2f}x" if bp_ and lp else "-"
            print(f"| {label} | {batch} | {length} | {bs:.2f} | {ls:.2f} | {ratio} | {bp_:.0f} | {lp:.0f} | {pratio} |"
                  if bs and ls else f"| {label} | {batch} | {length} | {bs} | {ls} | - | - | - | - |")

    if (rounds[0] / "base-f32-128.json").exists():
        print()
        print("BatchPilot before (BATCHPILOT_BENCH_BASELINE) and after, same rounds:")
        print("| prompt | batch | step ms before | step ms after | decode speed-up | prefill tok/s before | after | speed-up |")
        print("|---|---|---|---|---|---|---|---|")
        for length in (128, 1024):
            name = f"f32-{length}.json"
            if not (rounds[0] / ("base-" + name)).exists():
                continue
            for batch in sorted(k[0] for k in bp_cells(rounds[0] / ("bp-" + name))[0]):
                row = []
                for prefix in ("base-", "bp-"):
                    cells = [bp_cells(r / (prefix + name))[0].get((batch, length)) for r in rounds]
                    row.append((med([c["tpot_ms"] for c in cells if c]),
                                med([batch * length / (c["ttft_ms"] / 1e3) for c in cells if c])))
                (s0, p0), (s1, p1) = row
                print(f"| {length} | {batch} | {s0:.2f} | {s1:.2f} | {s0 / s1:.2f}x | {p0:.0f} | {p1:.0f} | {p1 / p0:.2f}x |")

    V, d = config["vocab_size"], config["hidden_size"]
    tied = config.get("tie_word_embeddings", False)
    read_params = params - (0 if tied else V * d) if params else None
    if read_params and bandwidth and step1:
        read_ms = read_params * 4 / (bandwidth * 1e9) * 1e3
        all_ms = params * 4 / (bandwidth * 1e9) * 1e3
        print()
        print(f"bandwidth (copy, read + write): {bandwidth:.1f} GB/s (median over rounds)")
        print(f"batch-1 decode step reads {read_params * 4 / 1e6:.0f} MB of f32 weights (all {params * 4 / 1e6:.0f} MB"
              f" less the embedding table, of which one row): {read_ms:.2f} ms at that bandwidth")
        print(f"BatchPilot batch-1 f32 decode step {med(step1):.2f} ms = {med(step1) / read_ms:.2f}x the weight-read time"
              f" ({med(step1) / all_ms:.2f}x the time to read all {params * 4 / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
