#!/usr/bin/env python3
"""ctest autoscale_verify: tools/autoscale_verify.py end to
end, short: real `batchpilot --headless` servers (builtin:tiny-decoder, one
thread each) scaled 1 -> 2 -> 1 by `autoscale --decide` over a 40 s trace
(1 request/s, 8/s from 10 s to 25 s in pairs of simultaneous arrivals, then
1/s again; 4 tokens out), a decision every 2 s, a 5 s cold start.

The policy is reactive on the request rate (target 3 per replica): its
scale-up and scale-down follow the arrivals the test sends, not the servers'
speed, so what is checked holds on a loaded machine. Checked: a scale-up
happened and a replica started after the first served only from its
decision + the cold start on (no request routed to it before, some after);
a drained replica was terminated holding nothing; every request answered;
the report's shape (timeline rows of 5, windows with requests/attainment/
p99); no server process is left. No latency is asserted.

usage: autoscale_verify_check.py BATCHPILOT TOOL WORKDIR
"""
import csv
import json
import os
import random
import subprocess
import sys


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is gone for our purposes; /proc says which.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1].split()[0] != "Z"
    except OSError:
        return False


def main():
    batchpilot, tool, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    trace = os.path.join(work, "step40.csv")
    rng = random.Random(37)
    with open(trace, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["arrival_s", "input_tokens", "output_tokens"])
        t = 0.0
        while True:
            # The peak comes in pairs of simultaneous arrivals: the first is
            # outstanding when the second is routed, so once a second replica
            # serves, least-outstanding sends it the second of each pair.
            peak = 10 <= t < 25
            t += 1 / 4 if peak else 1.0
            if t >= 40:
                break
            for _ in range(2 if peak else 1):
                w.writerow([f"{t:.3f}", rng.randint(16, 48), 4])
    report_path = os.path.join(work, "report.json")
    cmd = [sys.executable, tool, "--batchpilot", batchpilot, "--trace", trace, "--slo", "p99<=2s",
           "--period", "2s", "--cold-start", "5s", "--window", "10s", "--duration", "60s", "-v",
           "-o", report_path, "--",
           "--policy", "reactive", "--metric", "rate", "--target", "3", "--min", "1", "--max", "2",
           "--down-window", "6s"]
    print(" ".join(cmd), flush=True)
    run = subprocess.run(cmd, timeout=85)
    if run.returncode != 0:
        fail(f"autoscale_verify.py exited with {run.returncode}")
    with open(report_path) as f:
        report = json.load(f)

    # The report's shape.
    if report["timeline_columns"] != ["at_s", "ready", "starting", "draining", "wanted"]:
        fail(f"timeline columns {report['timeline_columns']}")
    if not report["timeline"] or any(len(row) != 5 for row in report["timeline"]):
        fail("timeline rows are not [at_s, ready, starting, draining, wanted]")
    times = [row[0] for row in report["timeline"]]
    if times != sorted(times) or abs(times[0] - 2.0) > 1e-6:
        fail(f"decisions not every period from one period in: {times[:5]}")
    if len(report["windows"]) != 4:
        fail(f"{len(report['windows'])} windows of 10 s over a 40 s trace, not 4")
    for w in report["windows"]:
        for key in ("begin_s", "requests", "attainment", "p99_s", "ttft_p99_s", "met"):
            if key not in w:
                fail(f"window without {key}: {w}")
    if sum(w["requests"] for w in report["windows"]) != report["requests"]:
        fail("the windows do not hold every request")
    if report["failed"]:
        fail(f"{report['failed']} requests failed: "
             f"{[q.get('error') for q in report['requests_detail'] if not q['ok']][:3]}")

    # Started and stopped per the decisions.
    events = report["events"]
    ups = [e for e in events if e["phase"] == "starting"]
    if not ups:
        fail("no scale-up (the policy should have asked for a second replica)")
    if max(row[4] for row in report["timeline"]) != 2 or max(row[1] for row in report["timeline"]) != 2:
        fail("the fleet never had 2 ready replicas")
    for up in ups:
        ready = next((e for e in events if e["slot"] == up["slot"] and e["phase"] == "ready"
                      and e["at_s"] >= up["at_s"]), None)
        if ready is None:
            continue  # cancelled before it served
        if ready["at_s"] < up["ready_at_s"] - 1e-3:
            fail(f"replica {up['slot']} served at {ready['at_s']} s, before its cold start ended "
                 f"({up['ready_at_s']} s)")
        if abs(up["ready_at_s"] - up["at_s"] - 5.0) > 0.5:
            fail(f"replica {up['slot']}: ready_at {up['ready_at_s']} s is not its decision + 5 s")
        gone = next((e for e in events if e["slot"] == up["slot"] and e["phase"] == "gone"
                     and e["at_s"] >= ready["at_s"]), None)
        end = gone["at_s"] if gone else float("inf")
        routed = [q for q in report["requests_detail"] if q["replica"] == up["slot"]
                  and up["at_s"] <= q["arrival_s"] < end]
        early = [q for q in routed if q["arrival_s"] < ready["at_s"] - 1e-3]
        if early:
            fail(f"{len(early)} requests routed to replica {up['slot']} before it served")
        if not routed:
            fail(f"nothing was routed to replica {up['slot']} once it served")
        print(f"replica {up['slot']}: asked for at {up['at_s']} s, served from {ready['at_s']} s, "
              f"{len(routed)} requests routed to it")
    drains = [e for e in events if e["phase"] == "draining"]
    if not drains:
        fail("no replica was drained (the policy should have scaled back to 1)")
    for d in drains:
        gone = next((e for e in events if e["slot"] == d["slot"] and e["phase"] == "gone"
                     and e["at_s"] >= d["at_s"]), None)
        if gone is None:
            fail(f"drained replica {d['slot']} was not terminated")
        if gone["outstanding"] != 0:
            fail(f"replica {d['slot']} was terminated holding {gone['outstanding']} requests")
    if report["timeline"][-1][1] != 1:
        fail(f"the run ended with {report['timeline'][-1][1]} ready replicas, not 1")

    # Nothing left running.
    if report["leftover_pids"]:
        fail(f"processes left: {report['leftover_pids']}")
    left = [pid for pid in report["server_pids"] if alive(pid)]
    if left:
        fail(f"server processes still alive: {left}")
    if len(report["server_pids"]) < 2:
        fail(f"{len(report['server_pids'])} server processes started, not at least 2")
    print(f"PASS: {report['requests']} requests, {len(report['server_pids'])} servers started and stopped, "
          f"{len(ups)} scale-ups, {len(drains)} drains")


if __name__ == "__main__":
    main()
