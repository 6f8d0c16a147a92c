#!/usr/bin/env bash
# The remote client's own ceiling (docs/benchmarks.md, "Remote replay client"):
# starts `batchpilot --headless --model builtin:echo` on a free loopback port,
# then, in one run and against that one server,
#   1. `batchpilot replay --target` of a synthetic open-loop trace offering
#      RATE requests/s for SECONDS (16-token inputs) over OIP, with
#      --max-concurrency CONC: the client's completed requests / wall time;
#   2. wrk with CONC connections on the same OIP route with the same body
#      for SECONDS (a closed loop: as fast as the server answers).
#
#   tools/bench_remote.sh BUILD_DIR RATE SECONDS CONC
#   tools/bench_remote.sh build/default 40000 5 64
set -euo pipefail
build=$1 rate=$2 seconds=$3 conc=$4
here=$(cd "$(dirname "$0")" && pwd)
bp="$build/app/batchpilot"
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
"$bp" --headless --port 0 --model builtin:echo --db "$tmp/server.sqlite" >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 600); do
  grep -q '^listening on ' "$tmp/out" && break
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/err"; exit 1; }
  sleep 0.1
done
url=$(sed -n 's/^listening on //p' "$tmp/out")
python3 - "$tmp/trace.csv" "$rate" "$seconds" <<'PY'
import sys
path, rate, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
n = int(rate * seconds)
with open(path, "w") as f:
    f.write("arrival_s,input_tokens,output_tokens\n")
    for i in range(n):
        f.write("%.9f,16,0\n" % (i / rate))
PY
"$bp" import-trace "$tmp/trace.csv" --db "$tmp/client.sqlite" >/dev/null
wrk -t1 -c"$conc" -d2s -s "$here/wrk_oip.lua" "$url" >/dev/null # warm-up
"$bp" replay 1 --trace --db "$tmp/client.sqlite" --target "$url" --model echo --max-concurrency "$conc" \
  --scrape-interval 0 --json 2>/dev/null >"$tmp/replay.json"
python3 - "$tmp/replay.json" "$rate" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
b = j["comparison"]["b"]
print("batchpilot replay --target: %d of %d completed in %.2f s = %.0f req/s (offered %s req/s), "
      "p50 %.3f ms, p99 %.3f ms, failed %d, submissions at most %.1f ms late, connections %d" % (
      j["completed"], j["requests"], j["wall_s"], j["completed"] / j["wall_s"], sys.argv[2],
      b["latency_p50_ms"], b["latency_p99_ms"], j["failed"], j["max_lateness_us"] / 1000,
      j["client"]["connections_opened"]))
PY
wrk -t1 -c"$conc" -d"${seconds}s" -s "$here/wrk_oip.lua" "$url" | grep '^wrk:'
