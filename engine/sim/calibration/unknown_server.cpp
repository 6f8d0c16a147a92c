#include "engine/sim/calibration/unknown_server.h"

#include "engine/sim/calibration/remote_settings.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace bp {

namespace {

double median(std::vector<double> v)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

std::string fixed(double v, int digits = 1)
{
    char b[32];
    std::snprintf(b, sizeof b, "%.*f", digits, v);
    return b;
}

double medianGap(const ProbeRequest &r)
{
    std::vector<double> gaps;
    for (std::size_t i = 1; i < r.tokenTimesS.size(); ++i)
        gaps.push_back(r.tokenTimesS[i] - r.tokenTimesS[i - 1]);
    return median(gaps);
}

// `alone`: a prompt length's median TTFT in the prefill round (one at a
// time), where the probe measured it.
void inferFromMixed(const std::vector<const ProbeRequest *> &mixed, const std::map<int, double> &alone,
                    InferredScheduler &out)
{
    std::vector<const ProbeRequest *> streams, prompts;
    for (const ProbeRequest *r : mixed)
        (r->stream ? streams : prompts).push_back(r);
    if (streams.empty() || prompts.empty())
        return;
    int joined = 0, waited = 0, counted = 0, stalled = 0;
    for (const ProbeRequest *p : prompts) {
        if (!p->firstTokenS)
            continue;
        const double first = *p->firstTokenS;
        // Streams still running when the prompt's first token came.
        bool anyRunningAfter = false, anyRunningAtSend = false;
        double longestStall = 0, lastEnd = 0;
        for (const ProbeRequest *s : streams) {
            if (s->endS > p->sentS + 1e-9 && s->tokenTimesS.size() > 1 && s->tokenTimesS.front() < p->sentS) {
                anyRunningAtSend = true;
                lastEnd = std::max(lastEnd, s->endS);
            }
            if (s->endS > first + 1e-9 && s->tokenTimesS.front() < p->sentS)
                anyRunningAfter = true;
            // The longest gap in this stream's tokens around the prompt's prefill.
            for (std::size_t i = 1; i < s->tokenTimesS.size(); ++i)
                if (s->tokenTimesS[i] >= p->sentS && s->tokenTimesS[i - 1] <= first)
                    longestStall = std::max(longestStall, s->tokenTimesS[i] - s->tokenTimesS[i - 1]);
        }
        if (!anyRunningAtSend)
            continue;
        // The streams ended before its first token: it waited for them only
        // if its prefill then took about as long as alone. A first token
        // sooner after their end than that means the prefill had begun
        // beside them — a long prompt outliving a short stream (on
        // llama-server 2 of 9 calibrations read so as request level).
        bool joinedEarly = false;
        if (!anyRunningAfter)
            if (const auto a = alone.find(p->promptTokens); a != alone.end() && a->second > 0)
                joinedEarly = first - lastEnd < 0.8 * a->second;
        (anyRunningAfter || joinedEarly ? joined : waited) += 1;
        const double prefill = first - p->sentS;
        if (anyRunningAfter && prefill > 0) {
            ++counted;
            if (longestStall >= 0.8 * prefill)
                ++stalled;
        }
    }
    const int n = joined + waited;
    if (n == 0)
        return;
    out.iterationLevel = joined * 2 > n;
    out.evidence.push_back(
        std::string(*out.iterationLevel ? "iteration-level" : "request-level") + ": in the mixed round " +
        std::to_string(joined) + " of " + std::to_string(n) +
        " prompts sent while streams ran got their first token before those streams ended" +
        (joined == n || waited == n ? " (all agree)" : " (not unanimous: unsure)"));
    if (counted > 0) {
        out.prefillJoins = stalled * 2 <= counted;
        out.evidence.push_back(
            std::string(*out.prefillJoins ? "prefill joins the decode steps" : "prefill runs alone") +
            ": the running streams " + (*out.prefillJoins ? "kept producing tokens" : "stalled") +
            " during " + std::to_string(*out.prefillJoins ? counted - stalled : stalled) + " of " +
            std::to_string(counted) + " prompts' prefill (mixed round)");
    }
}

void inferFromDecode(const std::map<int, std::vector<const ProbeRequest *>> &rounds, InferredScheduler &out)
{
    if (rounds.empty())
        return;
    // The widest round: its concurrency, and the latest round of that width.
    const auto &[width, widest] = *rounds.rbegin();
    out.widestRound = width;
    double firstEnd = 1e300;
    for (const ProbeRequest *r : widest)
        firstEnd = std::min(firstEnd, r->endS);
    int started = 0;
    for (const ProbeRequest *r : widest)
        if (r->firstTokenS && *r->firstTokenS < firstEnd)
            ++started;
    if (started < int(widest.size()) && started > 0) {
        out.runningCap = started;
        out.evidence.push_back("running cap " + std::to_string(started) + ": of " +
                               std::to_string(widest.size()) + " requests sent at once (decode round), " +
                               std::to_string(started) +
                               " got a first token before the first of them finished; the rest waited");
    } else {
        out.evidence.push_back("no running cap up to " + std::to_string(width) +
                               ": every request of the widest decode round started before any finished");
    }
    std::vector<double> one, wide;
    if (const auto it = rounds.find(1); it != rounds.end())
        for (const ProbeRequest *r : it->second)
            one.push_back(medianGap(*r));
    for (const ProbeRequest *r : widest)
        wide.push_back(medianGap(*r));
    if (width > 1 && median(one) > 0) {
        out.tpotGrowth = median(wide) / median(one);
        out.evidence.push_back("TPOT at " + std::to_string(width) + " at once is x" +
                               fixed(*out.tpotGrowth, 2) + " that at 1 (decode rounds)");
    }
}

} // namespace

InferredScheduler inferScheduler(const std::vector<ProbeRequest> &requests)
{
    InferredScheduler out;
    std::map<std::pair<std::string, int>, std::vector<const ProbeRequest *>> byRound;
    for (const ProbeRequest &r : requests)
        if (r.ok)
            byRound[{r.phase, r.round}].push_back(&r);
    std::map<int, std::vector<double>> prefill; // prompt length -> TTFTs one at a time
    for (const ProbeRequest &r : requests)
        if (r.ok && r.phase == "prefill" && r.concurrency == 1 && r.firstTokenS)
            prefill[r.promptTokens].push_back(*r.firstTokenS - r.sentS);
    std::map<int, double> alone;
    for (auto &[length, ttfts] : prefill)
        alone[length] = median(ttfts);
    std::map<int, std::vector<const ProbeRequest *>> decode; // concurrency -> the latest such round
    for (const auto &[key, rs] : byRound) {
        if (key.first == "decode")
            decode[rs.front()->concurrency] = rs;
        if (key.first == "mixed")
            inferFromMixed(rs, alone, out);
    }
    inferFromDecode(decode, out);
    if (!out.iterationLevel)
        out.evidence.push_back(
            "the scheduling level cannot be told: no streamed mixed round in which a prompt "
            "was sent while others generated");
    return out;
}

ServerSettings inferredSettings(const InferredScheduler &in)
{
    ServerSettings s;
    s.source = "inferred from the probe's rounds";
    nlohmann::json j = nlohmann::json::object();
    if (in.iterationLevel)
        j["level"] = *in.iterationLevel ? "iteration" : "request";
    if (in.runningCap)
        j["running_cap"] = *in.runningCap;
    if (in.prefillJoins)
        j["prefill_joins_decode"] = *in.prefillJoins;
    if (in.tpotGrowth)
        j["tpot_growth"] = *in.tpotGrowth;
    j["widest_round"] = in.widestRound;
    s.settings["inferred"] = j;
    s.notes = in.evidence;
    if (!in.iterationLevel)
        return s;
    const int cap = in.runningCap.value_or(std::max(1, in.widestRound));
    if (*in.iterationLevel) {
        setServerKnob(s, "policy", double(int(PolicyKind::Continuous)));
        setServerKnob(s, "continuous.max_num_seqs", double(cap));
        setServerKnob(s, "continuous.chunked_prefill", in.prefillJoins.value_or(true) ? 1.0 : 0.0);
    } else {
        setServerKnob(s, "policy", double(int(PolicyKind::Dynamic)));
        setServerKnob(s, "max_batch_size", double(std::min(cap, 1024)));
    }
    return s;
}

bool hasInferredScheduler(const ServerSettings &settings)
{
    return settings.server.empty() && settings.settings.contains("inferred") &&
           settings.knobs.contains("policy");
}

} // namespace bp
