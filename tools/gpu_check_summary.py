#!/usr/bin/env python3
"""The GPU check's figures against the GPU step's targets, from the JSON files
bench/gpu/check.sh wrote into OUT: prints a table and writes OUT/summary.json.
Missing files give "-" (a stage that failed or was skipped).

A memory-bound step is judged against the bandwidth of the device it ran on,
measured in the same run (`batchpilot-bench bandwidth`, OUT/bandwidth.json: a
device-to-device copy), never against another GPU's figure; the device's name
comes from OUT/gpu.csv (nvidia-smi) or the bandwidth stage."""
import csv
import json
import os
import sys


def load(out, name):
    path = os.path.join(out, name)
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None


def cell(profile, batch):
    if not profile:
        return None
    for c in profile["cells"]:
        if c["batch"] == batch:
            return c
    return None


def device_name(out, bandwidth):
    try:
        with open(os.path.join(out, "gpu.csv")) as f:
            lines = [r for r in csv.reader(f) if r]
        if len(lines) >= 2 and not lines[1][0].startswith("NVIDIA-SMI has failed"):
            return lines[1][0].strip()
    except OSError:
        pass
    if bandwidth:
        return bandwidth.get("device_name") or bandwidth.get("device")
    return None


def main():
    out = sys.argv[1]
    rows, figures = [], {}
    bw = load(out, "bandwidth.json")
    bandwidth = bw["bytes_per_s"] if bw and bw.get("bytes_per_s") else None
    figures["device"] = device_name(out, bw)
    figures["bandwidth_bytes_per_s"] = bandwidth

    def row(what, value, target, ok):
        rows.append((what, value, target, "-" if ok is None else ("met" if ok else "NOT met")))

    dc = load(out, "device_check.json")
    if dc:
        failed = [l["name"] for l in dc["lines"] if not l["passed"]]
        row("device check", f"{len(dc['lines']) - len(failed)}/{len(dc['lines'])} pass", "all", not failed)
        figures["device_check_failed"] = failed
    for dtype in ("bfloat16", "float32"):
        p = load(out, f"profile_{dtype}.json")
        one, b64, b128 = cell(p, 1), cell(p, 64), cell(p, 128)
        if one and b64:
            figures[f"step_ms_b1_{dtype}"] = one["tpot_ms"]
            figures[f"step_ms_b64_{dtype}"] = b64["tpot_ms"]
            if dtype == "bfloat16":
                row("decode step, batch 1 (bf16)", f"{one['tpot_ms']:.3f} ms", "<= 0.5 ms", one["tpot_ms"] <= 0.5)
                r = b64["tpot_ms"] / one["tpot_ms"]
                row("decode step, batch 64 / batch 1 (bf16)", f"{b64['tpot_ms']:.3f} ms, x{r:.2f}", "<= 1.5",
                    r <= 1.5)
            else:
                row(f"decode step, batch 1 / 64 ({dtype})", f"{one['tpot_ms']:.3f} / {b64['tpot_ms']:.3f} ms", "", None)
        if b128:
            figures[f"offline_tok_s_b128_{dtype}"] = b128["tokens_per_s"]
    hf = load(out, "hf_baseline.json")
    ours = figures.get("offline_tok_s_b128_bfloat16")
    if hf and ours:
        base = [r for r in hf["runs"] if r["dtype"] == "bfloat16"]
        if base:
            ratio = ours / base[0]["tokens_per_s"]
            figures["hf_bf16_tok_s"] = base[0]["tokens_per_s"]
            row("offline tok/s at batch 128 vs transformers generate() (bf16)",
                f"{ours:.0f} vs {base[0]['tokens_per_s']:.0f}: x{ratio:.2f}", ">= 5", ratio >= 5)
    load_runs = load(out, "load.json")
    if load_runs:
        best = {}
        for r in load_runs["runs"]:
            cfg = r["config"]
            name = r["policy"]
            if name == "dynamic":
                name = f"dynamic@{cfg['max_batch_size']}"
            best[name] = max(best.get(name, 0.0), r.get("goodput", 0.0))
        figures["best_goodput"] = best
        dyn = max([v for k, v in best.items() if k.startswith("dynamic")] or [0])
        cont = max([v for k, v in best.items() if k.startswith("continuous")] or [0])
        row("best goodput at TTFT<=500ms, TPOT<=50ms: continuous vs dynamic's best",
            f"{cont:.1f} vs {dyn:.1f} req/s: x{(cont / dyn if dyn else float('inf')):.2f}", ">= 2",
            dyn > 0 and cont >= 2 * dyn)
    sat = load(out, "saturation.json")
    prof = load(out, "profile_bfloat16.json")
    if sat and prof and sat["runs"]:
        ceiling = max(c["tokens_per_s"] for c in prof["cells"])
        served = sat["runs"][0]["output_tokens_per_s"]
        figures["served_over_offline"] = served / ceiling
        row("served / offline ceiling at saturation (continuous)", f"{served:.0f} / {ceiling:.0f} tok/s = "
            f"{served / ceiling:.2f}", ">= 0.9", served / ceiling >= 0.9)
    fid = load(out, "fidelity.json")
    if fid:
        figures["fidelity_median_abs_error"] = fid["median_abs_error"]
        row("fidelity: median |error| over the figures", f"{100 * fid['median_abs_error']:.1f}%", "<= 5%",
            fid["median_abs_error"] <= 0.05)
    if bandwidth:
        row(f"memory bandwidth of {figures['device'] or 'the device'} (copy, read + write)",
            f"{bandwidth / 1e9:.0f} GB/s", "", None)
    # The Llama shape's step against reading its weights once at the bandwidth
    # measured on this device in this run.
    lp = load(out, "llama_profile.json")
    l1, l64 = cell(lp, 1), cell(lp, 64)
    if l1:
        name = lp.get("model", "Llama-3-8B").split("/")[-2] if "/" in lp.get("model", "") else "Llama-3-8B"
        figures["llama_step_ms_b1"] = l1["tpot_ms"]
        if bandwidth:
            bytes_per_weight = 2 if lp.get("dtype", "bfloat16") in ("bfloat16", "float16") else 4
            weights_ms = lp["parameters"] * bytes_per_weight / bandwidth * 1e3
            figures["llama_weight_read_ms"] = weights_ms
            row(f"{name} decode step, batch 1 / weight read at {bandwidth / 1e9:.0f} GB/s",
                f"{l1['tpot_ms']:.2f} / {weights_ms:.2f} ms = x{l1['tpot_ms'] / weights_ms:.2f}", "<= 1.3",
                l1["tpot_ms"] <= 1.3 * weights_ms)
        else:
            row(f"{name} decode step, batch 1", f"{l1['tpot_ms']:.2f} ms (no bandwidth measured)", "", None)
        if l64:
            r = l64["decode_tokens_per_s"] / l1["decode_tokens_per_s"]
            figures["llama_step_ms_b64"] = l64["tpot_ms"]
            row(f"{name} decode tok/s, batch 64 / batch 1", f"{l64['decode_tokens_per_s']:.0f} / "
                f"{l1['decode_tokens_per_s']:.0f} = x{r:.1f}", ">= 20", r >= 20)
    ll = load(out, "llama_load.json")
    if ll:
        best = {}
        for r in ll["runs"]:
            best[r["policy"]] = max(best.get(r["policy"], 0.0), r.get("goodput", 0.0))
        figures["llama_best_goodput"] = best
        dyn, cont = best.get("dynamic", 0.0), best.get("continuous", 0.0)
        row("Llama shape's goodput at TTFT<=1s, TPOT<=50ms: continuous vs dynamic@64",
            f"{cont:.1f} vs {dyn:.1f} req/s: x{(cont / dyn if dyn else float('inf')):.2f}", ">= 2",
            dyn > 0 and cont >= 2 * dyn)
    width = max(len(r[0]) for r in rows) if rows else 10
    for what, value, target, verdict in rows:
        print(f"{what:<{width}}  {value:<34} target {target:<10} {verdict}")
    json.dump({"rows": rows, "figures": figures}, open(os.path.join(out, "summary.json"), "w"), indent=2)


if __name__ == "__main__":
    main()
