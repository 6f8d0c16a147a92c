#!/usr/bin/env python3
"""Prediction against a real llama.cpp llama-server (docs/benchmarks.md,
"llama.cpp's llama-server: its model's prediction against the real server").

For each slot count N, this:
  1. starts llama-server (the build packaging/install-llama-cpp.sh --build
     makes) on the checkpoint tools/make_tiny_gguf.py writes, with
     `-np N -c 1024*N -t 1 --metrics`;
  2. calibrates it from outside (`batchpilot calibrate --target`, the full
     probe plan at --max-concurrency 8): the only thing the prediction learns
     from;
  3. re-prices it at the server's pace (`calibrate --refresh`, 4 requests),
     replays the bundled Azure conversation trace into it for real (its first
     REQUESTS arrivals, half at 1 slot; lengths x0.05, at the trace's pace),
     reads the pace again (a second refresh, only for its ratio), then
     simulates the same arrivals on the probe's calibration and on the
     refreshed one (`replay --simulate --compare`: llama.cpp's slot loop);
  4. prints measured vs both predictions of throughput, TTFT p50/p99 and TPOT
     p50/p99, each with the median |error| of the five, and the pace ratios
     read before and after the replay (against the probe's);
  5. with --repeat, replays the same arrivals into a fresh llama-server of
     the same flags right after (the first one's prompt cache holds every
     prompt: the second replay's TTFT read 80 % short into it), and prints
     that second measurement against the first the same way: how far the
     measurement moves by itself, the floor under any prediction's error.

With --pick, instead: the tuner's pick measured against the current
settings in one run. llama-server at one slot (-np 1 -c 4096) is calibrated
(full plan), and the sample trace's first PICK_REQUESTS arrivals (lengths
x0.2, twice its pace: one slot queues them) are replayed into it for real;
tune --target (SLO: TTFT p99 at most half of what one slot measured,
objective throughput) prints llama-server flags; the server is restarted
with exactly those flags and the same arrivals replayed into it. Prints the
current settings and the pick, each predicted (tune's table) and measured.
Cost: one calibration and two replays of 120 arrivals, ~3 minutes.

With --sensitivity DB, instead: how far the prediction moves with the
server's pace. DB is a slot count's database of an earlier run (--work DIR
keeps them: DIR/slots-8.db); its probe's calibration is stored again with
every cost term times 0.85, 1.0, 1.15 and 1.3, and the same arrivals are
simulated on each against the measured replay. Nothing is sent to a server;
four simulations, ~10-20 s.

With --decompose DB, instead: where the measured and the simulated TPOT
part. For each replayed request of 4 tokens or more, its TPOT is fitted
(least squares over the requests) as base + a * (the other requests
decoding beside it, time-weighted over its decode) + b * (the prompt tokens
of the requests that arrived during its decode, per token of its own), once
over the measured replay and once over the simulation of the same arrivals
on the probe's calibration (the DB of an earlier run, as --sensitivity).
Reads the DB only; a second.

With --unknown N, instead: the unknown-kind path, N times. Each run starts
a fresh llama-server (-np 2 -c 2048) behind the proxy of tests/integration/
llamacpp_server_check.py that hides /metrics, /props and /slots, calibrates
it from outside with the quick plan at --max-concurrency 4 (the kind is not
recognised; a generic model is inferred), replays the sample trace's first
40 arrivals (lengths x0.05) into it and simulates them on that calibration.
Prints the level inferred and each figure's error. Cost: ~30-40 s a run.

Cost: per slot count one calibration (~50-110 requests, 30-60 s) and one real
replay (~70 s at 240 requests): about 2-3 minutes per slot count, ~8 minutes
for the default 1,4,8. Nothing is downloaded.

    python3 bench/llamacpp_truth.py [--slots 1,4,8] [--requests 240] [--repeat]
        [--batchpilot build/default/app/batchpilot] [--work DIR]
    python3 bench/llamacpp_truth.py --pick [--pick-requests 120]
    python3 bench/llamacpp_truth.py --unknown 5
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))  # llamacpp_server_check: its server and proxy
METRICS = ["throughput (req/s)", "TTFT p50 (ms)", "TTFT p99 (ms)", "TPOT p50 (ms)", "TPOT p99 (ms)"]


def llama_server():
    text = open(os.path.join(ROOT, "packaging", "install-llama-cpp.sh")).read()
    version = re.search(r"^VERSION=(\S+)", text, re.M).group(1).strip("\"'")
    home = os.environ.get("BATCHPILOT_LLAMA_CPP_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "batchpilot",
        "llama-cpp-python-" + version)
    return os.path.join(home, "build", "bin", "llama-server")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        sys.exit("%s exited %d\n%s\n%s" % (" ".join(cmd), p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
    return p


def table(text):
    out = {}
    for line in text.splitlines():
        m = re.match(r"(\S[\w ()/]*?\S)\s{2,}(.*)$", line)
        if m:
            out[m.group(1)] = re.split(r"\s{2,}", m.group(2).strip())
    return out


def number(cell):
    return float(cell.replace(",", "").split()[0])


def refresh(base, url, cid):
    """calibrate --refresh CID: (the new calibration's id, the pace ratio it read)."""
    out = run(base + ["calibrate", "--target", url, "--protocol", "openai", "--model", "tiny", "--vocab-size",
                      "400", "--max-length", "1024", "--refresh", cid])
    line = re.search(r"calibrate: refresh: .*", out.stderr).group(0)
    print(line, file=sys.stderr)
    ratio = re.search(r"was measured \([^)]*\): x([\d.]+)", line).group(1)
    return re.search(r"calibration (\d+):", out.stdout).group(1), float(ratio)


def errors(sim_stdout):
    rows = table(sim_stdout)
    figures = []
    for m in METRICS:
        measured, predicted = number(rows[m][0]), number(rows[m][1])
        figures.append((m, measured, predicted, (predicted - measured) / measured if measured else 0.0))
    return figures


def one(bp, gguf, work, slots, requests, repeat=False):
    """Calibrate, refresh, replay for real, read the pace again; the same
    arrivals simulated on the probe's calibration and on the refreshed one.
    With `repeat`, a fresh server of the same flags (an empty prompt cache:
    the same server would answer the same prompts from it) takes the same
    arrivals again."""
    db = os.path.join(work, "slots-%d.db" % slots)
    if os.path.exists(db):
        os.remove(db)
    base = [bp, "--db", db]
    replay = ["replay", "1", "--trace", "--protocol", "openai", "--model", "tiny", "--vocab-size", "400",
              "--max-length", "1024", "--limit", str(requests if slots > 1 else requests // 2), "--length-scale",
              "0.05"]
    from llamacpp_server_check import stop_server
    flags = ["-np", str(slots), "-c", str(1024 * slots)]
    proc, url = start(gguf, work, flags, "%d" % slots)
    try:
        run(base + ["import-trace", "--sample"])
        cal = run(base + ["calibrate", "--target", url, "--protocol", "openai", "--model", "tiny",
                          "--vocab-size", "400", "--max-length", "1024", "--max-concurrency", "8"])
        cid = re.search(r"calibration (\d+):", cal.stdout).group(1)
        for line in re.findall(r"calibrate: (?:attention priced on|pace: ).*", cal.stderr):
            print(line, file=sys.stderr)
        fit = re.search(r"median[^\n]*?([\d.]+)\s*%", cal.stdout)
        uptime = open("/proc/loadavg").read().split()[:3]
        fresh, before = refresh(base, url, cid)
        real = run(base + replay + ["--target", url])
        _, after = refresh(base, url, cid)
    finally:
        stop_server(proc)
    sid = re.search(r"session (\d+)", real.stdout + real.stderr).group(1)
    again = None
    if repeat:
        proc, url = start(gguf, work, flags, "%d-again" % slots)
        try:
            again = errors(run(base + replay + ["--target", url, "--compare", sid]).stdout)
        finally:
            stop_server(proc)
    trace = replay[replay.index("--limit"):]
    sims = [run(base + ["replay", "1", "--trace", "--simulate", "--calibration", c, "--compare", sid] + trace)
            for c in (cid, fresh)]
    return [errors(s.stdout) for s in sims], again, (before, after), fit.group(1) if fit else "?", " ".join(uptime)


def start(gguf, work, flags, tag):
    """llama-server with `flags` (the check's start_server); returns (process, URL)."""
    from llamacpp_server_check import start_server
    proc, port = start_server(llama_server(), gguf, flags, work, tag)
    return proc, "http://127.0.0.1:%d" % port


def measure(base, url, trace):
    out = run(base + ["replay", "1", "--trace", "--target", url, "--protocol", "openai", "--model", "tiny",
                      "--vocab-size", "400", "--max-length", "1024"] + trace).stdout
    r = table(out)
    return {k: r[k][0] for k in ("throughput (req/s)", "TTFT p50 (ms)", "TTFT p99 (ms)", "TPOT p50 (ms)",
                                 "TPOT p99 (ms)", "completed")}


def pick(bp, gguf, work, requests):
    from llamacpp_server_check import restart_flags, stop_server
    db = os.path.join(work, "pick.db")
    if os.path.exists(db):
        os.remove(db)
    base = [bp, "--db", db]
    trace = ["--limit", str(requests), "--length-scale", "0.2", "--speed", "2"]
    current = ["-np", "1", "-c", "4096"]
    proc, url = start(gguf, work, current, "pick-current")
    try:
        run(base + ["import-trace", "--sample"])
        cal = run(base + ["calibrate", "--target", url, "--protocol", "openai", "--model", "tiny",
                          "--vocab-size", "400", "--max-length", "1024", "--max-concurrency", "8"])
        cid = re.search(r"calibration (\d+):", cal.stdout).group(1)
        before = measure(base, url, trace)
        bound = max(1.0, number(before["TTFT p99 (ms)"]) / 2)
        tune = run(base + ["tune", "--trace", "1", "--target", url, "--model", "tiny", "--calibration", cid,
                           "--slo", "ttft_p99<=%.0fms" % bound, "--objective", "throughput"] + trace)
    finally:
        stop_server(proc)
    flags = restart_flags(tune.stdout)
    proc, url = start(gguf, work, flags, "pick-after")
    try:
        after = measure(base, url, trace)
    finally:
        stop_server(proc)
    print("llama-server %s -> %s; SLO TTFT p99 <= %.0f ms; %d arrivals, lengths x0.2, speed 2" %
          (" ".join(current), " ".join(flags), bound, requests))
    print()
    print(tune.stdout)
    print("| settings | throughput (req/s) | TTFT p50 (ms) | TTFT p99 (ms) | TPOT p50 (ms) | TPOT p99 (ms) | "
          "completed |")
    print("|---|---|---|---|---|---|---|")
    for name, m in (("current (%s), measured" % " ".join(current), before),
                    ("pick (%s), measured" % " ".join(flags), after)):
        print("| %s | %s |" % (name, " | ".join(m[k] for k in ("throughput (req/s)", "TTFT p50 (ms)",
                                                                 "TTFT p99 (ms)", "TPOT p50 (ms)",
                                                                 "TPOT p99 (ms)", "completed"))))
    return 0


def sensitivity(bp, db, requests):
    """The probe's calibration (id 1) of an earlier run's DB with every cost
    term scaled: each simulated against that run's measured replay."""
    import json
    import sqlite3
    con = sqlite3.connect(db)
    cols = "created_at_us, model, preset, device, threads, source, calibration, target_url, server, dtype"
    row = con.execute("select %s from calibrations where id = 1" % cols).fetchone()
    measured = con.execute("select id from sessions where kind = 'remote' order by id limit 1").fetchone()
    if not row or not measured:
        sys.exit("%s: no calibration 1 or no measured replay (a database llamacpp_truth.py --work kept)" % db)
    slots = json.loads(row[6])["remote"]["settings"]["settings"].get("n_parallel", "?")
    print("| pace (cost terms x) | %s | median \\|error\\| |" % " | ".join(METRICS))
    print("|---|---|---|---|---|---|---|")
    for k in (0.85, 1.0, 1.15, 1.3):
        cal = json.loads(row[6])
        cal["cost_model"]["iteration"] = [x * k for x in cal["cost_model"]["iteration"]]
        cid = con.execute("insert into calibrations (%s) values (?,?,?,?,?,?,?,?,?,?)" % cols,
                          row[:6] + ("",) + row[7:]).lastrowid
        cal["id"] = cid
        con.execute("update calibrations set calibration = ?, source = ? where id = ?",
                    (json.dumps(cal), "%s, cost terms x%.2f" % (row[5], k), cid))
        con.commit()
        limit = requests if slots != 1 else requests // 2
        sim = run([bp, "--db", db, "replay", "1", "--trace", "--simulate", "--calibration", str(cid), "--compare",
                   str(measured[0]), "--limit", str(limit), "--length-scale", "0.05"])
        figures = errors(sim.stdout)
        print("| x%.2f | %s | %.0f%% |" % (k, " | ".join("%.3g (%+.0f%%)" % (f[2], 100 * f[3]) for f in figures),
                                          100 * statistics.median(abs(f[3]) for f in figures)))
        sys.stdout.flush()
    return 0


def least_squares(rows):
    """Ordinary least squares of y on x (rows of (x, y)) by the normal equations."""
    k = len(rows[0][0])
    m = [[sum(x[i] * x[j] for x, _ in rows) for j in range(k)] + [sum(x[i] * y for x, y in rows)]
         for i in range(k)]
    for c in range(k):
        p = max(range(c, k), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        for r in range(k):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [a - f * b for a, b in zip(m[r], m[c])]
    return [m[i][k] / m[i][i] for i in range(k)]


def decompose(db):
    """TPOT = base + a * other decoders + b * others' prompt tokens per own token,
    over the measured replay and over its simulation on the probe's calibration."""
    import sqlite3
    con = sqlite3.connect(db)
    measured = con.execute("select id from sessions where kind = 'remote' order by id limit 1").fetchone()
    # the run simulates the probe's calibration first, the refreshed one second
    simulated = con.execute("select id from sessions where kind = 'simulation' order by id limit 1").fetchone()
    if not measured or not simulated:
        sys.exit("%s: no measured replay or no simulation of it (a database llamacpp_truth.py --work kept)" % db)
    print("| session | requests | base (ms) | per other decoder (ms) | per prompt token of others, per own token (ms) |")
    print("|---|---|---|---|---|")
    for name, sid in (("measured", measured[0]), ("simulated (probe)", simulated[0])):
        reqs = [dict(zip(("arrival", "ttft", "total", "prompt", "out"), r)) for r in con.execute(
            "select arrival_ns / 1e9, ttft_ns / 1e9, total_ns / 1e9, input_tokens, output_tokens from requests "
            "where session_id = ? and status = 'ok'", (sid,))]
        for r in reqs:
            r["decode"], r["end"] = r["arrival"] + r["ttft"], r["arrival"] + r["total"]
        rows = []
        for t in reqs:
            a, b = t["decode"], t["end"]
            if t["out"] < 4 or b <= a:
                continue
            beside = sum(max(0.0, min(b, u["end"]) - max(a, u["decode"])) for u in reqs if u is not t) / (b - a)
            prompts = sum(u["prompt"] for u in reqs if u is not t and a < u["arrival"] < b) / (t["out"] - 1)
            rows.append(([1.0, beside, prompts], 1e3 * (b - a) / (t["out"] - 1)))
        base, per_decoder, per_prompt_token = least_squares(rows)
        print("| %s | %d | %.2f | %.2f | %.3f |" % (name, len(rows), base, per_decoder, per_prompt_token))
    return 0


def unknown(bp, gguf, work, runs):
    import threading
    from llamacpp_server_check import HidingProxy, make_handler, stop_server
    trace = ["--limit", "40", "--length-scale", "0.05"]
    print("| run | level inferred | %s | median \\|error\\| |" % " | ".join(METRICS))
    print("|---|---|---|---|---|---|---|---|")
    for i in range(1, runs + 1):
        db = os.path.join(work, "unknown-%d.db" % i)
        if os.path.exists(db):
            os.remove(db)
        base = [bp, "--db", db]
        proc, url = start(gguf, work, ["-np", "2", "-c", "2048"], "unknown-%d" % i)
        proxy = HidingProxy(("127.0.0.1", 0), make_handler(int(url.rsplit(":", 1)[1])))
        threading.Thread(target=proxy.serve_forever, daemon=True).start()
        purl = "http://127.0.0.1:%d" % proxy.server_address[1]
        try:
            run(base + ["import-trace", "--sample"])
            cal = run(base + ["calibrate", "--target", purl, "--protocol", "openai", "--model", "tiny",
                              "--vocab-size", "400", "--max-length", "1024", "--max-concurrency", "4", "--quick"])
            cid = re.search(r"calibration (\d+):", cal.stdout).group(1)
            level = re.search(r"(iteration|request)-level: in the mixed round", cal.stderr)
            real = run(base + ["replay", "1", "--trace", "--target", purl, "--protocol", "openai", "--model",
                               "tiny", "--vocab-size", "400", "--max-length", "1024"] + trace)
            sid = re.search(r"session (\d+)", real.stdout + real.stderr).group(1)
            sim = subprocess.run(base + ["replay", "1", "--trace", "--simulate", "--calibration", cid, "--compare",
                                         sid] + trace, capture_output=True, text=True, timeout=900)
        finally:
            proxy.shutdown()
            stop_server(proc)
        if sim.returncode != 0:
            print("| %d | not told (replay --simulate refused) | | | | | | |" % i)
            continue
        rows = table(sim.stdout)
        errors = []
        for m in METRICS:
            measured, predicted = number(rows[m][0]), number(rows[m][1])
            errors.append((predicted - measured) / measured if measured else 0.0)
        print("| %d | %s | %s | %.0f%% |" % (i, level.group(1) if level else "?",
                                           " | ".join("%+.0f%%" % (100 * e) for e in errors),
                                           100 * statistics.median(abs(e) for e in errors)))
        sys.stdout.flush()
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slots", default="1,4,8")
    ap.add_argument("--requests", type=int, default=240)
    ap.add_argument("--batchpilot", default=os.path.join(ROOT, "build", "default", "app", "batchpilot"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--pick", action="store_true", help="the tuner's pick against one slot, both measured")
    ap.add_argument("--repeat", action="store_true",
                    help="replay the same arrivals into a fresh server of the same flags a second time (another "
                         "~70 s a slot count): the row 'measured again' is how far the measurement moves by itself")
    ap.add_argument("--pick-requests", type=int, default=120)
    ap.add_argument("--sensitivity", metavar="DB", help="the prediction with every cost term x0.85..x1.3, "
                    "against the measured replay of an earlier run's DB (--work DIR/slots-N.db)")
    ap.add_argument("--decompose", metavar="DB", help="TPOT fitted over the other decoders and the others' prompt "
                    "tokens, measured and simulated, from an earlier run's DB")
    ap.add_argument("--unknown", type=int, default=0, metavar="N",
                    help="the unknown-kind path N times (a fresh server behind a proxy hiding its kind each)")
    a = ap.parse_args()
    if a.decompose:
        return decompose(a.decompose)
    if a.sensitivity:
        print("llamacpp_truth --sensitivity: four simulations, nothing sent; ~10-20 s", file=sys.stderr)
        return sensitivity(a.batchpilot, a.sensitivity, a.requests)
    if not os.access(llama_server(), os.X_OK):
        sys.exit("no llama-server at %s (packaging/install-llama-cpp.sh --build builds it)" % llama_server())
    work = a.work or tempfile.mkdtemp(prefix="llamacpp-truth-")
    os.makedirs(work, exist_ok=True)
    gguf = os.path.join(work, "tiny.gguf")
    if not os.path.exists(gguf):
        run([sys.executable, os.path.join(ROOT, "tools", "make_tiny_gguf.py"), gguf])
    if a.unknown > 0:
        print("llamacpp_truth --unknown %d: a calibration and a replay of 40 arrivals each; ~40 s a run" %
              a.unknown, file=sys.stderr)
        return unknown(a.batchpilot, gguf, work, a.unknown)
    if a.pick:
        print("llamacpp_truth --pick: one calibration, two replays of %d arrivals; ~3 min" % a.pick_requests,
              file=sys.stderr)
        return pick(a.batchpilot, gguf, work, a.pick_requests)
    print("llamacpp_truth: slots %s, %d requests each (half at 1 slot); ~2-3 min per slot count" %
          (a.slots, a.requests), file=sys.stderr)
    print("| slots | | throughput | TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 | median \\|error\\| | "
          "probe fit (median) | pace before / after the replay | load before |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in [int(s) for s in a.slots.split(",")]:
        (probe, fresh), again, (before, after), fit, load = one(a.batchpilot, gguf, work, n, a.requests, a.repeat)
        print("| %d | measured | %s | | | | |" % (n, " | ".join("%.3g" % f[1] for f in probe)))
        rows = (("predicted (probe)", probe, "%s%% | x%.3f / x%.3f | %s" % (fit, before, after, load)),
                ("predicted (refreshed)", fresh, "| |")) + ((("measured again", again, "| |"),) if again else ())
        for name, figures, extra in rows:
            med = statistics.median(abs(e) for _, _, _, e in figures)
            print("| | %s | %s | **%.0f%%** | %s |" % (
                name, " | ".join("%.3g (%+.0f%%)" % (f[2], 100 * f[3]) for f in figures), 100 * med, extra))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
