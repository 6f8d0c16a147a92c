#include "engine/sim/calibration/remote_calibrate.h"

#include "engine/sim/calibration/statistics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace bp {

namespace {

std::optional<double> knob(const ServerSettings &s, const char *key)
{
    if (!s.knobs.contains(key))
        return std::nullopt;
    const auto &v = s.knobs[key];
    if (v.is_boolean())
        return v.get<bool>() ? 1.0 : 0.0;
    if (v.is_number())
        return v.get<double>();
    return std::nullopt;
}

} // namespace

int prefillChunkOf(const ServerSettings &s)
{
    const bool continuous = s.knobs.contains("policy") && s.knobs["policy"].is_string() &&
                            s.knobs["policy"].get<std::string>() == "continuous";
    if (!continuous || knob(s, "continuous.chunked_prefill").value_or(0) == 0)
        return 0;
    double chunk = knob(s, "continuous.prefill_chunk").value_or(0);
    if (const auto budget = knob(s, "continuous.max_num_batched_tokens"); budget && *budget > 0)
        chunk = chunk > 0 ? std::min(chunk, *budget) : *budget;
    return int(chunk);
}

std::optional<int> runningCapOf(const ObservedLimits &l)
{
    if (!l.runningIsCap || !l.maxRunning || *l.maxRunning < 1)
        return std::nullopt;
    return int(std::llround(*l.maxRunning));
}

std::string leaveRoomForProbes(ProbeRound &round, int cap)
{
    if (round.probes.empty() || round.concurrency < cap || cap < 1)
        return {};
    const std::string seen = "the server ran at most " + std::to_string(cap) + " sequence" +
                             (cap == 1 ? "" : "s") + " while requests waited";
    if (cap == 1) {
        const std::string what = "dropped, its " + std::to_string(round.concurrency) + " streams and " +
                                 std::to_string(round.probes.size()) + " prompts not sent: " + seen +
                                 ", so no prompt can run beside a stream";
        round.concurrency = 0;
        round.probes.clear();
        return what;
    }
    const std::string what = std::to_string(cap - 1) + " streams, not " + std::to_string(round.concurrency) +
                             ": " + seen + ", and each prompt needs a place beside the streams";
    round.concurrency = cap - 1;
    return what;
}

KvViewChoice chooseKvView(const std::vector<ProbeRequest> &requests, int chunk, bool streaming,
                          bool prefillAlone, int kvPad, bool savesIdleSlots)
{
    KvViewChoice out;
    out.rows = probeObservations(requests, chunk, streaming, 8, prefillAlone, 0, savesIdleSlots);
    if (kvPad <= 0)
        return out;
    auto padded = probeObservations(requests, chunk, streaming, 8, prefillAlone, kvPad, savesIdleSlots);
    if (const auto fit = fitRemote(out.rows))
        out.contextError = fit->error.medianRel;
    if (const auto fit = fitRemote(padded))
        out.paddedError = fit->error.medianRel;
    if (out.paddedError && (!out.contextError || *out.paddedError <= *out.contextError)) {
        out.rows = std::move(padded);
        out.padded = true;
    }
    return out;
}

std::string describe(const KvViewChoice &choice, int kvPad)
{
    if (kvPad <= 0)
        return {};
    const std::string view = "the KV view padded to " + std::to_string(kvPad) + " cells";
    std::string s = choice.padded ? "attention priced on " + view + ", not on each item's own context"
                                  : "attention priced on each item's own context, not on " + view;
    if (choice.paddedError && choice.contextError) {
        char line[96];
        const double kept = choice.padded ? *choice.paddedError : *choice.contextError;
        const double other = choice.padded ? *choice.contextError : *choice.paddedError;
        std::snprintf(line, sizeof line,
                      ": the probe's rows fit it better (median error %.1f %% against %.1f %%)", 100 * kept,
                      100 * other);
        s += line;
    } else {
        s += ": the other way could not be fitted";
    }
    return s;
}

Result<Calibration> remoteCalibration(const std::string &model, int vocabSize, std::int64_t maxModelLen,
                                      RemoteCalibration remote, const std::string &source)
{
    auto fit = fitRemote(remote.observations);
    if (!fit)
        return fit.status();
    Calibration c;
    c.model = model;
    c.device = "remote";
    c.generative = true;
    c.vocabSize = std::max(1, vocabSize);
    const std::int64_t len = std::max<std::int64_t>(2, remote.settings.maxModelLen.value_or(maxModelLen));
    c.positions = int(std::min<std::int64_t>(len, 1 << 30));
    c.maxSequenceLength = c.positions - 1;
    c.maxNewTokensLimit = c.positions - 1;
    c.cost = remoteCostModel(*fit);
    c.cost.attentionOnKvView = remote.paddedKvView;
    c.error = fit->error;
    c.batchError = fit->error;
    if (auto d = fit->phases.find("decode"); d != fit->phases.end())
        c.iterationError = d->second;
    c.source = source;
    c.observations = remote.observations.size();
    remote.terms = fit->terms;
    remote.phases = fit->phases;
    remote.requestOverheadS = fit->terms.empty() ? 0 : fit->terms.front().value;
    c.remote = std::move(remote);
    return c;
}

std::optional<PaceRatio> paceAgainst(const RemoteCalibration &remote,
                                     const std::vector<ProbeRequest> &refresh)
{
    if (!remote.pace || remote.pace->stepS <= 0)
        return std::nullopt;
    std::vector<double> steps;
    for (const ProbeRequest &r : refresh)
        if (r.phase == "decode" && r.concurrency == 1)
            if (const auto gap = medianTokenGap(r); gap && *gap > 0)
                steps.push_back(*gap);
    if (steps.empty())
        return std::nullopt;
    PaceRatio p;
    p.requests = steps.size();
    p.spread = relativeSpread(steps);
    p.thenRequests = remote.pace->requests;
    p.thenSpread = remote.pace->spread;
    p.stepNowS = median(std::move(steps));
    p.stepThenS = remote.pace->stepS;
    p.ratio = p.stepNowS / p.stepThenS;
    return p;
}

void scalePace(RemoteCalibration &remote, double ratio)
{
    for (ProbeObservation &o : remote.observations) {
        o.seconds *= ratio;
        for (double &step : o.steps)
            step *= ratio;
    }
    if (remote.pace)
        remote.pace->stepS *= ratio;
}

std::string describe(const PaceRatio &pace, std::int64_t calibrationId)
{
    char line[240];
    std::snprintf(line, sizeof line,
                  "refresh: a single stream's step %.2f ms now (%zu requests, %.0f %% apart), %.2f ms when "
                  "calibration %lld was measured (%d request%s, %.0f %% apart): x%.3f",
                  1e3 * pace.stepNowS, pace.requests, 100 * pace.spread, 1e3 * pace.stepThenS,
                  static_cast<long long>(calibrationId), pace.thenRequests, pace.thenRequests == 1 ? "" : "s",
                  100 * pace.thenSpread, pace.ratio);
    return line;
}

} // namespace bp
