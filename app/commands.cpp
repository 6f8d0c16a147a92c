#include "commands.h"

#include "cmd_autoscale.h"
#include "cmd_calibrate.h"
#include "cmd_interop.h"
#include "cmd_plan.h"
#include "cmd_store.h"
#include "cmd_tune.h"
#include "report/cmd_report.h"

namespace bp::app {

const std::vector<Command> &commands()
{
    // Subcommands register here; each parses its arguments with
    // CommandArgs(args, commandOptions(name)), so its --help and its parser
    // read the same list.
    static const std::vector<Command> list = {
        {"import-trace",
         "import a trace (Azure 2023/2024, plain CSV, BurstGPT, Mooncake, genai-perf, multi-turn) into the "
         "trace database",
         "FILE|--sample [OPTIONS]",
         {{"sample", "", "import the bundled sample trace (Azure LLM conversation trace 2023, CC-BY 4.0)"},
          {"name", "NAME", "the trace's name (default: the file name)"},
          {"format", "F",
           "azure, plain, burstgpt, mooncake, genai-perf or multi-turn (default: detected from the content)"},
          {"block-tokens", "N", "tokens per hash id (default 512, Mooncake's block size)"},
          {"skip-failed", "",
           "BurstGPT: drop failed requests (0 response tokens; default: keep them, prefill only)"},
          {"reject-bad-rows", "", "fail on the first malformed row (default: skip and report them)"},
          {"repeat-to", "LEN",
           "repeat the file's rows back to back until the trace spans LEN (e.g. 7d: a week of an hour's "
           "shape)"},
          {"json", "", "print the result as JSON"}},
         runImportTrace},
        {"export-trace",
         "write a session's arrivals (or --trace ID's rows) as Mooncake JSON Lines",
         "ID [OPTIONS]",
         {{"trace", "", "ID is an imported trace, not a session"},
          {"format", "F", "mooncake (the default and only one)"},
          {"output", "FILE", "write to FILE (-o FILE also works; default: stdout)"}},
         runExportTrace},
        {"export-config",
         "write a session's last config (or --config FILE) in a server's syntax",
         "--format F (--session ID | --config FILE) [OPTIONS]",
         {{"format", "F", "triton, vllm, tgi, torchserve or ray-serve"},
          {"session", "ID", "export the config the session ended with"},
          {"output", "FILE", "write to FILE (-o FILE also works; default: stdout)"}},
         runExportConfig},
        {"import-config",
         "read a server's batching settings (export-config's syntax) as a BatchPilot config",
         "FILE [OPTIONS]",
         {{"format", "F", "triton, vllm, tgi, torchserve or ray-serve (default: detected from the content)"},
          {"output", "FILE", "write the config JSON to FILE (-o FILE also works; default: stdout)"},
          {"json", "", "print the knobs set, the server's settings as read and the notes with the config"}},
         runImportConfig},
        {"traces",
         "list the imported traces",
         "[OPTIONS]",
         {{"json", "", "print the list as JSON"}},
         runTraces},
        {"sessions",
         "list the recorded and replayed sessions",
         "[OPTIONS]",
         {{"json", "", "print the list as JSON"}},
         runSessions},
        {"replay",
         "replay a session (or --trace ID) under a config and compare",
         "ID [OPTIONS]",
         {{"trace", "", "ID is an imported trace, not a session"},
          {"speed", "X", "divide every gap between arrivals by X (default 1)"},
          {"length-scale", "S", "multiply input and output token counts by S (default 1)"},
          {"limit", "N", "replay only the first N arrivals (default 0 = all)"},
          {"virtual", "", "virtual clock: batching and queueing only, the model runs but takes no time"},
          {"simulate", "", "simulated: no model runs; each batch costs what a calibration predicts"},
          {"replicas", "N",
           "with --simulate: a fleet of N replicas of the engine behind a router (default 1)"},
          {"router", "P",
           "with --simulate --replicas N, or --target URL1,URL2: round-robin, least-outstanding (default), "
           "least-kv or prefix-affinity"},
          {"calibration", "ID|FILE",
           "with --simulate: a stored calibration or a JSON file (default: the newest for --model/--preset)"},
          {"noise", "none|mean|drawn",
           "with --simulate: charge each batch its prediction, x the fit's mean residual, or x a residual "
           "drawn "
           "from the fit, with the calibration's scheduler lateness likewise (default drawn, seeded)"},
          {"no-clamp", "", "submit lengths the model cannot take as they are (default: clamp them)"},
          {"compare", "SESSION", "compare with this session (default: the source session)"},
          {"notes", "TEXT", "notes stored with the new session"},
          {"json", "", "print the comparison as JSON"},
          {"target", "URL[,URL...]",
           "drive this remote server instead of the embedded engine (docs/remote.md); "
           "--model is then the model's name there, --token its bearer token; several URLs, "
           "comma-separated, are a fleet behind the client-side --router"},
          {"protocol", "oip|openai|openai-chat",
           "remote protocol: KServe v2 infer, OpenAI /v1/completions streaming, or OpenAI "
           "/v1/chat/completions streaming (default oip)"},
          {"max-concurrency", "N", "remote: requests on the wire at most, one connection each (default 64)"},
          {"max-queued", "N",
           "remote: requests waiting for a connection at most; more are shed by the client and counted "
           "(0 = no cap; default 4096)"},
          {"timeout", "MS", "remote: per-request timeout in ms, 0 = none (default 60000)"},
          {"scrape-interval", "MS",
           "remote: sample the target's /metrics every MS ms, 0 = never (default 1000)"},
          {"metrics-url", "URL",
           "remote: where the target's Prometheus metrics are (default TARGET/metrics)"},
          {"max-new-tokens", "N", "remote: cap on each request's generated tokens (default: the trace's)"}},
         runReplay},
        {"calibrate",
         "fit a cost model for --model (profile, recorded batches) for replay --simulate",
         "[OPTIONS]",
         {{"quick", "", "a small profile grid (seconds instead of minutes)"},
          {"session", "ID",
           "also fit the batch rows of this recorded session (and its serving overhead); with --target: "
           "refine the target's newest calibration with this remote session's requests"},
          {"no-profile", "", "with --session: fit the session's batch rows alone, run no profile"},
          {"list", "", "list the stored calibrations"},
          {"export", "ID", "print calibration ID as JSON (or write it to --output FILE)"},
          {"output", "FILE", "with --export: the file to write"},
          {"import", "FILE", "store a calibration exported as JSON"},
          {"json", "", "print the result as JSON"},
          {"target", "URL",
           "calibrate this remote server from outside with a bounded probe (docs/remote.md); --model is "
           "the model's name there, --token its bearer token, --vocab-size its vocabulary"},
          {"protocol", "openai|openai-chat|oip",
           "remote: the protocol to probe with (default openai; oip has no token events: prefill and "
           "whole answers only)"},
          {"server", "auto|vllm|tgi|sglang|triton|llamacpp|batchpilot",
           "remote: the server's kind, for where its settings are read (default auto: from /metrics)"},
          {"server-config", "FILE",
           "remote: the server's settings from this file (vllm serve / text-generation-launcher flags, "
           "config.pbtxt, BatchPilot config JSON) instead of reading them from the server"},
          {"max-concurrency", "N", "remote: the probe's most requests at once (default 32)"},
          {"max-duration", "S",
           "remote: stop the probe after S seconds and fit what was measured (default 600)"},
          {"timeout", "MS", "remote: per-request timeout in ms (default 60000)"},
          {"metrics-url", "URL",
           "remote: where the server's Prometheus metrics are (default TARGET/metrics)"},
          {"scrape-interval", "MS",
           "remote: sample /metrics every MS ms during the probe, 0 = first and last only (default 250)"},
          {"refresh", "ID",
           "remote: measure the server's single-stream pace again (4 requests, seconds) and store "
           "calibration "
           "ID anew with its costs scaled to it"}},
         runCalibrate},
        {"tune",
         "search the batching knobs in simulation for an SLO, recommend a config and verify it for real",
         "(--trace ID | --session ID) --slo SPEC [OPTIONS]",
         {{"trace", "ID", "tune for this imported trace's arrivals"},
          {"session", "ID", "tune for this recorded session's arrivals"},
          {"slo", "SPEC", "'p99<=200ms' (end to end) or 'ttft_p99<=500ms,tpot_p99<=50ms'; units us, ms, s"},
          {"objective", "goodput|throughput",
           "goodput: most requests/s within the SLO; throughput: most requests/s among configs that meet it "
           "(default goodput)"},
          {"speed", "X", "divide every gap between arrivals by X (default 1)"},
          {"length-scale", "S", "multiply input and output token counts by S (default 1)"},
          {"limit", "N", "use only the first N arrivals (default 0 = all)"},
          {"budget", "N", "configs to simulate at most, capacity probes aside (default 240)"},
          {"instances", "N", "search 1..N model instances (default 2)"},
          {"jobs", "N", "simulations run in parallel (default: the number of cores)"},
          {"calibration", "ID|FILE",
           "the cost model: a stored calibration or a JSON file (default: the newest "
           "for --model/--preset)"},
          {"noise", "none|mean|drawn",
           "charge each simulated batch its prediction, x the fit's mean residual, or x a residual drawn "
           "from "
           "the fit, with the calibration's scheduler lateness likewise (default drawn, seeded)"},
          {"output", "FILE", "write the recommended config as JSON (for --config or PUT /v1/config)"},
          {"verify-window", "busiest:LEN|first:LEN|all",
           "the arrivals the real-clock check replays: the LEN-long stretch with the most arrivals, the "
           "first LEN, or all of them (default busiest:3m; LEN in ms, s, m, h); its expected duration is "
           "printed first, Ctrl+C keeps what was verified"},
          {"no-verify", "", "skip the real-clock replay that checks the recommendation"},
          {"json", "", "print every candidate, the front, the recommendation and the check as JSON"},
          {"target", "URL",
           "tune this remote server (--model: the model's name there): its calibration from calibrate "
           "--target, its scheduler model (vllm, tgi, sglang, triton, llamacpp or batchpilot) and its "
           "current "
           "settings the base; prints the pick in the server's syntax (launch flags, config.pbtxt, or PUT "
           "/v1/config)"},
          {"server-config", "FILE",
           "with --target: the server's current settings from this file (vllm serve / "
           "text-generation-launcher flags, config.pbtxt, BatchPilot config JSON) instead of reading them "
           "from the server"},
          {"apply", "",
           "with --target on a BatchPilot server: send the pick (PUT /v1/config), then verify it with a "
           "replay into the server (other servers: restart them with the printed command)"}},
         runTune},
        {"plan",
         "plan a fleet: the fewest replicas (and router) meeting an SLO in each window of a trace, in "
         "simulation",
         "(--trace ID | --session ID) --slo SPEC [OPTIONS]",
         {{"trace", "ID", "plan for this imported trace (streamed window by window)"},
          {"session", "ID", "plan for this recorded session's arrivals"},
          {"slo", "SPEC", "'p99<=2s' (end to end) or 'ttft_p99<=500ms,tpot_p99<=50ms'; units us, ms, s"},
          {"replicas", "LO..HI", "replica counts to search (default 1..16; N means 1..N)"},
          {"router", "P[,P...]|all",
           "routers to compare: round-robin, least-outstanding, least-kv, prefix-affinity, or all "
           "(default least-outstanding; the first is searched fully, the others below its answer)"},
          {"window", "LEN", "plan each LEN of the trace (default 1h; ms, s, m, h, d)"},
          {"rate-scale", "K", "plan for K times the trace's rate (every gap divided by K; default 1)"},
          {"replica-cost", "PER_HOUR",
           "a replica's price per hour: the plan's cost, per hour and per 1M output tokens"},
          {"router-queue", "N",
           "hold requests at the router while every replica has N outstanding (default 0: route on arrival)"},
          {"jobs", "N", "windows planned in parallel (default: the number of cores)"},
          {"calibration", "ID|FILE",
           "the cost model: a stored calibration or a JSON file (default: the newest for --model/--preset)"},
          {"noise", "none|mean|drawn", "how each simulated batch is charged (default drawn, seeded)"},
          {"export", "FORMAT",
           "print the plan as ray-serve (autoscaling_config), vllm (--data-parallel-size), hpa, or keda (the "
           "hour-of-day schedule as KEDA cron triggers)"},
          {"no-store", "", "do not store the plan in the trace database"},
          {"json", "", "print the plan as JSON"}},
         runPlan},
        {"autoscale",
         "replay an autoscaler policy over a trace in simulation (cold starts, drains, SLO per window, cost, "
         "a search for the cheapest policy meeting the SLO); advise on a live fleet: every period, scrape "
         "each server's /metrics and print what the policy would do and why (changes nothing); or print the "
         "policy as a KEDA or HPA manifest",
         "(--trace ID --slo SPEC | --watch URL[,URL...] | --decide | --export keda|hpa) [OPTIONS]",
         {{"trace", "ID",
           "replay the policy over this imported trace on a simulated fleet (stored unless --no-store)"},
          {"slo", "SPEC", "trace: 'p99<=2s' or 'ttft_p99<=2s,tpot_p99<=200ms'; judged per window"},
          {"calibration", "ID|FILE",
           "trace: the cost model of a replica (default: the newest for --model/--preset)"},
          {"rate-scale", "K", "trace: K times the trace's rate (every gap divided by K; default 1)"},
          {"window", "LEN", "trace: the SLO windows, in serving time (default 5m)"},
          {"cold-start", "LEN",
           "trace: from a replica asked for to serving (default: --model-bytes / --load-bandwidth + "
           "--warmup)"},
          {"model-bytes", "N", "trace: the weights a new replica loads (default: the calibrated model's)"},
          {"load-bandwidth", "BYTES_PER_S",
           "trace: disk or network bandwidth the weights load at (default 1e9: 1 GB/s)"},
          {"warmup", "LEN", "trace: start-up and warm-up beside the load (default 30s)"},
          {"initial", "N", "trace: replicas serving at the start (default: the policy's minimum)"},
          {"router", "P", "trace: the fleet's router (default least-outstanding)"},
          {"router-queue", "N", "trace: hold requests at the router while every replica has N outstanding"},
          {"replica-cost", "PER_HOUR",
           "trace: a replica's price per hour: the run's, the plan's and the "
           "fixed fleet's cost"},
          {"plan", "ID", "trace: compare with this stored plan (default: plan the trace first, hourly)"},
          {"no-compare", "", "trace: skip the static plan and the fixed fleet"},
          {"search", "", "trace: search the policy's knobs for the cheapest that meets the SLO"},
          {"required-share", "F",
           "trace --search: the share of windows that must meet the SLO (default 0.99)"},
          {"jobs", "N", "trace: simulations in parallel (default: the number of cores)"},
          {"noise", "none|mean|drawn", "trace: how each simulated batch is charged (default drawn, seeded)"},
          {"no-store", "", "trace: do not store the run in the trace database"},
          {"decide", "",
           "read one fleet observation per line on stdin (JSON: at_s, ready, starting, waiting, running, "
           "kv_usage, arrival_rate) and print the policy's decision per line (JSON: replicas, why): the "
           "policy for a controller of your own"},
          {"watch", "URL[,URL...]",
           "the servers (vLLM, TGI, SGLang, Triton or BatchPilot) whose /metrics to read"},
          {"policy", "P", "reactive (default: HPA's algorithm on --metric), scheduled or predictive"},
          {"metric", "M", "reactive: queue (default), running, kv or rate, averaged per replica"},
          {"target", "X",
           "reactive: the metric's target per replica (default queue 4, running 32, kv 0.7, rate 1)"},
          {"tolerance", "F", "reactive: no change while value/target is within 1 +- F (default 0.1)"},
          {"up-window", "LEN", "scale-up stabilization window (default 0)"},
          {"down-window", "LEN", "scale-down stabilization window (default 300s)"},
          {"min", "N", "fewest replicas (default 1)"},
          {"max", "N", "most replicas (default 8)"},
          {"schedule", "N,N,...", "scheduled: replicas per slot, repeating (plan's hour-of-day schedule)"},
          {"slot", "LEN", "scheduled: a slot's length (default 1h)"},
          {"lead", "LEN", "scheduled: ask for a slot this early, a cold start (default 180s)"},
          {"replica-rate", "R", "predictive: requests/s one replica serves within the SLO"},
          {"horizon", "LEN", "predictive: forecast this far ahead, a cold start (default 180s)"},
          {"alpha", "A", "predictive: Holt's level smoothing (default 0.5)"},
          {"beta", "B", "predictive: Holt's trend smoothing (default 0.3)"},
          {"headroom", "H", "predictive: replicas for H times the forecast (default 1)"},
          {"period", "LEN", "the decision period (default 15s, HPA's sync period)"},
          {"count", "N", "stop after N rounds (default 40: 10 minutes at 15s)"},
          {"token", "T", "bearer token for the servers' /metrics"},
          {"json", "", "watch: print each round as one JSON line; trace: print the run as JSON"},
          {"export", "FORMAT",
           "print the policy as a manifest instead of watching: keda (a ScaledObject) or hpa "
           "(autoscaling/v2)"},
          {"deployment", "NAME", "export: the Deployment scaled, also the manifest's name (default vllm)"},
          {"namespace", "NS", "export: its namespace (default default)"},
          {"prometheus", "URL",
           "export keda: the Prometheus KEDA queries (default http://prometheus.monitoring:9090)"},
          {"server", "S", "export: whose metric names: vllm (default), tgi, sglang or batchpilot"},
          {"timezone", "TZ", "export keda: the cron triggers' time zone (default UTC)"},
          {"output", "FILE", "export: write to FILE (-o FILE also works; default: stdout)"}},
         runAutoscale},
        {"report",
         "write a session report: report SESSION -o FILE.html|FILE.pdf|FILE.json",
         "SESSION -o FILE.html|FILE.pdf|FILE.json [OPTIONS]",
         {{"output", "FILE", "the report to write (-o FILE also works); the extension picks the format"}},
         runReport,
         /*paints=*/true},
    };
    return list;
}

const Command *findCommand(const QString &name)
{
    for (const Command &c : commands())
        if (c.name == name)
            return &c;
    return nullptr;
}

QList<OptionSpec> commandOptions(const QString &name)
{
    const Command *c = findCommand(name);
    return c ? c->options : QList<OptionSpec>{};
}

QString commandHelp(const Command &c)
{
    return QStringLiteral("Usage: batchpilot %1 %2\n%3\n\nOptions:\n%4\nCommon options:\n%5")
        .arg(c.name, c.synopsis, c.summary, formatOptions(c.options), formatOptions(appOptionSpecs()));
}

} // namespace bp::app
