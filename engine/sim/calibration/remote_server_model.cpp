#include "engine/sim/calibration/remote_server_model.h"

#include "engine/config/config_rules.h"
#include "engine/config/server_command.h"
#include "engine/sched/server_models/llamacpp_scheduler.h"
#include "engine/sim/calibration/unknown_server.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace bp {

namespace {

// The settings of a kind that the probe can see acting as a cap.
struct ProbeKnobs {
    const char *running = nullptr; // sequences running at once
    const char *tokens = nullptr;  // tokens in one step (a prefill chunk)
};

ProbeKnobs probeKnobs(ServerKind kind)
{
    switch (kind) {
    case ServerKind::Vllm: return {"max_num_seqs", "max_num_batched_tokens"};
    case ServerKind::Sglang: return {"max_running_requests", "chunked_prefill_size"};
    case ServerKind::Tgi: return {"max_batch_size", nullptr};
    case ServerKind::LlamaCpp: return {"n_parallel", "n_batch"};
    default: return {};
    }
}

std::string whole(double v)
{
    return std::to_string(std::llround(v));
}

// The scheduler's settings of `c`, in the server's names and order.
std::vector<std::pair<std::string, std::string>> schedulerSettings(const BatchingConfig &c)
{
    auto out = serverModelSettings(c.server);
    if (c.server.kind == ServerKind::Triton) {
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(c.maxQueueDelay).count();
        out.insert(out.begin(), {{"max_batch_size", std::to_string(c.maxBatchSize)},
                                 {"max_queue_delay_microseconds", std::to_string(us)}});
    }
    return out;
}

// The KV settings' names: where a KV capacity read or measured lands.
bool isKvSetting(const std::string &name)
{
    return name == "kv_cache_tokens" || name == "max_total_tokens" || name == "max_batch_total_tokens" ||
           name == "n_ctx";
}

} // namespace

int serverPrefillChunk(const BatchingConfig &c)
{
    switch (c.server.kind) {
    case ServerKind::Vllm: return c.server.vllm.chunkedPrefill ? c.server.vllm.maxNumBatchedTokens : 0;
    case ServerKind::Sglang: return std::max(0, c.server.sglang.chunkedPrefillSize);
    case ServerKind::LlamaCpp: return std::max(0, c.server.llamacpp.nUbatch);
    default: return 0;
    }
}

int serverKvPad(const BatchingConfig &c)
{
    return c.server.kind == ServerKind::LlamaCpp ? int(LlamaCppScheduler::kKvPad) : 0;
}

bool serverSavesIdleSlots(const BatchingConfig &c)
{
    return c.server.kind == ServerKind::LlamaCpp;
}

bool serverPrefillAlone(const BatchingConfig &c)
{
    switch (c.server.kind) {
    case ServerKind::Tgi:
    case ServerKind::Sglang: return true;
    case ServerKind::LlamaCpp: return !c.server.llamacpp.kvUnified && c.server.llamacpp.nParallel > 1;
    default: return false;
    }
}

bool simulatesServerModel(const RemoteCalibration &calibration)
{
    const auto kind = parseServerKind(calibration.server);
    return (kind && *kind != ServerKind::BatchPilot) || hasInferredScheduler(calibration.settings);
}

std::optional<std::string> unknownKindMessage(const RemoteCalibration &calibration,
                                              const std::string &command)
{
    if (parseServerKind(calibration.server) || hasInferredScheduler(calibration.settings))
        return std::nullopt;
    return command + ": the server's kind is " +
           (calibration.server.empty() ? std::string("not known") : "'" + calibration.server + "'") +
           " (its /metrics and routes matched no server modelled here), so there is no scheduler model of it "
           "to simulate; BatchPilot's own scheduler is not assumed in its place. Calibrate again with "
           "--server "
           "KIND (vllm, tgi, sglang, triton, llamacpp, batchpilot) if it is one of those, or give --config "
           "FILE "
           "to simulate a scheduler of your choosing (said as assumed in the output)";
}

Result<RemoteServerModel> remoteServerModel(const RemoteCalibration &cal, const ServerSettings *given)
{
    RemoteServerModel out;
    out.server = cal.server;
    const std::optional<ServerKind> kind = parseServerKind(cal.server);
    // 1 and 2: the settings given, over those the calibration read.
    ServerSettings merged = cal.settings;
    std::map<std::string, std::string> origin;
    for (const auto &[key, value] : cal.settings.settings.items())
        origin[key] =
            "read: " + (cal.settings.source.empty() ? std::string("the server") : cal.settings.source);
    if (given) {
        for (const auto &[key, value] : given->settings.items()) {
            merged.settings[key] = value;
            origin[key] = given->source.empty() ? std::string("given") : given->source;
        }
        for (const auto &[key, value] : given->knobs.items())
            merged.knobs[key] = value;
        if (given->kvCapacityTokens)
            merged.kvCapacityTokens = given->kvCapacityTokens;
        if (given->maxModelLen)
            merged.maxModelLen = given->maxModelLen;
    }
    if (!kind || *kind == ServerKind::BatchPilot) {
        auto c = serverCurrentConfig(cal.server, merged, cal.limits.kvCapacityTokens);
        if (!c)
            return c.status();
        out.config = *c;
        if (!kind && hasInferredScheduler(merged)) {
            // Unknown kind: the generic scheduler the probe's rounds showed.
            const bool iteration = out.config.policy == PolicyKind::Continuous;
            out.server = std::string("a generic ") + (iteration ? "iteration" : "request") + "-level server";
            out.origins.push_back(
                {"model", describeConfig(out.config),
                 "inferred from the probe's rounds: the server's kind is not known, so this "
                 "is not its own scheduler"});
            for (const std::string &line : merged.notes)
                out.origins.push_back({"evidence", line, "probe"});
        }
        return out;
    }
    // 3: the probe, where it saw a cap and nothing above said otherwise.
    const ObservedLimits &l = cal.limits;
    const ProbeKnobs probe = probeKnobs(*kind);
    if (probe.running && !merged.settings.contains(probe.running) && l.runningIsCap && l.maxRunning &&
        *l.maxRunning >= 1) {
        merged.settings[probe.running] = std::llround(*l.maxRunning);
        origin[probe.running] =
            "probe: " + whole(*l.maxRunning) + " ran while requests waited (running_is_cap)";
    }
    if (probe.tokens && !merged.settings.contains(probe.tokens) && l.tokensPerStepBound && l.longestPrompt &&
        *l.tokensPerStepBound >= 1 && *l.tokensPerStepBound < *l.longestPrompt) {
        merged.settings[probe.tokens] = std::llround(*l.tokensPerStepBound);
        origin[probe.tokens] = "probe: no step had more than " + whole(*l.tokensPerStepBound) +
                               " tokens, though a prompt of " + whole(*l.longestPrompt) + " was sent";
    }
    auto c = serverCurrentConfig(cal.server, merged, l.kvCapacityTokens);
    if (!c)
        return c.status();
    out.config = *c;
    const bool kvRead = merged.kvCapacityTokens.has_value() || merged.settings.contains("num_gpu_blocks") ||
                        merged.settings.contains("num_gpu_blocks_override");
    for (auto &[name, value] : schedulerSettings(out.config)) {
        std::string from;
        if (const auto it = origin.find(name); it != origin.end())
            from = it->second;
        else if (isKvSetting(name) && kvRead)
            from = "read: " + (merged.source.empty() ? std::string("the server") : merged.source);
        else if (isKvSetting(name) && l.kvCapacityTokens)
            from = "probe: tokens in flight / KV usage";
        else
            from = cal.server + "'s default";
        out.origins.push_back({name, value, from});
    }
    return out;
}

std::string RemoteServerModel::describe() const
{
    std::string s;
    for (const SettingOrigin &o : origins) {
        if (!s.empty())
            s += ", ";
        s += o.name + "=" + o.value + " (" + o.origin + ")";
    }
    return s;
}

} // namespace bp
