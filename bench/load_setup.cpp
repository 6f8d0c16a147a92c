#include "load_setup.h"

#include "model_profile.h"

#include "engine/config/config_json.h"
#include "engine/workload/trace_csv.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace bp::bench {

const std::vector<OptionHelp> &conversationOptions()
{
    static const std::vector<OptionHelp> options = {
        {"conversations", "N", "arrivals start N conversations (default 0: single requests)"},
        {"turns", "N", "turns per conversation (default 1); later turns resend the context"},
        {"think-time", "S", "seconds from an answer to the next turn, closed loop (default 0)"},
    };
    return options;
}

namespace {

// The output and input caps, the shared system prompt and the conversations:
// what bounds every request whatever its arrivals.
void boundsFromArgs(const Args &args, const ModelInfo &model, WorkloadSpec &w)
{
    const bool generative = model.generative;
    w.maxNewTokens = generative ? int(args.num("max-new-tokens", 16)) : 0;
    // Default output cap: 256 tokens, at most half the decoder's positions.
    w.outputCap =
        int(args.num("output-cap", generative ? std::min(256, (model.maxSequenceLength + 1) / 2) : 0));
    if (generative && w.outputCap > 0)
        w.maxNewTokens = std::min(w.maxNewTokens, w.outputCap);
    // input + output must fit the decoder's positions (maxSequenceLength + 1)
    const int defaultCap =
        generative ? std::max(1, model.maxSequenceLength + 1 - std::max(w.outputCap, w.maxNewTokens))
                   : model.maxSequenceLength;
    w.lengthCap = int(args.num("length-cap", defaultCap));
    if (w.lengthCap < 1 ||
        (generative && w.lengthCap + std::max(w.outputCap, w.maxNewTokens) > model.maxSequenceLength + 1))
        throw std::invalid_argument(
            "--length-cap " + std::to_string(w.lengthCap) + " plus " +
            std::to_string(std::max(w.outputCap, w.maxNewTokens)) + " new tokens does not fit the model's " +
            std::to_string(model.maxSequenceLength + (generative ? 1 : 0)) + " positions");

    // A shared system prompt in front of a share of the prompts (prefix caching).
    w.systemPromptTokens = int(args.num("system-prompt", 0));
    w.systemPromptShare = args.num("system-prompt-share", 1);
    if (w.systemPromptTokens < 0 || !(w.systemPromptShare >= 0 && w.systemPromptShare <= 1))
        throw std::invalid_argument("--system-prompt must be >= 0 and --system-prompt-share in [0, 1]");
    if (w.systemPromptTokens > 0) { // the prompt's own tokens make room for it
        if (w.systemPromptTokens >= w.lengthCap)
            throw std::invalid_argument("--system-prompt " + std::to_string(w.systemPromptTokens) +
                                        " leaves no room for the prompts' own tokens within --length-cap " +
                                        std::to_string(w.lengthCap));
        w.lengthCap -= w.systemPromptTokens;
    }
    // Conversations (traffic_pacer.h): later turns resend the context, cut to the length cap.
    const double conversations = args.num("conversations", 0);
    if (conversations < 0 || conversations != std::floor(conversations))
        throw std::invalid_argument("--conversations must be a whole number >= 0");
    w.conversations = std::size_t(conversations);
    w.turnsPerConversation = int(args.num("turns", 1));
    w.thinkTimeS = args.num("think-time", 0);
    if (Status st = w.validate(); !st) // the defaults of everything else are valid
        throw std::invalid_argument(st.message());
}

// --trace FILE: its arrivals and lengths; the rate is the trace's own over
// warm-up + window.
void traceFromArgs(const Args &args, const ModelInfo &model, Setup &s)
{
    WorkloadSpec &w = s.workload;
    const bool generative = model.generative;
    const std::string path = args.str("trace", "");
    auto parsed = parseTraceFile(path);
    if (!parsed)
        throw std::invalid_argument(parsed.status().message());
    w.trace = std::make_shared<const std::vector<TraceRow>>(std::move(parsed->rows));
    w.arrivals = ArrivalKind::Trace;
    w.lengths = LengthKind::Trace;
    w.timeScale = args.num("time-scale", 1);
    w.lengthScale = args.num("length-scale", 1);
    w.outputFromTrace = !(generative && args.has("max-new-tokens"));
    if (args.has("rate") || args.has("rates") || args.has("arrivals"))
        throw std::invalid_argument(
            "--trace sets the arrivals; use --time-scale instead of --rate/--arrivals");
    double in = 0, out = 0;
    for (const auto &row : *w.trace) {
        in += std::min<double>(w.lengthCap, std::max(1.0, std::round(row.inputTokens * w.lengthScale)));
        out += std::max(1.0, std::round(row.outputTokens * w.lengthScale));
    }
    const double n = double(w.trace->size());
    s.typicalLength = int(std::ceil(in / n));
    s.typicalNewTokens = generative ? (w.outputFromTrace ? int(std::lround(out / n)) : w.maxNewTokens) : 0;
    if (generative && w.outputCap > 0)
        s.typicalNewTokens = std::min(s.typicalNewTokens, w.outputCap);
    // offered rate of the trace's first `warmup + duration` seconds
    std::size_t rows = 0;
    while (rows < w.trace->size() && (*w.trace)[rows].arrivalS / w.timeScale < s.warmupS + s.durationS)
        ++rows;
    w.limit = rows;
    s.rates = {double(rows) / (s.warmupS + s.durationS)};
    s.describe = "trace " + path + " (time x" + args.str("time-scale", "1") + ", lengths x" +
                 args.str("length-scale", "1") + ", " + std::to_string(rows) + " requests)";
}

// Arrivals drawn at --rate (or each of --rates), lengths fixed or uniform.
void syntheticFromArgs(const Args &args, const ModelInfo &model, Setup &s)
{
    WorkloadSpec &w = s.workload;
    const std::string arrivals = args.str("arrivals", args.has("burstiness") ? "gamma" : "poisson");
    auto kind = parseArrivalKind(arrivals);
    if (!kind || *kind == ArrivalKind::Trace)
        throw std::invalid_argument(
            "--arrivals expects poisson, gamma, constant or bursts (or use --trace FILE)");
    w.arrivals = *kind;
    w.burstiness = args.num("burstiness", 4);
    if (args.has("min-length") || args.has("max-length")) {
        w.lengths = LengthKind::Uniform;
        w.minLength = int(args.num("min-length", 8));
        w.maxLength = int(args.num("max-length", 128));
        s.typicalLength = (w.minLength + w.maxLength + 1) / 2;
    } else {
        w.lengths = LengthKind::Fixed;
        w.fixedLength = int(args.num("length", 64));
        s.typicalLength = w.fixedLength;
    }
    s.typicalLength = std::min(s.typicalLength, w.lengthCap > 0 ? w.lengthCap : s.typicalLength);
    s.typicalNewTokens = w.maxNewTokens;
    if (args.has("rates")) {
        for (const auto &item : args.list("rates", ""))
            s.rates.push_back(std::stod(item));
    } else {
        s.rates = {args.num("rate", 50)};
    }
    for (double r : s.rates)
        if (!(r > 0))
            throw std::invalid_argument("rates must be positive");
    s.describe = arrivals +
                 (w.arrivals == ArrivalKind::Gamma ? " (CV² " + args.str("burstiness", "4") + ")" : "") +
                 ", " +
                 (w.lengths == LengthKind::Fixed
                      ? "length " + std::to_string(w.fixedLength)
                      : "lengths " + std::to_string(w.minLength) + ".." + std::to_string(w.maxLength)) +
                 (model.generative ? ", " + std::to_string(w.maxNewTokens) + " new tokens" : "");
}

} // namespace

Setup workloadFromArgs(const Args &args, const ModelInfo &model)
{
    Setup s;
    WorkloadSpec &w = s.workload;
    w.vocabSize = std::min(model.vocabSize, 256);
    w.seed = std::uint64_t(args.num("workload-seed", 1));
    s.warmupS = args.num("warmup", 2);
    s.durationS = args.num("duration", 10);
    s.drainS = args.num("drain", 5);
    if (s.warmupS < 0 || s.durationS <= 0 || s.drainS < 0)
        throw std::invalid_argument("--warmup and --drain must be >= 0, --duration > 0");
    boundsFromArgs(args, model, w);
    if (args.has("trace"))
        traceFromArgs(args, model, s);
    else
        syntheticFromArgs(args, model, s);
    return s;
}

std::vector<int> parseSwitchList(const std::string &key, const std::vector<std::string> &items)
{
    std::vector<int> out;
    for (const std::string &item : items) {
        if (item != "0" && item != "1")
            throw std::invalid_argument("--" + key + " expects 0 or 1 (or a list: 0,1), got '" + item + "'");
        out.push_back(item == "1");
    }
    if (out.empty())
        throw std::invalid_argument("--" + key + " expects 0 or 1 (or a list: 0,1)");
    return out;
}

BatchingConfig baseConfig(const Args &args)
{
    BatchingConfig base;
    base.queueCapacity = 4096;
    if (args.has("config")) {
        auto loaded = loadConfigFile(args.str("config", ""));
        if (!loaded)
            throw std::invalid_argument(loaded.status().message());
        base = *loaded;
    }
    if (args.has("max-batch"))
        base.maxBatchSize = int(args.num("max-batch", 16));
    if (args.has("delay-us"))
        base.maxQueueDelay = std::chrono::microseconds(std::int64_t(args.num("delay-us", 5000)));
    if (args.has("buckets"))
        base.bucketEdges = parseIntList("buckets", args.list("buckets", ""));
    if (args.has("static-batch"))
        base.staticBatchSize = int(args.num("static-batch", 8));
    if (args.has("static-length"))
        base.staticPaddedLength = int(args.num("static-length", 128));
    if (args.has("instances"))
        base.instances = int(args.num("instances", 1));
    if (args.has("queue"))
        base.queueCapacity = int(args.num("queue", 4096));
    ContinuousConfig &cc = base.continuous;
    if (args.has("max-num-seqs"))
        cc.maxNumSeqs = int(args.num("max-num-seqs", 16));
    if (args.has("max-num-batched-tokens")) // a list: the first here, each in turn by expandTokenBudgets
        cc.maxNumBatchedTokens =
            parseIntList("max-num-batched-tokens", args.list("max-num-batched-tokens", "")).at(0);
    if (args.has("chunked-prefill"))
        cc.chunkedPrefill = args.num("chunked-prefill", 1) != 0;
    if (args.has("prefill-chunk"))
        cc.prefillChunk = int(args.num("prefill-chunk", 128));
    if (args.has("decode-first"))
        cc.decodeFirst = args.num("decode-first", 1) != 0;
    if (args.has("kv-cache-tokens"))
        cc.kvCacheTokens = int(args.num("kv-cache-tokens", 0));
    if (args.has("prefix-cache")) // a list: the first here, each in turn by the load bench
        base.prefixCache.enabled = parseSwitchList("prefix-cache", args.list("prefix-cache", "")).at(0) != 0;
    if (args.has("prefix-block"))
        base.prefixCache.blockTokens = int(args.num("prefix-block", 16));
    return base;
}

int batchLimit(const BatchingConfig &c)
{
    switch (c.policy) {
    case PolicyKind::None: return 1;
    case PolicyKind::Static: return c.staticBatchSize;
    case PolicyKind::Continuous: return c.continuous.maxNumSeqs;
    default: return c.maxBatchSize;
    }
}

std::string knobs(const BatchingConfig &c)
{
    switch (c.policy) {
    case PolicyKind::None: return "batch 1";
    case PolicyKind::Static:
        return "N=" + std::to_string(c.staticBatchSize) + " L=" + std::to_string(c.staticPaddedLength);
    case PolicyKind::Dynamic:
        return "max " + std::to_string(c.maxBatchSize) + ", " + formatDuration(c.maxQueueDelay);
    case PolicyKind::Bucketed: {
        std::string e;
        for (int edge : c.bucketEdges)
            e += (e.empty() ? "" : ",") + std::to_string(edge);
        return "max " + std::to_string(c.maxBatchSize) + ", " + formatDuration(c.maxQueueDelay) + ", " + e;
    }
    case PolicyKind::Continuous: {
        const ContinuousConfig &k = c.continuous;
        return "seqs " + std::to_string(k.maxNumSeqs) + ", tok " + std::to_string(k.maxNumBatchedTokens) +
               (k.chunkedPrefill ? ", chunk " + std::to_string(k.prefillChunk) : ", no chunk") +
               (k.kvCacheTokens > 0 ? ", kv " + std::to_string(k.kvCacheTokens) : "") +
               (c.prefixCache.enabled ? ", prefix " + std::to_string(c.prefixCache.blockTokens) : "");
    }
    default: // policies added later: name their main knobs
        return "max " + std::to_string(c.maxBatchSize) + ", " + formatDuration(c.maxQueueDelay);
    }
}

} // namespace bp::bench
