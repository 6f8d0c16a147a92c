#!/usr/bin/env bash
# Goodput at capacity vs under overload, side by side on one server
# (docs/benchmarks.md, "REST under overload"). Starts `batchpilot --headless`
# once, applies a batching config with a small admission queue, then runs wrk
# twice against POST /v1/infer with the same body: at CAP_CONN connections
# (enough to keep the model busy) and at OVER_CONN connections. wrk is closed
# loop: every connection sends its next request the moment an answer (a 200
# or a 429) arrives, so a 429 is retried at once. Goodput = 200 answers / s.
#
#   tools/bench_overload.sh BUILD_DIR [CAP_CONN] [OVER_CONN] [DURATION] [extra batchpilot flags...]
#   tools/bench_overload.sh build/default 32 320 10s
#
# Environment: BP_MODEL (default builtin:tiny-encoder), BP_PRESET (small),
# BP_CONFIG (the PUT /v1/config body), BP_TEXT (the input text, 72 bytes).
set -euo pipefail
build=$1 cap=${2:-32} over=${3:-320} duration=${4:-10s}
shift $(( $# < 4 ? $# : 4 ))
here=$(cd "$(dirname "$0")" && pwd)
model=${BP_MODEL:-builtin:tiny-encoder}
preset=${BP_PRESET:-small}
config=${BP_CONFIG:-'{"policy":"dynamic","max_batch_size":32,"max_queue_delay_us":2000,"queue_capacity":64}'}
text=${BP_TEXT:-$(printf 'x%.0s' $(seq 1 72))}
export BP_BODY="{\"text\":\"$text\"}"
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }; rm -rf "$tmp"' EXIT
ulimit -n 4096 2>/dev/null || true
"$build/app/batchpilot" --headless --port 0 --model "$model" --preset "$preset" --db "$tmp/trace.sqlite" "$@" \
  >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 600); do
  grep -q '^listening on ' "$tmp/out" && break
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/err"; exit 1; }
  sleep 0.1
done
url=$(sed -n 's/^listening on //p' "$tmp/out")
curl -sf -X PUT "$url/v1/config" -d "$config" >/dev/null
echo "model $model ($preset), body ${#BP_BODY} bytes, config $config"
echo "nproc $(nproc), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
wrk -t1 -c"$cap" -d2s -s "$here/wrk_infer.lua" "$url" >/dev/null # warm-up

run() { # connections label
  local before after
  before=$(curl -sf "$url/v1/stats")
  wrk -t1 -c"$1" -d"$duration" --timeout 10s -s "$here/wrk_infer.lua" "$url" >"$tmp/wrk.$2" 2>&1 || true
  after=$(curl -sf "$url/v1/stats")
  python3 - "$2" "$1" "$tmp/wrk.$2" "$before" "$after" <<'PY'
import json, re, sys
label, conns, path, b, a = sys.argv[1], int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4]), json.loads(sys.argv[5])
text = open(path).read()
m = re.search(r"(\d+) requests in ([\d.]+)(m?s)", text)
total, secs = int(m.group(1)), float(m.group(2)) * (0.001 if m.group(3) == "ms" else 1)
non2xx = int((re.search(r"Non-2xx or 3xx responses: (\d+)", text) or [0, 0])[1])
errors = re.search(r"Socket errors:.*", text)
lat = re.search(r"Latency\s+(\S+)\s+(\S+)\s+(\S+)", text)
ok = total - non2xx
ran = a["completed"] - b["completed"]
print(f"{label:9s} {conns:4d} conns: goodput {ok / secs:7.1f} req/s  (200: {ok}, non-2xx: {non2xx}, "
      f"answers {total / secs:.0f}/s)  wrk mean latency {lat.group(1) if lat else '?'}  "
      f"engine completed {ran}  {errors.group(0) if errors else ''}")
open(path + ".goodput", "w").write(str(ok / secs))
PY
}
run "$cap" capacity
run "$over" overload
python3 - "$tmp/wrk.capacity.goodput" "$tmp/wrk.overload.goodput" <<'PY'
import sys
c, o = (float(open(p).read()) for p in sys.argv[1:3])
print(f"goodput ratio overload / capacity: {o / c:.2f}")
PY
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
grep -v '^listening' "$tmp/err" | tail -3 || true
