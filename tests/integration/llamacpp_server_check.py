#!/usr/bin/env python3
"""The remote loop against a real llama.cpp llama-server, as ground truth for its model.

    llamacpp_server_check.py BATCHPILOT MAKE_TINY_GGUF INSTALL_LLAMA_CPP WORKDIR known|unknown|pick

llama-server is the one packaging/install-llama-cpp.sh --build builds into
~/.cache/batchpilot (the same folder rule: BATCHPILOT_LLAMA_CPP_HOME, else
XDG_CACHE_HOME or ~/.cache); without it the test exits 77 (ctest: skipped,
shown as such). Nothing is downloaded: the checkpoint is written here by
tools/make_tiny_gguf.py.

known:   calibrate --target recognises llamacpp and reads its slots and
         context; calibrate --refresh re-prices it at the server's pace
         (and says the pace it read); a replay of 40 arrivals into the server and the same
         arrivals simulated on llama.cpp's scheduler model agree on
         throughput and completions; the simulation of 1 slot predicts a
         slower TTFT p99 than of 2, or fewer completions (the model's slots
         act); tune --target answers
         with llama-server flags.
unknown: the same server behind a proxy that hides /metrics, /props and
         /slots: calibrate says the kind is not recognised, infers the 2
         slots as a running cap from the probe's rounds and stores it. The
         mixed round then keeps a place free beside its streams (1 stream,
         not 4), so its prompts run while a stream generates: a level is
         inferred (iteration; see check_inferred_level), and
         replay --simulate runs the generic model and prints what was inferred.
         Where no level can be told, replay --simulate and tune refuse
         rather than simulate a scheduler the server may not have.
pick:    the loop's last steps: one slot (-np 1 -c 4096) serves longer
         requests at twice the trace's pace; a real replay measures it;
         tune --target (an SLO on TTFT p99 half of what was measured)
         prints llama-server flags; the server is restarted with exactly
         those flags (its /props shows the slots) and the same arrivals
         replayed into it: every request completes again. The TTFT p99s
         are printed, not compared (whether the pick improves on one slot
         is the prediction's accuracy, docs/benchmarks.md).
"""
import shlex
import http.client
import json
import http.server
import os
import re
import socket
import socketserver
import subprocess
import sys
import threading
import time

SKIP = 77


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def llama_server(install_script):
    text = open(install_script).read()
    version = re.search(r"^VERSION=(\S+)", text, re.M).group(1).strip("\"'")
    home = os.environ.get("BATCHPILOT_LLAMA_CPP_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "batchpilot",
        "llama-cpp-python-" + version)
    return os.path.join(home, "build", "bin", "llama-server")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, expect=0):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if expect is not None and p.returncode != expect:
        fail("%s exited %d (expected %d)\nstdout:\n%s\nstderr:\n%s" % (" ".join(cmd), p.returncode, expect,
                                                                       p.stdout[-3000:], p.stderr[-3000:]))
    return p


def wait_ready(port, proc):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            fail("llama-server exited %d before it was ready" % proc.returncode)
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)  # polling a child process's readiness, not a timed assertion
    fail("llama-server not ready in 30 s")


class HidingProxy(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def make_handler(upstream):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def forward(self):
            # Each chunk goes out at once: with Nagle's algorithm a short
            # last write waits for the client's delayed ACK (~40 ms), which
            # the probe read as the server's time to a first token.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            path = self.path.split("?")[0]
            if path in ("/metrics", "/props", "/slots"):
                body = b'{"error":"not found"}'
                self.send_response(404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            n = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(n) if n else None
            c = http.client.HTTPConnection("127.0.0.1", upstream, timeout=60)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
            c.request(self.command, self.path, body=data, headers=headers)
            r = c.getresponse()
            self.send_response(r.status)
            for k, v in r.getheaders():
                if k.lower() not in ("transfer-encoding", "connection", "content-length", "server", "date"):
                    self.send_header(k, v)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while True:
                chunk = r.read1(65536)
                if not chunk:
                    break
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            c.close()

        do_GET = forward
        do_POST = forward

    return Handler


def rows(text):
    """The summary table's rows: name -> the cells after it."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"(\S[\w ()/]*?\S)\s{2,}(.*)$", line)
        if m:
            out[m.group(1)] = re.split(r"\s{2,}", m.group(2).strip())
    return out


def number(cell):
    return float(cell.replace(",", ""))


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    bp, make_gguf, install, work, mode = sys.argv[1:]
    server_bin = llama_server(install)
    if not os.access(server_bin, os.X_OK):
        print("SKIP: no llama-server at %s (packaging/install-llama-cpp.sh --build builds it)" % server_bin)
        return SKIP
    os.makedirs(work, exist_ok=True)
    gguf = os.path.join(work, "tiny.gguf")
    if not os.path.exists(gguf):
        run([sys.executable, make_gguf, gguf + ".part"])
        os.replace(gguf + ".part", gguf)
    db = os.path.join(work, "bp-%s.db" % mode)
    if os.path.exists(db):
        os.remove(db)
    if mode == "pick":
        check_pick(bp, server_bin, gguf, work, db)
        print("OK: " + mode)
        return 0
    proc, port = start_server(server_bin, gguf, ["-np", "2", "-c", "2048"], work, mode)
    proxy = None
    try:
        url = "http://127.0.0.1:%d" % port
        if mode == "unknown":
            proxy = HidingProxy(("127.0.0.1", 0), make_handler(port))
            threading.Thread(target=proxy.serve_forever, daemon=True).start()
            url = "http://127.0.0.1:%d" % proxy.server_address[1]
        base = [bp, "--db", db]
        run(base + ["import-trace", "--sample"])
        cal = run(base + ["calibrate", "--target", url, "--protocol", "openai", "--model", "tiny",
                          "--vocab-size", "400", "--max-length", "1024", "--max-concurrency", "4", "--quick"])
        if mode == "known":
            check_known(base, url, cal)
        else:
            check_unknown(base, url, cal)
    finally:
        if proxy:
            proxy.shutdown()
        stop_server(proc)
    print("OK: " + mode)
    return 0


TRACE = ["--limit", "40", "--length-scale", "0.05"]


def start_server(server_bin, gguf, flags, work, tag):
    """llama-server on a free port with the given scheduling flags (one
    thread, /metrics on); returns (process, port) once /health answers."""
    port = free_port()
    log = open(os.path.join(work, "llama-server-%s.log" % tag), "w")
    proc = subprocess.Popen([server_bin, "-m", gguf] + flags + ["-t", "1", "--metrics", "--host", "127.0.0.1",
                                                                "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    wait_ready(port, proc)
    return proc, port


def http_get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", path)
    return c.getresponse().read().decode()


def stop_server(proc):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def restart_flags(tune_stdout):
    """The flags of the command tune printed under "restart the server with:"
    (continuation lines joined), without the program, its model and the
    flags the test sets itself."""
    lines = tune_stdout.splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.startswith("llama-server "))
    except StopIteration:
        fail("tune printed no llama-server command:\n" + tune_stdout)
    text = ""
    for line in lines[start:]:
        text += line.rstrip().rstrip("\\") + " "
        if not line.rstrip().endswith("\\"):
            break
    words = shlex.split(text)[1:]
    flags, i = [], 0
    while i < len(words):
        if words[i] in ("-m", "--model", "--host", "--port", "-t", "--threads"):
            i += 2
            continue
        if words[i] != "--metrics":
            flags.append(words[i])
        i += 1
    return flags


# Longer requests than TRACE's, at twice the trace's pace: one slot queues them.
PICK_TRACE = ["--limit", "40", "--length-scale", "0.2", "--speed", "2"]


def measured(base, url):
    out = run(base + ["replay", "1", "--trace", "--target", url, "--protocol", "openai", "--model", "tiny",
                      "--vocab-size", "400", "--max-length", "1024"] + PICK_TRACE)
    r = rows(out.stdout)
    return number(r["TTFT p99 (ms)"][0]), r["completed"][0], out.stdout


def check_pick(bp, server_bin, gguf, work, db):
    base = [bp, "--db", db]
    proc, port = start_server(server_bin, gguf, ["-np", "1", "-c", "4096"], work, "pick-before")
    try:
        url = "http://127.0.0.1:%d" % port
        run(base + ["import-trace", "--sample"])
        cal = run(base + ["calibrate", "--target", url, "--protocol", "openai", "--model", "tiny", "--vocab-size",
                          "400", "--max-length", "1024", "--max-concurrency", "4", "--quick"])
        cid = re.search(r"calibration (\d+):", cal.stdout).group(1)
        before, done_before, table = measured(base, url)
        print("one slot: TTFT p99 %.1f ms, %s completed" % (before, done_before))
        bound = max(1.0, before / 2)
        tune = run(base + ["tune", "--trace", "1", "--target", url, "--model", "tiny", "--calibration", cid,
                           "--slo", "ttft_p99<=%.0fms" % bound, "--objective", "throughput"] + PICK_TRACE)
    finally:
        stop_server(proc)
    flags = restart_flags(tune.stdout)
    kept = "keep the server's current config" in tune.stdout
    print("tune's pick (%s): %s" % ("kept" if kept else "changed", " ".join(flags)))
    np = re.search(r"--parallel (\d+)", " ".join(flags))
    if not np:
        fail("tune's llama-server command names no --parallel:\n" + tune.stdout)
    proc, port = start_server(server_bin, gguf, flags, work, "pick-after")
    try:
        props = json.loads(http_get(port, "/props"))
        if props.get("total_slots") != int(np.group(1)):
            fail("restarted with %s, the server has %s slots" % (flags, props.get("total_slots")))
        after, done_after, table_after = measured(base, "http://127.0.0.1:%d" % port)
    finally:
        stop_server(proc)
    print("the pick: TTFT p99 %.1f ms, %s completed (one slot: %.1f ms)" % (after, done_after, before))
    # Every arrival one slot served, the pick serves too: a pick whose slots
    # are too small for the trace's prompts (n_ctx split between them) fails
    # here, as it did before llama.cpp's rounding and its refusals were modelled.
    if done_after != done_before:
        fail("the pick completed %s of the arrivals, one slot %s:\n%s\n%s" % (done_after, done_before, table,
                                                                             table_after))


def check_known(base, url, cal):
    if "calibrate: server llamacpp (from /metrics)" not in cal.stderr:
        fail("llama-server not recognised:\n" + cal.stderr)
    out = cal.stdout
    for want in ("(llamacpp)", "n_parallel=2", "slot_n_ctx=1024", "n_ctx=2048"):
        if want not in out:
            fail("calibrate did not print %r:\n%s" % (want, out))
    if "limits seen in /metrics" not in out or "limits seen in /metrics (0 scrapes" in out or \
            re.search(r"limits seen in /metrics \([^)]*\): none", out):
        fail("no limits read from llama-server's /metrics:\n" + out)
    cid = re.search(r"calibration (\d+):", out).group(1)
    # Re-priced at the server's pace just before the replay (4 requests).
    fresh = run(base + ["calibrate", "--target", url, "--protocol", "openai", "--model", "tiny",
                        "--vocab-size", "400", "--max-length", "1024", "--refresh", cid])
    line = re.search(r"calibrate: refresh: a single stream's step ([\d.]+) ms now \(3 requests, \d+ % apart\), "
                     r"([\d.]+) ms when calibration " + cid + r" was measured \([^)]*\): x([\d.]+)", fresh.stderr)
    if not line or "refreshed (pace x" not in fresh.stdout:
        fail("calibrate --refresh did not say the pace it read:\n" + fresh.stdout + fresh.stderr)
    if not 0.2 < float(line.group(3)) < 5:
        fail("calibrate --refresh read a pace ratio of %s against the same server" % line.group(3))
    cid = re.search(r"calibration (\d+):", fresh.stdout).group(1)
    real = run(base + ["replay", "1", "--trace", "--target", url, "--protocol", "openai", "--model", "tiny",
                       "--vocab-size", "400", "--max-length", "1024"] + TRACE)
    sid = re.search(r"session (\d+)", real.stdout + real.stderr).group(1)
    if "replay: server llamacpp (from /metrics): its requests carry ignore_eos: true" not in real.stderr:
        fail("replay --target did not send llama-server's dialect:\n" + real.stderr)
    sim = run(base + ["replay", "1", "--trace", "--simulate", "--calibration", cid, "--compare", sid] + TRACE)
    # Like with like: the server ran every answer to the trace's length, as
    # the simulation does (without ignore_eos a random-weight model stops
    # early: 14 % fewer tokens over 240 arrivals).
    simulated = re.search(r"replay session (\d+)", sim.stdout + sim.stderr).group(1)
    import sqlite3
    with sqlite3.connect(base[2]) as db:
        tokens = {s: db.execute("SELECT SUM(output_tokens) FROM requests WHERE session_id = ?", (int(s),)).fetchone()[0]
                  for s in (sid, simulated)}
    if tokens[sid] != tokens[simulated]:
        fail("output tokens: the server generated %s, the simulation %s" % (tokens[sid], tokens[simulated]))
    if "llamacpp's scheduler" not in sim.stdout + sim.stderr:
        fail("replay --simulate did not run llama.cpp's scheduler model:\n" + sim.stdout + sim.stderr)
    r = rows(sim.stdout)
    measured, predicted = number(r["throughput (req/s)"][0]), number(r["throughput (req/s)"][1])
    if abs(predicted - measured) > 0.25 * measured:
        fail("throughput predicted %.2f, measured %.2f" % (predicted, measured))
    if r["completed"][0] != r["completed"][1]:
        fail("completed: measured %s, predicted %s" % (r["completed"][0], r["completed"][1]))
    # The model's slots act: one slot makes the arrivals queue.
    one = os.path.join(os.path.dirname(base[2]), "one-slot.json")
    with open(one, "w") as f:
        f.write('{"policy": "continuous", "server": {"kind": "llamacpp", "n_parallel": 1, "n_ctx": 1024}}')
    # (--noise none: the slots, not a draw of the cost noise, decide; one
    # slot may also refuse what waits too long, and the TTFT of the ones it
    # served is then not the longer)
    slow = run(base + ["replay", "1", "--trace", "--simulate", "--calibration", cid, "--config", one,
                       "--speed", "8", "--noise", "none"] + TRACE)
    fast = run(base + ["replay", "1", "--trace", "--simulate", "--calibration", cid, "--speed", "8",
                       "--noise", "none"] + TRACE)
    r1, r2 = rows(slow.stdout), rows(fast.stdout)
    t1, t2 = number(r1["TTFT p99 (ms)"][0]), number(r2["TTFT p99 (ms)"][0])
    c1, c2 = int(r1["completed"][0]), int(r2["completed"][0])
    if not (t1 > t2 or c1 < c2):
        fail("1 slot predicts TTFT p99 %.1f ms (%d completed), 2 slots %.1f ms (%d): the slots do not act" %
             (t1, c1, t2, c2))
    tune = run(base + ["tune", "--trace", "1", "--target", url, "--model", "tiny", "--calibration", cid,
                       "--slo", "ttft_p99<=10s"] + TRACE)
    if "llama-server -m tiny" not in tune.stdout or "--parallel" not in tune.stdout:
        fail("tune --target did not answer with llama-server flags:\n" + tune.stdout + tune.stderr)
    if "keep the server's current config" not in tune.stdout:
        fail("the current settings meet a loose SLO, yet tune did not keep them:\n" + tune.stdout)


def check_unknown(base, url, cal):
    if "not recognised" not in cal.stderr:
        fail("a server with /metrics and /props hidden was recognised:\n" + cal.stderr)
    # What the probe's rounds show: the 2 slots as a running cap, stored with the calibration.
    if "inferred from the probe's rounds" not in cal.stderr or "running cap 2:" not in cal.stderr:
        fail("the probe's rounds did not show the server's 2 slots as its running cap:\n" + cal.stderr)
    cid = re.search(r"calibration (\d+):", cal.stdout).group(1)
    exported = run(base + ["calibrate", "--export", cid]).stdout
    if '"running_cap": 2' not in exported or '"inferred"' not in exported:
        fail("the inference is not stored with the calibration:\n" + exported[:2000])
    if "can tell" in cal.stderr or "cannot be told" not in cal.stderr:
        check_inferred_level(base, cal, cid)
        return
    sim = run(base + ["replay", "1", "--trace", "--simulate", "--calibration", cid] + TRACE, expect=2)
    if "kind is not known" not in sim.stderr or "not assumed" not in sim.stderr:
        fail("replay --simulate did not refuse an unknown kind:\n" + sim.stderr)
    tune = run(base + ["tune", "--trace", "1", "--calibration", cid, "--slo", "ttft_p99<=10s"] + TRACE,
               expect=None)
    if tune.returncode == 0 or "kind is not known" not in tune.stderr:
        fail("tune simulated a server of unknown kind:\n" + tune.stdout + tune.stderr)
    tt = run(base + ["tune", "--trace", "1", "--target", url, "--model", "tiny", "--calibration", cid,
                     "--slo", "ttft_p99<=10s"] + TRACE, expect=None)
    if tt.returncode == 0 or "kind is not known" not in tt.stderr:
        fail("tune --target simulated a server of unknown kind:\n" + tt.stdout + tt.stderr)


def check_inferred_level(base, cal, cid):
    """A level was inferred: replay --simulate runs the generic model of that
    level and says what was inferred. (llama-server's slots batch per
    iteration, and most runs infer so; the level itself is not asserted: on
    a loaded machine a prompt's first token can come after the one short
    stream beside it ended, which reads as request level.)"""
    level = re.search(r"(iteration|request)-level: in the mixed round (\d+) of (\d+) prompts", cal.stderr)
    if not level:
        fail("a level was inferred, but calibrate did not say from which round:\n" + cal.stderr)
    sim = run(base + ["replay", "1", "--trace", "--simulate", "--calibration", cid] + TRACE)
    out = sim.stdout + sim.stderr
    if "a generic %s-level server's scheduler" % level.group(1) not in out:
        fail("replay --simulate did not run the generic %s-level model:\n%s" % (level.group(1), out))
    for want in ("inferred from the probe's rounds", "%s-level: in the mixed round" % level.group(1),
                 "running cap 2:"):
        if want not in out:
            fail("replay --simulate did not print what was inferred (%r):\n%s" % (want, out))
    completed = rows(sim.stdout).get("completed", ["0"])[0]
    if completed in ("0", "-"):
        fail("the generic model completed nothing:\n" + sim.stdout)


if __name__ == "__main__":
    sys.exit(main())
