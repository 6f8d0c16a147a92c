#!/usr/bin/env bash
# Takes the console screenshots in docs/images/ under Xvfb, driving the real
# console through BATCHPILOT_CONSOLE_DEMO (docs/console.md). Not a test: run
# it by hand after a build and look at the pictures.
#   tests/ui/take_screenshots.sh [build-dir]   (default build/ui)
#   STEPS="traces compare" tests/ui/take_screenshots.sh build/default   (some of them; also: console, advisor, fleet, fleet-autoscale)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/ui}
app="$build/app/batchpilot"
out=docs/images
work=$(mktemp -d)
trap 'kill "${xvfb:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT

display=${XVFB_DISPLAY:-99} # another number where several people share the machine
Xvfb ":$display" -screen 0 1600x1000x24 -nolisten tcp &
xvfb=$!
export DISPLAY=":$display" QT_QPA_PLATFORM=xcb
# Own settings, so a developer's saved layout does not leak into the pictures.
export XDG_CONFIG_HOME="$work/config"

# A bursty trace to import: 30 s, mixed prompt lengths.
python3 - "$work/bursty.csv" <<'PY'
import random, sys
random.seed(7)
t, rows = 0.0, []
while t < 30:
    rate = 40 if int(t) % 20 < 10 else 12          # busy and quiet phases
    t += random.expovariate(rate)
    n = random.choice([1, 1, 1, 2, 4])             # some requests arrive together
    for _ in range(n):
        rows.append((t, random.choice([24, 48, 96, 200, 380]) + random.randint(0, 40), random.randint(4, 24)))
with open(sys.argv[1], "w") as f:
    f.write("arrival_s,input_tokens,output_tokens\n")
    for r in rows:
        f.write("%.6f,%d,%d\n" % r)
PY

run() { # name, demo script, extra flags...
  local name=$1 script=$2
  shift 2
  [[ " ${STEPS:-console continuous traces compare fleet} " == *" $name "* ]] || return 0
  echo "== $name"
  BATCHPILOT_CONSOLE_DEMO="$script;quit" timeout 600 "$app" --port 0 --db "$work/$name.sqlite" "$@"
}

# 1. Tuning live: 40 req/s overloads a max batch of 4 (the queue grows), a max
#    batch of 16 drains it, then a longer queue delay trades latency for
#    fuller batches. Markers show each change.
run console "set=max_batch_size:4;set=max_queue_delay:2ms;window=60;traffic=40;wait=20;set=max_batch_size:16;wait=20;set=max_queue_delay:20ms;wait=15;screenshot=$out/console.png" \
  --model builtin:tiny-decoder

# 1b. Generation under policy continuous with goodput SLOs (from a config
#     file, so no change markers cover the start): TTFT/TPOT, running/waiting
#     sequences and the step timeline. The rate is ~60% of the capacity the
#     traffic panel measures for this workload at start-up (~20 req/s here);
#     `batchpilot-bench load --threads 1 --compare continuous` alone served
#     up to ~42 req/s within these SLOs, but the console draws on the same 2
#     cores. One torch thread: two contend with everything else here.
echo '{"policy": "continuous", "goodput": {"ttft_us": 100000, "tpot_us": 20000}}' >"$work/continuous.json"
run continuous "lengths=16-64;new_tokens=32;window=60;show=timeline;traffic=${CONTINUOUS_RATE:-12};wait=45;screenshot=$out/console-continuous.png" \
  --model builtin:tiny-decoder --threads 1 --config "$work/continuous.json"

# 2. Traces: an imported trace, replayed on the virtual clock; the live
#    session and the replay listed.
run traces "traffic=20;import=$work/bursty.csv;replay=trace:latest:1:virtual;show=traces;select=session:last-replay;wait=2;screenshot=$out/traces.png" \
  --model builtin:tiny-decoder --preset test

# 3. A comparison: live traffic under a small batch limit, then its replay
#    (real clock: really computed) under a larger one.
run compare "set=max_batch_size:2;set=max_queue_delay:1ms;traffic=30;wait=30;traffic=off;wait=2;set=max_batch_size:16;set=max_queue_delay:10ms;replay=session:latest:1;compare=last-replay;wait=1;screenshot=$out/compare.png" \
  --model builtin:tiny-decoder --preset test
# 4. The Advisor: a calibration of the model (preset test: the search has
#    configs that meet the SLO on two cores; on `small` every config is
#    over capacity at the trace's rate), then a search on the shared
#    Azure trace (lengths / 8, its first 3000 arrivals) for a TTFT + TPOT
#    SLO; the recommendation applied live, synthetic traffic at the trace's
#    mean rate, the predicted TTFT p99 next to the measured one.
azure=${AZURE_TRACE:-resources/traces/azure_llm_conv_2023.csv}
if [[ " ${STEPS:-console traces compare advisor} " == *" advisor "* ]]; then
  "$app" calibrate --model builtin:tiny-decoder --preset test --quick --db "$work/advisor.sqlite" >/dev/null
fi
run advisor "import=$azure;advise=source:trace:latest;advise=length_scale:0.125;advise=limit:3000;advise=slo:ttft_p99<=1s,tpot_p99<=100ms;advise=budget:200;advise=run;advise=apply;window=60;traffic=6;wait=25;screenshot=$out/advisor.png" \
  --model builtin:tiny-decoder --preset test
# 5. The Fleet view: a day of traffic with a daily shape (low at 04:00,
#    peak at 16:00), a capacity plan per hour with every router
#    (`batchpilot plan`), shown in the Fleet tab.
if [[ " ${STEPS:-console traces compare advisor fleet} " == *" fleet "* ]]; then
  python3 - "$work/day.csv" "${FLEET_PEAK_RATE:-8}" <<'PY'
import math, random, sys
random.seed(11)
peak, t = float(sys.argv[2]), 0.0
with open(sys.argv[1], "w") as f:
    f.write("arrival_s,input_tokens,output_tokens\n")
    while True:
        hour = t / 3600
        rate = peak * (0.15 + 0.85 * (0.5 - 0.5 * math.cos(2 * math.pi * (hour - 4) / 24)))
        t += random.expovariate(rate)
        if t >= 86400:
            break
        f.write("%.4f,%d,%d\n" % (t, random.choice([24, 48, 96, 200]) + random.randint(0, 40), random.randint(4, 24)))
PY
  db="$work/fleet.sqlite"
  "$app" import-trace "$work/day.csv" --name "a day, daily shape" --db "$db" >/dev/null
  "$app" calibrate --model builtin:tiny-decoder --preset test --quick --db "$db" >/dev/null
  "$app" plan --trace 1 --calibration 1 --slo "${FLEET_SLO:-p99<=8s}" --replicas 1..16 --router all --replica-cost 2.5 --db "$db"
fi
run fleet "hide=timeline;hide=traces;hide=remote;show=fleet;fleet=trace:latest;wait=1;screenshot=$out/fleet-view.png" --model builtin:tiny-decoder --preset test
# 6. The Fleet view's autoscaler chart: a day with the same daily shape,
#    planned per hour, and a reactive policy with a 3 min cold start
#    replayed over it (the fleet planner and simulateAutoscale on a fixed
#    cost model, in a temporary store), drawn beside the plan's step. The
#    test binary makes and grabs it (tests/ui/test_fleet_view.cpp,
#    autoscaleScreenshot).
if [[ " ${STEPS:-console continuous traces compare fleet fleet-autoscale} " == *" fleet-autoscale "* ]]; then
  echo "== fleet-autoscale"
  BP_FLEET_AUTOSCALE_SCREENSHOT="$out/fleet-autoscale.png" "$build/tests/ui/test_fleet_view" autoscaleScreenshot
fi
ls -l $out
