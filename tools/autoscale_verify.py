#!/usr/bin/env python3
"""Verify the autoscaler simulation against real servers.

A client-side controller that scales a fleet of real `batchpilot --headless`
processes by the decisions of `batchpilot autoscale --decide` (the same
policy code the simulation runs), replays a trace's arrivals on them, and
writes what happened in the simulation's shape (docs/capacity.md,
"Verification against live servers"):

  - every period (the first decision one period in, as the simulator's):
    scrape each ready replica's /metrics, fold them into one observation as
    engine/sim/fleet/fleet_watch.cpp does (waiting, running, KV usage, the
    accepted-requests counter differenced into a rate), feed it to
    `--decide`, and apply the answer with the simulator's rules
    (engine/sim/simulation/fleet_scaling.h): a scale-up starts a server
    process now and routes to it only `--cold-start` after the decision
    (earlier readiness waits; later readiness is reported); a scale-down
    cancels the newest starting replica first, else drains the ready one
    with the fewest outstanding requests (ties: the highest slot; never the
    last): nothing new is routed to it and its process is terminated once it
    holds nothing;
  - the trace's arrivals are sent on time (a thread each) to
    /v1/completions as token ids with max_tokens = the row's output tokens,
    streamed, routed least-outstanding over the ready replicas (ties: the
    lowest slot); each request's arrival, TTFT, TPOT, end to end and
    failure are recorded;
  - the report (JSON): timeline rows [at_s, ready, starting, draining,
    wanted] per decision, the replicas' events, the windows (requests,
    attainment: the share of a window's requests meeting every bound, a
    failed request missing; p99s nearest-rank, a failed request infinitely
    late), and with --sim FILE (the simulation's `autoscale --trace --json`
    document) the comparison: each change of the ready count in the
    simulation paired in order with the live one (offset <= one period) and
    per window |attainment_live - attainment_sim| <= --max-points (5).

Exit status: 0 when the run finished (and, with --sim, both bounds hold);
1 when a bound does not hold; 2 on a usage error; 3 when the run failed
(a server did not start, the policy refused an observation); 130 on Ctrl-C.
Every server process started is terminated on every exit (its own process
group, SIGTERM then SIGKILL).

usage: autoscale_verify.py --batchpilot BIN --trace FILE.csv --slo 'p99<=2s'
           [--period 5s] [--cold-start 20s] [--window 60s] [--rate-scale K]
           [--initial N] [--duration 10m] [--model M] [--preset P]
           [--server-threads 1] [--config FILE.json] [--warmup N]
           [--sim SIM.json] [--max-points 5] [-o REPORT.json]
           -- POLICY FLAGS (passed to `autoscale --decide`, e.g.
              --policy reactive --metric queue --target 2 --min 1 --max 3
              --down-window 30s)
The trace is a CSV with arrival_s,input_tokens,output_tokens (the plain form
`import-trace` reads); Python 3 standard library only.
"""
import argparse
import csv
import http.client
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time

EXIT_OK, EXIT_BOUND, EXIT_USAGE, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def parse_len(text):
    """'5s', '500ms', '2m', '1h' or a plain number of seconds."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|min|h)?\s*", str(text))
    if not m:
        raise argparse.ArgumentTypeError(f"'{text}' is not a length (5s, 500ms, 2m)")
    value = float(m.group(1))
    return value * {"ms": 1e-3, "s": 1, None: 1, "m": 60, "min": 60, "h": 3600}[m.group(2)]


def parse_slo(text):
    """'p99<=2s' or 'ttft_p99<=500ms,tpot_p99<=50ms' -> {e2e, ttft, tpot} seconds (absent: None)."""
    bounds = {"e2e": None, "ttft": None, "tpot": None}
    keys = {"p99": "e2e", "e2e_p99": "e2e", "ttft_p99": "ttft", "tpot_p99": "tpot"}
    for part in text.split(","):
        m = re.fullmatch(r"\s*([a-z0-9_]+)\s*<=\s*(.+?)\s*", part)
        if not m or m.group(1) not in keys:
            raise argparse.ArgumentTypeError(f"--slo: '{part}' is not p99<=LEN, ttft_p99<=LEN or tpot_p99<=LEN")
        bounds[keys[m.group(1)]] = parse_len(m.group(2))
    return bounds


def read_trace(path, rate_scale):
    """(offset_s, input_tokens, output_tokens) per row, in arrival order: offsets from the earliest
    arrival (as import-trace stores them) divided by the rate scale (as traceArrivals)."""
    rows = []
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        if [h.strip() for h in header[:3]] != ["arrival_s", "input_tokens", "output_tokens"]:
            raise ValueError(f"{path}: the header must be arrival_s,input_tokens,output_tokens")
        for row in reader:
            if row:
                rows.append((float(row[0]), int(row[1]), int(row[2])))
    rows.sort(key=lambda r: r[0])
    first = rows[0][0] if rows else 0.0
    return [((t - first) / rate_scale, i, o) for t, i, o in rows]


# ---- Prometheus text: the few sums fleet_watch reads.
def parse_metrics(text):
    """{name: [(labels dict, value)]}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)", line)
        if not m:
            continue
        labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        out.setdefault(m.group(1), []).append((labels, value))
    return out


def metric_sum(metrics, name, **labels):
    if name not in metrics:
        return None
    found = [v for l, v in metrics[name] if all(l.get(k) == w for k, w in labels.items())]
    return sum(found) if found else None


def reading_of(metrics):
    """What target_metrics.cpp maps from a BatchPilot server: waiting, running, KV usage, accepted counter."""
    continuous = (metric_sum(metrics, "batchpilot_config_policy", policy="continuous") or 0) > 0 \
        if "batchpilot_config_policy" in metrics else "batchpilot_running_sequences" in metrics
    waiting = running = kv = None
    if continuous:
        running = metric_sum(metrics, "batchpilot_running_sequences")
        waiting = metric_sum(metrics, "batchpilot_waiting_sequences")
        ratio = metric_sum(metrics, "batchpilot_kv_cache_usage_ratio")
        tokens = metric_sum(metrics, "batchpilot_kv_cache_tokens")
        if ratio is not None and not (ratio == 0 and tokens is not None and tokens > 0):
            kv = ratio
    if waiting is None:
        waiting = metric_sum(metrics, "batchpilot_queue_depth")
    return {"waiting": waiting or 0.0, "running": running or 0.0, "kv_usage": kv,
            "counter": metric_sum(metrics, "batchpilot_requests_accepted_total")}


def http_get(port, path, timeout):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise OSError(f"GET {path}: HTTP {resp.status}")
        return body.decode("utf-8", "replace")
    finally:
        conn.close()


class Replica:
    def __init__(self, slot, asked_s, ready_at_s):
        self.slot = slot
        self.asked_s = asked_s
        self.ready_at_s = ready_at_s  # the decision + the cold start
        self.phase = "starting"  # starting -> ready -> draining -> gone (or starting -> gone)
        self.proc = None
        self.port = None
        self.listening = threading.Event()
        self.listening_s = None  # when it printed 'listening on' (controller clock)
        self.warm = threading.Event()
        self.outstanding = 0
        self.served = 0
        self.late_s = 0.0  # readiness after ready_at_s
        self.terminated_outstanding = None
        self.counter = None  # (value, at_s): the last accepted-requests counter read


class Controller:
    def __init__(self, args, policy_flags, rows):
        self.args = args
        self.policy_flags = policy_flags
        self.rows = rows
        self.lock = threading.Lock()
        self.replicas = []  # by slot; gone slots are reused (lowest first), as the simulator's
        self.all_procs = []  # every process started, for the cleanup
        self.events = []
        self.timeline = []
        self.decisions = []
        self.requests = [None] * len(rows)
        self.notes = []
        self.t0 = None
        self.decide_proc = None
        self.log = sys.stderr
        self.stopping = False
        self.drained_threads = []

    # ---- clock
    def now(self):
        return time.monotonic() - self.t0 if self.t0 is not None else 0.0

    def event(self, r, phase, **extra):
        e = {"at_s": round(self.now(), 4), "slot": r.slot, "phase": phase}
        e.update(extra)
        self.events.append(e)
        if self.args.verbose:
            print(f"[{e['at_s']:7.2f} s] replica {r.slot} {phase} {extra if extra else ''}", file=self.log)

    # ---- processes
    def server_command(self):
        cmd = [self.args.batchpilot, "--headless", "--model", self.args.model, "--port", "0", "--no-log",
               "--threads", str(self.args.server_threads)]
        if self.args.preset:
            cmd += ["--preset", self.args.preset]
        if self.args.config:
            cmd += ["--config", self.args.config]
        return cmd

    def launch(self, r):
        err = open(os.devnull, "wb") if not self.args.server_logs else open(
            os.path.join(self.args.server_logs, f"replica-{len(self.all_procs)}.log"), "wb")
        r.proc = subprocess.Popen(self.server_command(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=err, start_new_session=True)
        err.close()
        self.all_procs.append(r.proc)

        def read_stdout():
            for raw in r.proc.stdout:
                line = raw.decode("utf-8", "replace").strip()
                m = re.search(r"listening on http://[^:/]+:(\d+)", line)
                if m and not r.listening.is_set():
                    r.port = int(m.group(1))
                    r.listening_s = self.now()
                    r.listening.set()
                    threading.Thread(target=self.warm_up, args=(r,), daemon=True).start()
            r.proc.stdout.close()

        threading.Thread(target=read_stdout, daemon=True).start()

    def warm_up(self, r):
        """A few requests during the cold start (warm-up is part of it); not recorded."""
        for _ in range(self.args.warmup):
            try:
                self.complete(r.port, 16, 4, timeout=60)
            except Exception:
                pass
        r.warm.set()

    def terminate(self, proc, grace=10.0):
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(5)

    def cleanup(self):
        self.stopping = True
        if self.decide_proc and self.decide_proc.poll() is None:
            try:
                self.decide_proc.stdin.close()
            except OSError:
                pass
            self.terminate(self.decide_proc, grace=2)
        for p in self.all_procs:
            self.terminate(p, grace=5)

    # ---- the fleet (self.lock held)
    def count(self, phase):
        return sum(1 for r in self.replicas if r.phase == phase)

    def new_replica(self, asked_s, cold_s):
        slot = 0
        while slot < len(self.replicas) and self.replicas[slot].phase != "gone":
            slot += 1
        r = Replica(slot, asked_s, asked_s + cold_s)
        if slot < len(self.replicas):
            self.replicas[slot] = r
        else:
            self.replicas.append(r)
        return r

    def route(self):
        best = None
        for r in self.replicas:
            if r.phase == "ready" and (best is None or r.outstanding < best.outstanding):
                best = r
        if best:
            best.outstanding += 1
        return best

    def finished(self, r):
        with self.lock:
            r.outstanding -= 1
            r.served += 1
            drained = r.phase == "draining" and r.outstanding == 0
            if drained:
                self.retire(r)

    def retire(self, r):
        """Gone (lock held): the process is terminated outside the lock."""
        before = r.phase
        r.phase = "gone"
        r.terminated_outstanding = r.outstanding
        self.event(r, "gone", outstanding=r.outstanding, was=before)
        t = threading.Thread(target=self.terminate, args=(r.proc,), daemon=True)
        t.start()
        self.drained_threads.append(t)

    # ---- requests
    def complete(self, port, input_tokens, output_tokens, timeout):
        """One streamed completion: (ttft_s, end_s, tokens) from the request's send."""
        prompt = [(7 * i + 3) % 251 + 1 for i in range(max(1, input_tokens))]
        body = json.dumps({"prompt": prompt, "max_tokens": max(1, output_tokens), "stream": True})
        sent = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            if resp.status != 200:
                raise OSError(f"HTTP {resp.status}: {resp.read()[:200]!r}")
            ttft = None
            tokens = 0
            while True:
                line = resp.readline()
                if not line:
                    break
                line = line.strip()
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    break
                chunk = json.loads(data)
                if "error" in chunk:
                    raise OSError(f"stream error: {chunk['error']}")
                choices = chunk.get("choices") or []
                if choices and choices[0].get("finish_reason") is None:  # a token's chunk
                    if ttft is None:
                        ttft = time.monotonic() - sent
                    tokens += 1
                elif choices and ttft is None:  # tokens handed over only with the completion
                    ttft = time.monotonic() - sent
            end = time.monotonic() - sent
            if ttft is None:
                raise OSError("no token streamed")
            return ttft, end, tokens
        finally:
            conn.close()

    def send(self, index, arrival_s):
        offset, inp, out = self.rows[index]
        rec = {"i": index, "arrival_s": round(arrival_s, 4), "due_s": round(offset, 4), "replica": None,
               "ok": False}
        with self.lock:
            r = self.route()
        if r is None:
            rec["error"] = "no ready replica"
            self.requests[index] = rec
            return
        rec["replica"] = r.slot
        try:
            ttft, end, tokens = self.complete(r.port, inp, out, timeout=self.args.request_timeout)
            rec.update(ok=True, ttft_s=ttft, e2e_s=end, tokens=tokens,
                       tpot_s=(end - ttft) / (out - 1) if out > 1 else 0.0)
        except Exception as e:  # a failed request misses every bound
            rec["error"] = str(e)[:200]
        finally:
            self.finished(r)
        self.requests[index] = rec

    def replay(self, rows_sent):
        threads = []
        for i in range(rows_sent):
            due = self.rows[i][0]
            delay = due - self.now()
            if delay > 0:
                time.sleep(delay)
            if self.stopping:
                break
            t = threading.Thread(target=self.send, args=(i, self.now()), daemon=True)
            t.start()
            threads.append(t)
        for t in threads:
            t.join()

    # ---- decisions
    def scrape(self, r, timeout):
        try:
            return reading_of(parse_metrics(http_get(r.port, "/metrics", timeout)))
        except Exception as e:
            return {"error": str(e)[:200]}

    def observe(self, at_s):
        with self.lock:
            ready = [r for r in self.replicas if r.phase == "ready"]
            starting = [r for r in self.replicas if r.phase == "starting"]
        timeout = min(max(self.args.period, 1.0), 10.0)
        # Starting replicas whose process is up are read too, for their
        # counter only: the first period they serve then has a rate (fleet_watch
        # would start a new URL's rate one round late).
        targets = ready + [r for r in starting if r.listening.is_set()]
        readings = [None] * len(targets)

        def one(k):
            readings[k] = self.scrape(targets[k], timeout)

        ts = [threading.Thread(target=one, args=(k,)) for k in range(len(targets))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        o = {"at_s": round(at_s, 4), "ready": 0, "starting": len(starting), "waiting": 0.0, "running": 0.0,
             "kv_usage": 0.0, "arrival_rate": 0.0}
        kv = []
        servers = []
        for r, s in zip(targets, readings):
            rate = None
            if "error" not in s and s["counter"] is not None:
                if r.counter and at_s > r.counter[1] and s["counter"] >= r.counter[0]:
                    rate = (s["counter"] - r.counter[0]) / (at_s - r.counter[1])
                r.counter = (s["counter"], at_s)
            elif "error" in s:
                r.counter = None
            if r.phase != "ready":
                continue
            servers.append(dict(slot=r.slot, rate=rate, **{k: v for k, v in s.items() if k != "counter"}))
            if "error" in s:
                continue  # not answering: not ready (fleet_watch)
            o["ready"] += 1
            o["waiting"] += s["waiting"]
            o["running"] += s["running"]
            o["arrival_rate"] += rate or 0.0
            if s["kv_usage"] is not None:
                kv.append(s["kv_usage"])
        o["kv_usage"] = sum(kv) / len(kv) if kv else 0.0
        return o, servers

    def decide(self, o):
        self.decide_proc.stdin.write((json.dumps(o) + "\n").encode())
        self.decide_proc.stdin.flush()
        line = self.decide_proc.stdout.readline()
        if not line:
            raise RuntimeError("autoscale --decide ended")
        d = json.loads(line)
        if "error" in d:
            raise RuntimeError(f"autoscale --decide refused {json.dumps(o)}: {d['error']}")
        return d

    def apply(self, at_s, wanted):
        """The simulator's rules (simulator.cpp decideScale), lock held."""
        active = self.count("ready") + self.count("starting")
        ups = []
        while active < wanted:
            r = self.new_replica(at_s, self.args.cold_start)
            self.event(r, "starting", ready_at_s=round(r.ready_at_s, 4))
            ups.append(r)
            active += 1
        while active > wanted:
            cancel = drain = None
            ready = 0
            for r in self.replicas:
                if r.phase == "starting" and (cancel is None or r.asked_s >= cancel.asked_s):
                    cancel = r
                if r.phase == "ready":
                    ready += 1
                    if drain is None or r.outstanding <= drain.outstanding:
                        drain = r
            if cancel:
                self.retire(cancel)
            elif drain and ready > 1:
                drain.phase = "draining"
                self.event(drain, "draining", outstanding=drain.outstanding)
                if drain.outstanding == 0:
                    self.retire(drain)
            else:
                break
            active -= 1
        return ups

    def promote(self, r):
        """A starting replica serves (lock held) once its cold start has passed and its process is ready."""
        r.phase = "ready"
        r.late_s = max(0.0, self.now() - r.ready_at_s)
        extra = {"listening_after_s": round(r.listening_s - r.asked_s, 3)}
        if r.late_s > 0.05:
            extra["late_s"] = round(r.late_s, 3)
            self.notes.append(f"replica {r.slot} asked for at {r.asked_s:.1f} s served {r.late_s:.2f} s after "
                              f"its cold start ended (its process was not ready yet)")
        self.event(r, "ready", **extra)

    def promote_due(self):
        with self.lock:
            for r in self.replicas:
                if r.phase == "starting" and self.now() >= r.ready_at_s - 1e-3 and r.listening.is_set() \
                        and r.warm.is_set():
                    self.promote(r)

    def next_ready_at(self):
        with self.lock:
            due = [r.ready_at_s for r in self.replicas if r.phase == "starting"]
            late = any(r.phase == "starting" and r.ready_at_s <= self.now() for r in self.replicas)
        if late:
            return self.now() + 0.02  # waiting for a late process
        return min(due) if due else math.inf

    # ---- the run
    def start_fleet(self, n):
        with self.lock:
            first = [self.new_replica(0.0, 0.0) for _ in range(n)]
        for r in first:
            self.launch(r)
        deadline = time.monotonic() + self.args.start_timeout
        for r in first:
            while not (r.listening.is_set() and r.warm.is_set()):
                if r.proc.poll() is not None:
                    raise RuntimeError(f"server {r.slot} exited with status {r.proc.returncode} before listening "
                                       f"({' '.join(self.server_command())})")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"server {r.slot} did not listen within {self.args.start_timeout:.0f} s")
                time.sleep(0.05)
        return first

    def run(self):
        a = self.args
        cmd = [a.batchpilot, "autoscale", "--decide", "--period", f"{a.period}s"] + self.policy_flags
        self.decide_proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, start_new_session=True)
        self.all_procs.append(self.decide_proc)
        try:  # flags it refuses end it at once: say so before starting servers
            self.decide_proc.wait(1.0)
            raise RuntimeError(f"autoscale --decide exited with status {self.decide_proc.returncode}")
        except subprocess.TimeoutExpired:
            pass
        first = self.start_fleet(a.initial)
        rows_sent = len(self.rows)
        if a.duration and self.rows and self.rows[-1][0] > a.duration:
            rows_sent = sum(1 for r in self.rows if r[0] <= a.duration)
            self.notes.append(f"--duration {a.duration:.0f} s: {len(self.rows) - rows_sent} of "
                              f"{len(self.rows)} arrivals after it were not sent")
        last_s = self.rows[rows_sent - 1][0] if rows_sent else 0.0
        self.t0 = time.monotonic()
        for r in first:
            r.phase = "ready"
            self.event(r, "ready", listening_after_s=None)
        replay = threading.Thread(target=self.replay, args=(rows_sent,), daemon=True)
        replay.start()
        k = 1
        # Decisions while arrivals are left (the simulator's scalingActive).
        while True:
            decision_s = k * a.period
            if decision_s > last_s:
                break
            while True:
                wake = min(decision_s, self.next_ready_at())
                delay = wake - self.now()
                if delay > 0:
                    time.sleep(min(delay, 0.25) if wake == decision_s else delay)
                self.promote_due()
                if self.now() >= decision_s:
                    break
            o, servers = self.observe(decision_s)
            d = self.decide(o)
            wanted = max(1, min(int(d["replicas"]), a.max))
            with self.lock:
                # The row: the fleet at the decision, before it applies (the simulator's onDecision).
                row = [round(decision_s, 4), self.count("ready"), self.count("starting"),
                       self.count("draining"), wanted]
                ups = self.apply(decision_s, wanted)
            self.timeline.append(row)
            self.decisions.append({"at_s": round(decision_s, 4), "observed_at_s": round(self.now(), 4),
                                   "observation": o, "servers": servers, "replicas": d["replicas"],
                                   "why": d.get("why", "")})
            if a.verbose:
                print(f"[{decision_s:7.2f} s] ready {o['ready']} starting {o['starting']} waiting "
                      f"{o['waiting']:g} running {o['running']:g} rate {o['arrival_rate']:.2f} -> {wanted}: "
                      f"{d.get('why', '')}", file=self.log)
            for r in ups:
                self.launch(r)
            k += 1
        # The last arrivals: the fleet serves them with what it has (promotions go on).
        while replay.is_alive():
            replay.join(0.05)
            self.promote_due()
        for t in self.drained_threads:
            t.join()
        return rows_sent


# ---- figures
def p99(values):
    if not values:
        return 0.0
    v = sorted(values)
    return v[math.ceil(0.99 * len(v)) - 1]


def meets(rec, slo):
    if not rec or not rec.get("ok"):
        return False
    for key, field in (("e2e", "e2e_s"), ("ttft", "ttft_s"), ("tpot", "tpot_s")):
        if slo[key] is not None and rec[field] > slo[key]:
            return False
    return True


def windows_of(requests, rows, window_s, slo):
    """As autoscale_sim.cpp's judgeWindows: by (scheduled) arrival, floor(arrival / window)."""
    sent = [(i, q) for i, q in enumerate(requests) if q is not None]
    if not sent:
        return []
    last = max(rows[i][0] for i, _ in sent)
    n = int(math.floor(last / window_s)) + 1
    out = []
    for w in range(n):
        members = [q for i, q in sent if min(n - 1, int(rows[i][0] / window_s)) == w]
        good = sum(1 for q in members if meets(q, slo))
        inf = float("inf")
        col = lambda f: [q[f] if q.get("ok") else inf for q in members]
        e2e, ttft, tpot = p99(col("e2e_s")), p99(col("ttft_s")), p99(col("tpot_s"))
        met = all(slo[k] is None or v <= slo[k] for k, v in (("e2e", e2e), ("ttft", ttft), ("tpot", tpot)))
        fin = lambda v: None if math.isinf(v) else round(v, 4)
        out.append({"begin_s": w * window_s, "length_s": window_s, "requests": len(members), "good": good,
                    "failed": sum(1 for q in members if not q.get("ok")),
                    "attainment": good / len(members) if members else 1.0,
                    "ttft_p99_s": fin(ttft), "tpot_p99_s": fin(tpot), "p99_s": fin(e2e), "met": met})
    return out


def ready_changes(timeline):
    """[(at_s, ready)] where the ready count changed from the row before."""
    out = []
    prev = None
    for row in timeline:
        if prev is not None and row[1] != prev:
            out.append((row[0], row[1]))
        prev = row[1]
    return out


def sim_run(doc):
    """The run in a simulation document: the object holding 'timeline' and 'windows'."""
    if isinstance(doc, dict):
        if "timeline" in doc and "windows" in doc:
            return doc
        for key in ("run", "autoscale", "result"):
            if key in doc and isinstance(doc[key], dict):
                found = sim_run(doc[key])
                if found:
                    return found
    return None


def compare(live_timeline, live_windows, sim, period, max_points):
    sim_changes = ready_changes(sim["timeline"])
    live_changes = ready_changes(live_timeline)
    pairs = []
    ok_timeline = True
    for k in range(max(len(sim_changes), len(live_changes))):
        s = sim_changes[k] if k < len(sim_changes) else None
        l = live_changes[k] if k < len(live_changes) else None
        offset = round(l[0] - s[0], 4) if s and l else None
        good = s is not None and l is not None and s[1] == l[1] and abs(offset) <= period + 1e-6
        ok_timeline &= good
        pairs.append({"sim_at_s": s[0] if s else None, "sim_ready": s[1] if s else None,
                      "live_at_s": l[0] if l else None, "live_ready": l[1] if l else None,
                      "offset_s": offset, "ok": good})
    windows = []
    ok_windows = True
    sim_windows = sim["windows"]
    for w in range(max(len(sim_windows), len(live_windows))):
        s = sim_windows[w] if w < len(sim_windows) else None
        l = live_windows[w] if w < len(live_windows) else None
        points = round(abs(l["attainment"] - s["attainment"]) * 100, 2) if s and l else None
        good = points is not None and points <= max_points + 1e-9
        ok_windows &= good
        windows.append({"begin_s": (s or l)["begin_s"], "sim_requests": s["requests"] if s else None,
                        "live_requests": l["requests"] if l else None,
                        "sim_attainment": s["attainment"] if s else None,
                        "live_attainment": l["attainment"] if l else None,
                        "sim_p99_s": s.get("p99_s") if s else None, "live_p99_s": l.get("p99_s") if l else None,
                        "points": points, "ok": good})
    return {"period_s": period, "max_points": max_points, "ready_changes": pairs, "timeline_ok": ok_timeline,
            "windows": windows, "windows_ok": ok_windows, "ok": ok_timeline and ok_windows}


def print_tables(report, out=sys.stdout):
    print(f"live: {report['requests']} requests ({report['failed']} failed), peak {report['peak_replicas']} "
          f"replicas, {report['scale_ups']} scale-ups, {report['scale_downs']} scale-downs", file=out)
    print("timeline  at_s ready starting draining wanted", file=out)
    prev = None
    for row in report["timeline"]:
        if row[1:] != prev:
            print(f"        {row[0]:7.1f} {row[1]:5d} {row[2]:8d} {row[3]:8d} {row[4]:6d}", file=out)
        prev = row[1:]
    print("window  begin_s requests attainment p99_s", file=out)
    for w in report["windows"]:
        p = "inf" if w["p99_s"] is None else f"{w['p99_s']:.3f}"
        print(f"        {w['begin_s']:7.0f} {w['requests']:8d} {w['attainment'] * 100:9.1f}% {p}", file=out)
    for n in report["notes"]:
        print(f"note: {n}", file=out)
    c = report.get("comparison")
    if not c:
        return
    print(f"\nready-count changes (live vs simulation; bound: one period, {c['period_s']:g} s)", file=out)
    print("   sim_at_s  ready  live_at_s  ready  offset_s  ok", file=out)
    f = lambda v, spec: "-" if v is None else format(v, spec)
    for p in c["ready_changes"]:
        print(f"   {f(p['sim_at_s'], '8.1f'):>8} {f(p['sim_ready'], 'd'):>6} {f(p['live_at_s'], '10.1f'):>10} "
              f"{f(p['live_ready'], 'd'):>6} {f(p['offset_s'], '+9.2f'):>9}  {'yes' if p['ok'] else 'NO'}", file=out)
    print(f"\nattainment per window (bound: {c['max_points']:g} points)", file=out)
    print("   begin_s  sim_req live_req  sim_att live_att  points  ok", file=out)
    for w in c["windows"]:
        pct = lambda v: "-" if v is None else f"{v * 100:.1f}%"
        print(f"   {w['begin_s']:7.0f} {f(w['sim_requests'], 'd'):>8} {f(w['live_requests'], 'd'):>8} "
              f"{pct(w['sim_attainment']):>8} {pct(w['live_attainment']):>8} {f(w['points'], '7.1f'):>7}  "
              f"{'yes' if w['ok'] else 'NO'}", file=out)
    print(f"\ntimeline within one period: {'yes' if c['timeline_ok'] else 'NO'}; attainment within "
          f"{c['max_points']:g} points: {'yes' if c['windows_ok'] else 'NO'}", file=out)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    policy_flags = []
    if "--" in argv:
        cut = argv.index("--")
        argv, policy_flags = argv[:cut], argv[cut + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="After '--': the policy's flags for `batchpilot autoscale --decide`.")
    ap.add_argument("--batchpilot", required=True, help="the batchpilot binary")
    ap.add_argument("--trace", required=True, help="CSV: arrival_s,input_tokens,output_tokens")
    ap.add_argument("--slo", required=True, type=parse_slo, help="'p99<=2s' or 'ttft_p99<=1s,tpot_p99<=100ms'")
    ap.add_argument("--period", type=parse_len, default=5.0, help="the decision period (default 5s)")
    ap.add_argument("--cold-start", type=parse_len, default=20.0, help="asked for -> routed to (default 20s)")
    ap.add_argument("--window", type=parse_len, default=60.0, help="the SLO windows (default 60s)")
    ap.add_argument("--rate-scale", type=float, default=1.0, help="every gap divided by K (default 1)")
    ap.add_argument("--initial", type=int, default=0, help="replicas at the start (default: the policy's --min)")
    ap.add_argument("--duration", type=parse_len, default=600.0,
                    help="cap on the serving time replayed (default 10m): later arrivals are not sent")
    ap.add_argument("--model", default="builtin:tiny-decoder")
    ap.add_argument("--preset", default="small")
    ap.add_argument("--server-threads", type=int, default=1, help="torch threads per server (default 1)")
    ap.add_argument("--config", help="each server's batching config (FILE.json)")
    ap.add_argument("--warmup", type=int, default=2, help="warm-up requests per server during its cold start")
    ap.add_argument("--start-timeout", type=float, default=60.0, help="seconds the first servers may take")
    ap.add_argument("--request-timeout", type=float, default=60.0)
    ap.add_argument("--sim", help="the simulation's `autoscale --trace ... --json` document to compare with")
    ap.add_argument("--max-points", type=float, default=5.0, help="attainment bound per window (default 5)")
    ap.add_argument("--server-logs", help="a directory for each server's stderr (default: discarded)")
    ap.add_argument("-o", "--output", help="write the report (JSON) here")
    ap.add_argument("-v", "--verbose", action="store_true", help="each decision and replica event on stderr")
    a = ap.parse_args(argv)
    if a.period <= 0 or a.rate_scale <= 0 or a.window <= 0:
        ap.error("--period, --window and --rate-scale must be positive")

    def flag(name, default):
        for k, v in enumerate(policy_flags):
            if v == name and k + 1 < len(policy_flags):
                return int(policy_flags[k + 1])
            if v.startswith(name + "="):
                return int(v.split("=", 1)[1])
        return default

    a.min, a.max = flag("--min", 1), flag("--max", 8)
    a.initial = a.initial or max(1, a.min)
    try:
        rows = read_trace(a.trace, a.rate_scale)
    except (OSError, ValueError, IndexError) as e:
        ap.error(f"--trace: {e}")
    if not rows:
        ap.error("--trace has no rows")
    sim = None
    if a.sim:
        with open(a.sim) as f:
            sim = sim_run(json.load(f))
        if sim is None:
            ap.error(f"--sim {a.sim}: no run with a timeline and windows in it")
    span = min(rows[-1][0], a.duration)
    sent = sum(1 for r in rows if r[0] <= a.duration)
    print(f"autoscale_verify: {sent} requests over {span:.0f} s of serving time, {a.initial} to {a.max} "
          f"`batchpilot --headless` servers ({a.server_threads} thread each), a decision every {a.period:g} s, "
          f"cold start {a.cold_start:g} s; about {(span + 30) / 60:.1f} min (--duration caps it; Ctrl-C stops)",
          file=sys.stderr)

    c = Controller(a, policy_flags, rows)
    interrupted = False
    failure = None

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    old_term = signal.signal(signal.SIGTERM, on_signal)
    try:
        rows_sent = c.run()
    except KeyboardInterrupt:
        interrupted = True
        rows_sent = 0
    except Exception as e:
        failure = str(e)
        rows_sent = 0
    finally:
        c.cleanup()
        signal.signal(signal.SIGTERM, old_term)
    if c.decide_proc and failure:
        err = c.decide_proc.stderr.read().decode("utf-8", "replace").strip()
        if err:
            failure += f" (autoscale --decide: {err[:400]})"
    leftover = [p.pid for p in c.all_procs if p.poll() is None]
    recs = c.requests[:rows_sent] if rows_sent else [q for q in c.requests if q is not None]
    windows = windows_of(c.requests, c.rows, a.window, a.slo)
    report = {
        "tool": "autoscale_verify", "trace": os.path.basename(a.trace), "rate_scale": a.rate_scale,
        "period_s": a.period, "cold_start_s": a.cold_start, "window_s": a.window,
        "slo": a.slo, "policy_flags": policy_flags, "server": c.server_command()[1:],
        "requests": sum(1 for q in recs if q is not None),
        "failed": sum(1 for q in recs if q is not None and not q.get("ok")),
        "good": sum(1 for q in recs if meets(q, a.slo)),
        "scale_ups": sum(1 for e in c.events if e["phase"] == "starting"),
        "scale_downs": sum(1 for e in c.events if e["phase"] == "draining" or
                           (e["phase"] == "gone" and e.get("was") == "starting")),
        "peak_replicas": max([row[1] + row[2] + row[3] for row in c.timeline] + [a.initial]),
        "timeline_columns": ["at_s", "ready", "starting", "draining", "wanted"],
        "timeline": c.timeline, "windows": windows, "events": c.events, "decisions": c.decisions,
        "requests_detail": [q for q in c.requests if q is not None],
        "server_pids": [p.pid for p in c.all_procs[1:]], "leftover_pids": leftover,
        "notes": c.notes, "interrupted": interrupted, "error": failure,
    }
    code = EXIT_OK
    if sim is not None and not interrupted and not failure:
        report["comparison"] = compare(c.timeline, windows, sim, a.period, a.max_points)
        code = EXIT_OK if report["comparison"]["ok"] else EXIT_BOUND
    if a.output:
        with open(a.output, "w") as f:
            json.dump(report, f, indent=1)
    print_tables(report)
    if failure:
        print(f"autoscale_verify: failed: {failure}", file=sys.stderr)
        return EXIT_FAILED
    if interrupted:
        print("autoscale_verify: interrupted; every server stopped", file=sys.stderr)
        return EXIT_INTERRUPTED
    if leftover:
        print(f"autoscale_verify: processes still running: {leftover}", file=sys.stderr)
        return EXIT_FAILED
    return code


if __name__ == "__main__":
    sys.exit(main())
