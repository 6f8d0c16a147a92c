// The probe plan: its rounds, their bound, and what `calibrate --target`
// prints before it sends anything (remote_calibration.h).
#include "engine/sim/calibration/remote_calibration.h"

#include <algorithm>
#include <map>
#include <sstream>

namespace bp {

namespace {

std::vector<int> powersUpTo(int n)
{
    std::vector<int> out;
    for (int c = 1; c < n; c *= 2)
        out.push_back(c);
    out.push_back(std::max(1, n));
    return out;
}

int longPrompt(std::int64_t maxModelLen)
{
    return int(std::min<std::int64_t>(1024, maxModelLen / 2));
}

std::string range(const std::vector<int> &v)
{
    if (v.empty())
        return "-";
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return *lo == *hi ? std::to_string(*lo) : std::to_string(*lo) + ".." + std::to_string(*hi);
}

} // namespace

ProbePlan ProbePlan::full(int maxConcurrency, bool streaming)
{
    ProbePlan p;
    p.streaming = streaming;
    p.decodeConcurrency = powersUpTo(maxConcurrency);
    p.longDecodeConcurrency = {1, std::min(8, std::max(1, maxConcurrency))};
    p.mixedStreams = std::max(1, maxConcurrency / 2);
    if (!streaming) {
        p.decodeConcurrency = {1};
        p.longDecodeConcurrency = {1};
        p.mixedLengths.clear();
    }
    return p;
}

ProbePlan ProbePlan::quick(int maxConcurrency, bool streaming)
{
    ProbePlan p;
    p.streaming = streaming;
    p.prefillLengths = {16, 128, 512};
    p.prefillRepeats = 2;
    p.decodeConcurrency.clear();
    for (int c : {1, 4, 16})
        if (c <= maxConcurrency)
            p.decodeConcurrency.push_back(c);
    p.decodeTokens = 64;
    p.longDecodeConcurrency = {1};
    p.mixedStreams = std::max(1, std::min(4, maxConcurrency));
    p.mixedTokens = 128;
    p.mixedLengths = {128, 512};
    if (!streaming) {
        p.decodeConcurrency = {1};
        p.mixedLengths.clear();
    }
    return p;
}

ProbePlan ProbePlan::refresh(const PaceReference &reference)
{
    ProbePlan p;
    p.prefillLengths.clear();
    p.decodePrompt = reference.promptTokens;
    p.decodeTokens = reference.maxTokens;
    p.decodeConcurrency = {1, 1, 1};
    p.longDecodeConcurrency.clear();
    p.mixedLengths.clear();
    p.pace = false;
    return p;
}

ProbePlan ProbePlan::withSpreadRound(int slots) const
{
    ProbePlan p = *this;
    if (slots < 3 || decodeConcurrency.empty())
        return p;
    const int widest = *std::max_element(decodeConcurrency.begin(), decodeConcurrency.end());
    const int streams = std::min(widest, (slots + 1) / 2);
    p.spreadStreams = streams >= 2 ? streams : 0;
    return p;
}

ProbePlan ProbePlan::fittedTo(std::int64_t maxModelLen) const
{
    ProbePlan p = *this;
    p.maxModelLen = maxModelLen;
    const auto fits = [&](int prompt) { return prompt >= 1 && prompt + 1 <= maxModelLen; };
    std::erase_if(p.prefillLengths, [&](int L) { return !fits(L); });
    if (p.prefillLengths.size() < prefillLengths.size() && maxModelLen > 2)
        p.prefillLengths.push_back(int(maxModelLen - 1));
    p.decodePrompt = int(std::min<std::int64_t>(decodePrompt, std::max<std::int64_t>(1, maxModelLen / 4)));
    p.decodeTokens = int(std::min<std::int64_t>(decodeTokens, maxModelLen - p.decodePrompt));
    p.mixedTokens = int(std::min<std::int64_t>(mixedTokens, maxModelLen - p.decodePrompt));
    std::erase_if(p.mixedLengths, [&](int L) { return !fits(L); });
    if (p.decodeTokens < 8)
        p.decodeConcurrency.clear(), p.longDecodeConcurrency.clear();
    if (p.mixedTokens < 8)
        p.mixedLengths.clear();
    return p;
}

std::vector<ProbeRound> ProbePlan::rounds() const
{
    std::vector<ProbeRound> out;
    for (int w = 0; w < warmup; ++w)
        out.push_back(
            {"warmup", 1, std::min<int>(16, int(std::max<std::int64_t>(1, maxModelLen - 2))), 2, {}, 1});
    for (int r = 0; r < prefillRepeats; ++r) // repeats outermost: drift spreads over every length
        for (int L : prefillLengths)
            out.push_back({"prefill", 1, L, 1, {}, 1});
    for (int c : decodeConcurrency)
        out.push_back({"decode", c, decodePrompt, decodeTokens, {}, 1});
    if (spreadStreams >= 2 && !decodeConcurrency.empty())
        out.push_back({"decode", spreadStreams, decodePrompt, decodeTokens, {}, 2});
    const int lp = longPrompt(maxModelLen);
    const int lt = int(std::min<std::int64_t>(decodeTokens, maxModelLen - lp));
    if (lp > decodePrompt && lt >= 8)
        for (int c : longDecodeConcurrency)
            out.push_back({"decode", c, lp, lt, {}, 1});
    if (streaming && !mixedLengths.empty() && mixedStreams > 0)
        out.push_back({"mixed", mixedStreams, decodePrompt, mixedTokens, mixedLengths, 1});
    // The first decode round's single stream again, last: how far the
    // server's own pace moved while the probe ran (paceChange; not fitted).
    if (streaming && pace &&
        std::find(decodeConcurrency.begin(), decodeConcurrency.end(), 1) != decodeConcurrency.end())
        out.push_back({"pace", 1, decodePrompt, decodeTokens, {}, 1});
    return out;
}

std::size_t ProbePlan::requests() const
{
    std::size_t n = 0;
    for (const ProbeRound &r : rounds())
        n += std::size_t(r.concurrency) + r.probes.size();
    return n;
}

Duration ProbePlan::bound() const
{
    Duration total{};
    for (const ProbeRound &r : rounds())
        total += timeout * (r.probes.empty() ? 1 : 2);
    return std::min(total, maxDuration);
}

std::string ProbePlan::describe() const
{
    const std::vector<ProbeRound> all = rounds();
    std::map<std::string, std::vector<const ProbeRound *>> by;
    for (const ProbeRound &r : all)
        by[r.phase].push_back(&r);
    std::ostringstream s;
    if (by.count("warmup"))
        s << "warmup: " << by["warmup"].size()
          << " request(s), 2 tokens each, not fitted: the connection opened, the server awake\n";
    if (by.count("prefill"))
        s << "prefill: " << by["prefill"].size() << " requests one at a time, prompts "
          << range(prefillLengths) << " tokens (x" << prefillRepeats
          << "), max_tokens 1: TTFT over prompt length\n";
    if (by.count("decode")) {
        std::size_t n = 0;
        std::vector<int> at, prompts;
        const ProbeRound *spread = nullptr;
        for (const ProbeRound *r : by["decode"]) {
            n += std::size_t(r->concurrency), at.push_back(r->concurrency),
                prompts.push_back(r->promptTokens);
            if (r->slotStride > 1)
                spread = r;
        }
        s << "decode: " << n << " requests in " << by["decode"].size() << " rounds of " << range(at)
          << " at once, prompts " << range(prompts) << ", " << decodeTokens << " tokens each: "
          << (streaming ? "inter-token gaps over running sequences\n" : "whole answers (no token events)\n");
        if (spread)
            s << "  one of them with its " << spread->concurrency << " streams in every other slot (0, 2, "
              << "...): each decodes in a forward pass of its own a turn, what a pass itself costs\n";
    }
    if (by.count("mixed")) {
        const ProbeRound &r = *by["mixed"].front();
        s << "mixed: " << r.concurrency << " streams of " << r.maxTokens << " tokens while "
          << r.probes.size() << " prompts (" << range(r.probes)
          << ") go one at a time: how prefills slow running decodes\n";
    }
    if (by.count("pace"))
        s << "pace: 1 request, the first decode round's single stream again, last: how far the server's pace "
             "moved while the probe ran (not fitted)\n";
    return s.str();
}

} // namespace bp
