#!/usr/bin/env bash
# REST load figures for docs/benchmarks.md (REST section): starts `batchpilot --headless`
# on a free loopback port, applies a batching config, runs wrk against
# POST /v1/infer, then prints the engine's own latency for the same run
# (GET /v1/stats, cumulative) next to wrk's, and stops the server.
#
#   tools/bench_rest.sh BUILD_DIR MODEL CONFIG_JSON CONNECTIONS DURATION [extra batchpilot flags...]
#   tools/bench_rest.sh build/rest builtin:echo '{"policy":"dynamic","max_batch_size":64,"max_queue_delay_us":200}' 64 10s
#
# BP_WRK_SCRIPT picks the wrk script of the measured run (default tools/wrk_infer.lua);
# tools/wrk_server_timing.lua (with CONNECTIONS 1) prints, per request, the client's
# latency minus the server's own figures from the Server-Timing header: what HTTP adds.
set -euo pipefail
build=$1 model=$2 config=$3 connections=$4 duration=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
"$build/app/batchpilot" --headless --port 0 --model "$model" --db "$tmp/trace.sqlite" "$@" >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 600); do
  grep -q '^listening on ' "$tmp/out" && break
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/err"; exit 1; }
  sleep 0.1
done
url=$(sed -n 's/^listening on //p' "$tmp/out")
curl -sf -X PUT "$url/v1/config" -d "$config" >/dev/null
# warm-up (models allocate on first use), then the measured run on a fresh engine view
wrk -t1 -c"$connections" -d2s -s "$here/wrk_infer.lua" "$url" >/dev/null
before=$(curl -sf "$url/v1/stats")
wrk -t1 -c"$connections" -d"$duration" --latency -s "${BP_WRK_SCRIPT:-$here/wrk_infer.lua}" "$url"
after=$(curl -sf "$url/v1/stats")
python3 - "$before" "$after" <<'PY'
import json, sys
b, a = json.loads(sys.argv[1]), json.loads(sys.argv[2])
w = a["window"]
print("engine (last 2 s window): requests/s %.0f  mean batch %.1f  busy %.2f" %
      (w["requests_per_s"], w["mean_batch_size"], w["busy_fraction"]))
for k in ("latency_total", "latency_queue_wait", "latency_compute"):
    s = w[k]
    print("engine %-18s p50 %8.1f us  p90 %8.1f us  p99 %8.1f us" % (k, s["p50_us"], s["p90_us"], s["p99_us"]))
print("completed during run: %d, rejected: %s" % (a["completed"] - b["completed"],
      {k: v - b["by_status"].get(k, 0) for k, v in a["by_status"].items() if k != "ok" and v - b["by_status"].get(k, 0)}))
PY
