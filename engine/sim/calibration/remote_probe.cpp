// The rows a probe's answers (or a recorded remote session) give the remote
// fit (remote_calibration.h); the plan that sends them is probe_plan.cpp.
#include "engine/sim/calibration/remote_calibration.h"
#include "engine/sim/calibration/statistics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace bp {

double kvCellsOf(std::int64_t context, int kvPad)
{
    return kvPad > 0 ? double(std::max<std::int64_t>(kvPad, (context + kvPad - 1) / kvPad * kvPad))
                     : double(context);
}

std::array<double, ProbeObservation::kTerms> prefillTerms(int promptTokens, int chunk, int kvPad)
{
    std::array<double, ProbeObservation::kTerms> t{1, 0, 0, 0, 0, 0};
    const std::int64_t L = promptTokens;
    const std::int64_t c = chunk > 0 ? chunk : std::max<std::int64_t>(1, L);
    for (std::int64_t cached = 0; cached < L; cached += c) {
        const std::int64_t fed = std::min(c, L - cached);
        t[1] += 1;
        t[2] += 1;
        t[3] += double(fed);
        t[4] += double(fed) * kvCellsOf(cached + fed, kvPad);
    }
    return t;
}

namespace {

// Tokens per event from the events' gaps (gaps[i - 1] before event i) and
// their median, summing to `total` (see perTokenTimes).
std::vector<int> tokensPerEvent(const std::vector<double> &gaps, double median, int total)
{
    const std::size_t events = gaps.size() + 1;
    std::vector<int> k(events, 1);
    int sum = int(events);
    if (median > 0)
        for (std::size_t i = 1; i < events; ++i) {
            k[i] = std::max(1, int(std::lround(gaps[i - 1] / median)));
            sum += k[i] - 1;
        }
    // One token at a time to the event whose per-token gap stays closest to
    // the median (a gap of 2.4 medians takes a third before one of 1.6 takes
    // a second), or away from the one it moves least.
    while (sum != total) {
        std::size_t best = 0;
        double bestCost = 1e300;
        for (std::size_t i = 1; i < events; ++i) {
            const int next = k[i] + (sum < total ? 1 : -1);
            if (next < 1)
                continue;
            const double cost = std::abs(gaps[i - 1] / next - median) - std::abs(gaps[i - 1] / k[i] - median);
            if (cost < bestCost)
                best = i, bestCost = cost;
        }
        if (best == 0)
            break; // every event at one token: no fewer
        k[best] += sum < total ? 1 : -1;
        sum += sum < total ? 1 : -1;
    }
    return k;
}

} // namespace

std::vector<double> perTokenTimes(const std::vector<double> &events, const std::vector<int> &counts,
                                  int total)
{
    // More tokens than this an event is not a stream's chunking but a
    // server's wrong count: it is not spread (nor its memory spent).
    constexpr std::int64_t kMostPerEvent = 64;
    const std::int64_t most = kMostPerEvent * std::int64_t(events.size());
    std::vector<double> gaps;
    for (std::size_t i = 1; i < events.size(); ++i)
        gaps.push_back(events[i] - events[i - 1]);
    double step = 0; // the median gap
    if (!gaps.empty()) {
        std::vector<double> sorted = gaps;
        std::nth_element(sorted.begin(), sorted.begin() + std::ptrdiff_t(sorted.size() / 2), sorted.end());
        step = sorted[sorted.size() / 2];
    }
    std::vector<int> k; // tokens per event
    if (counts.size() == events.size() && !counts.empty() && counts.front() >= 1 && counts.back() <= most &&
        std::is_sorted(counts.begin(), counts.end())) {
        k.push_back(counts.front());
        for (std::size_t i = 1; i < counts.size(); ++i)
            k.push_back(std::max(1, counts[i] - counts[i - 1]));
    } else if (events.size() >= 3 && total > int(events.size()) && total <= most) {
        k = tokensPerEvent(gaps, step, total);
    } else {
        return events;
    }
    std::vector<double> out;
    for (int j = k.front() - 1; j >= 0; --j)
        out.push_back(events.front() - j * step);
    for (std::size_t i = 1; i < events.size(); ++i)
        for (int j = 1; j <= k[i]; ++j)
            out.push_back(j == k[i] ? events[i] : events[i - 1] + (events[i] - events[i - 1]) * j / k[i]);
    return out;
}

namespace {

using Terms = std::array<double, ProbeObservation::kTerms>;

// Decode items of `streams` whose token events fall in (ta, tb]: event i
// (i >= 1) fed token i − 1 at context prompt + i.
void addDecodes(const std::vector<const ProbeRequest *> &streams, double ta, double tb, int kvPad, Terms &t)
{
    for (const ProbeRequest *s : streams) {
        const auto &times = s->tokenTimesS;
        auto it = std::upper_bound(times.begin(), times.end(), ta);
        for (; it != times.end() && *it <= tb; ++it) {
            const auto i = std::distance(times.begin(), it);
            if (i == 0)
                continue; // the first token came from the prefill
            t[2] += 1;
            t[3] += 1;
            t[4] += kvCellsOf(s->promptTokens + i, kvPad);
            t[5] += kvCellsOf(s->promptTokens + i, kvPad);
        }
    }
}

const ProbeRequest *clockOf(const std::vector<const ProbeRequest *> &streams, double from)
{
    const ProbeRequest *best = nullptr;
    std::ptrdiff_t most = 0;
    for (const ProbeRequest *s : streams) {
        const auto n = std::distance(std::upper_bound(s->tokenTimesS.begin(), s->tokenTimesS.end(), from),
                                     s->tokenTimesS.end());
        if (n > most)
            best = s, most = n;
    }
    return best;
}

// The forward passes a turn of `streams` takes on a server that splits a
// batch by slot (llama-server with a KV cache per slot: split_equal takes
// only adjacent slots into one pass): one per run of adjacent slots when
// every stream asked for its slot, else one.
int passesOf(const std::vector<const ProbeRequest *> &streams)
{
    std::vector<int> slots;
    for (const ProbeRequest *s : streams) {
        if (s->slot < 0)
            return 1;
        slots.push_back(s->slot);
    }
    std::sort(slots.begin(), slots.end());
    int runs = 1;
    for (std::size_t i = 1; i < slots.size(); ++i)
        runs += slots[i] != slots[i - 1] + 1 ? 1 : 0;
    return runs;
}

void decodeBlocks(const std::vector<const ProbeRequest *> &streams, int block, int kvPad,
                  std::vector<ProbeObservation> &out)
{
    if (streams.empty())
        return;
    double t0 = 0; // every stream decodes from here on
    for (const ProbeRequest *s : streams)
        t0 = std::max(t0, s->tokenTimesS.front());
    const ProbeRequest *clock = clockOf(streams, t0);
    if (!clock)
        return;
    const int passes = passesOf(streams);
    const auto &ct = clock->tokenTimesS;
    std::size_t k = std::size_t(std::lower_bound(ct.begin(), ct.end(), t0) - ct.begin());
    // At most 4 blocks a round: a server that writes several token events in
    // one go (or a client that reads them in one piece) blurs single steps;
    // over a quarter of the round that blur is a small part of each row.
    if (ct.size() > k + 1)
        block = std::max(block, int((ct.size() - k - 1) / 4));
    for (; k + std::size_t(block) < ct.size(); k += std::size_t(block)) {
        ProbeObservation o;
        o.phase = "decode";
        o.terms[1] = block * passes;
        addDecodes(streams, ct[k], ct[k + std::size_t(block)], kvPad, o.terms);
        o.seconds = ct[k + std::size_t(block)] - ct[k];
        for (std::size_t i = k; i < k + std::size_t(block); ++i)
            o.steps.push_back(ct[i + 1] - ct[i]);
        if (o.seconds > 0 && o.terms[2] > 0)
            out.push_back(o);
    }
}

// The cells saved as the probe's requests started (savedAtStart's, by
// index from `first`; empty: none), added to a row that holds r's start
// (the s8 term).
struct SavedCells {
    std::vector<double> cells;
    const ProbeRequest *first = nullptr;
    void addTo(const ProbeRequest *r, Terms &terms) const
    {
        if (!cells.empty())
            terms[6] += cells[std::size_t(r - first)];
    }
};

void mixedRows(const std::vector<const ProbeRequest *> &streams,
               const std::vector<const ProbeRequest *> &probes, int chunk, bool prefillAlone, int kvPad,
               const SavedCells &saved, std::vector<ProbeObservation> &out)
{
    for (const ProbeRequest *p : probes) {
        if (!p->firstTokenS)
            continue;
        const ProbeRequest *clock = clockOf(streams, p->sentS);
        if (!clock)
            continue;
        const auto &ct = clock->tokenTimesS;
        // The clock's step gap, to tell the step that ran the prompt's last
        // chunk from the next one (their events arrive about together).
        std::vector<double> gaps;
        for (std::size_t i = 1; i < ct.size(); ++i)
            gaps.push_back(ct[i] - ct[i - 1]);
        std::nth_element(gaps.begin(), gaps.begin() + std::ptrdiff_t(gaps.size() / 2), gaps.end());
        const double half = gaps.empty() ? 0 : gaps[gaps.size() / 2] / 2;
        const auto a = std::upper_bound(ct.begin(), ct.end(), p->sentS);
        const auto b = std::lower_bound(ct.begin(), ct.end(), *p->firstTokenS - half);
        if (a == ct.begin() || b == ct.end() || b < a)
            continue;
        const double ta = *(a - 1), tb = *b;
        ProbeObservation o;
        o.phase = "mixed";
        o.terms[1] = double(std::distance(a - 1, b));
        addDecodes(streams, ta, tb, kvPad, o.terms);
        const Terms pre = prefillTerms(p->promptTokens, chunk, kvPad);
        // A chunk step is one of the decode streams' steps, or (a server
        // that prefills alone) a step of its own between two of theirs.
        for (int i = prefillAlone ? 1 : 2; i < ProbeObservation::kTerms; ++i)
            o.terms[std::size_t(i)] += pre[std::size_t(i)];
        saved.addTo(p, o.terms);
        o.seconds = tb - ta;
        if (o.seconds > 0 && o.terms[1] > 0)
            out.push_back(o);
    }
}

} // namespace

bool prefillAlone(const std::string &server)
{
    return server == "tgi" || server == "sglang";
}

std::optional<double> medianTokenGap(const ProbeRequest &r)
{
    if (!r.ok || r.tokenTimesS.size() < 8)
        return std::nullopt;
    std::vector<double> gaps;
    for (std::size_t i = 1; i < r.tokenTimesS.size(); ++i)
        gaps.push_back(r.tokenTimesS[i] - r.tokenTimesS[i - 1]);
    return median(std::move(gaps));
}

namespace {

// The probe's first single-stream decode and its pace round (either null).
std::pair<const ProbeRequest *, const ProbeRequest *> paceRequests(const std::vector<ProbeRequest> &requests)
{
    const ProbeRequest *first = nullptr, *last = nullptr;
    for (const ProbeRequest &r : requests) {
        if (!first && r.phase == "decode" && r.concurrency == 1)
            first = &r;
        if (r.phase == "pace")
            last = &r;
    }
    return {first, last};
}

} // namespace

std::optional<PaceChange> paceChange(const std::vector<ProbeRequest> &requests)
{
    const auto [first, last] = paceRequests(requests);
    if (!first || !last)
        return std::nullopt;
    const auto a = medianTokenGap(*first), b = medianTokenGap(*last);
    if (!a || !b || *a <= 0)
        return std::nullopt;
    return PaceChange{*a, *b};
}

std::optional<PaceReference> paceReference(const std::vector<ProbeRequest> &requests)
{
    const auto [first, last] = paceRequests(requests);
    const auto a = first ? medianTokenGap(*first) : std::nullopt;
    if (!a || *a <= 0)
        return std::nullopt;
    const auto b = last ? medianTokenGap(*last) : std::nullopt;
    if (!b || *b <= 0)
        return PaceReference{first->promptTokens, first->maxTokens, *a, 1, 0};
    return PaceReference{first->promptTokens, first->maxTokens, (*a + *b) / 2, 2, relativeSpread({*a, *b})};
}

std::string describe(const PaceChange &pace)
{
    char line[160];
    std::snprintf(
        line, sizeof line,
        "pace: a single stream's step %.2f ms in the first decode round, %.2f ms in the last (%+.0f %%)",
        1e3 * pace.firstStepS, 1e3 * pace.lastStepS, 100 * pace.change());
    return line;
}

std::vector<double> savedAtStart(const std::vector<ProbeRequest> &requests)
{
    std::vector<std::size_t> bySend;
    for (std::size_t i = 0; i < requests.size(); ++i)
        if (requests[i].ok)
            bySend.push_back(i);
    std::sort(bySend.begin(), bySend.end(),
              [&](std::size_t a, std::size_t b) { return requests[a].sentS < requests[b].sentS; });
    std::vector<std::size_t> byEnd = bySend;
    std::sort(byEnd.begin(), byEnd.end(),
              [&](std::size_t a, std::size_t b) { return requests[a].endS < requests[b].endS; });
    std::vector<double> out(requests.size(), 0);
    std::size_t ended = 0;
    for (std::size_t i : bySend) {
        // every request that ended before this one was sent and was not
        // saved at an earlier start: its slot's context (prompt and the
        // tokens fed after it)
        double cells = 0;
        for (; ended < byEnd.size() && requests[byEnd[ended]].endS <= requests[i].sentS; ++ended) {
            const ProbeRequest &q = requests[byEnd[ended]];
            cells += q.promptTokens + std::max(0, q.outputTokens - 1);
        }
        out[i] = cells;
    }
    return out;
}

std::vector<ProbeObservation> probeObservations(const std::vector<ProbeRequest> &requests, int chunk,
                                                bool streaming, int block, bool prefillAlone, int kvPad,
                                                bool savesIdleSlots)
{
    const SavedCells saved{savesIdleSlots ? savedAtStart(requests) : std::vector<double>{}, requests.data()};
    std::map<int, std::vector<const ProbeRequest *>> rounds;
    for (const ProbeRequest &r : requests)
        if (r.ok)
            rounds[r.round].push_back(&r);
    std::vector<ProbeObservation> out;
    for (const auto &[round, rs] : rounds) {
        const std::string &phase = rs.front()->phase;
        if (phase == "prefill" || (!streaming && phase == "decode")) {
            for (const ProbeRequest *r : rs) {
                const double until = streaming ? r->firstTokenS.value_or(-1) : r->endS;
                if (until <= r->sentS || r->concurrency != 1)
                    continue;
                ProbeObservation o;
                o.phase = phase;
                o.terms = prefillTerms(r->promptTokens, chunk, kvPad);
                saved.addTo(r, o.terms);
                for (int e = 1; !streaming && e < r->outputTokens; ++e) { // whole answers: the decodes too
                    o.terms[1] += 1;
                    o.terms[2] += 1;
                    o.terms[3] += 1;
                    o.terms[4] += kvCellsOf(r->promptTokens + e, kvPad);
                    o.terms[5] += kvCellsOf(r->promptTokens + e, kvPad);
                }
                o.seconds = until - r->sentS;
                out.push_back(o);
            }
        } else if (phase == "decode") {
            std::vector<const ProbeRequest *> streams;
            for (const ProbeRequest *r : rs)
                if (r->tokenTimesS.size() >= 2)
                    streams.push_back(r);
            if (streams.size() == rs.front()->concurrency * 1u)
                decodeBlocks(streams, block, kvPad, out);
        } else if (phase == "mixed") {
            std::vector<const ProbeRequest *> streams, probes;
            for (const ProbeRequest *r : rs)
                (r->stream ? streams : probes).push_back(r);
            std::erase_if(streams, [](const ProbeRequest *s) { return s->tokenTimesS.size() < 2; });
            mixedRows(streams, probes, chunk, prefillAlone, kvPad, saved, out);
        }
    }
    return out;
}

std::vector<ProbeObservation> sessionObservations(const std::vector<StoredRequest> &requests, int chunk,
                                                  int kvPad)
{
    struct Span {
        double arrival, first, end;
        int prompt, out;
    };
    std::vector<Span> spans;
    for (const StoredRequest &r : requests)
        if (r.status == StatusCode::Ok && r.timeToFirstToken > Duration::zero() &&
            r.total > r.timeToFirstToken)
            spans.push_back({toSeconds(r.arrival), toSeconds(r.arrival + r.timeToFirstToken),
                             toSeconds(r.arrival + r.total), r.inputTokens, r.outputTokens});
    std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) { return a.first < b.first; });
    std::vector<ProbeObservation> out;
    for (const Span &r : spans) {
        if (r.out < 2)
            continue;
        ProbeObservation o;
        o.phase = "session";
        o.terms[1] = r.out - 1;
        o.seconds = r.end - r.first;
        for (const Span &j : spans) {
            if (j.first > r.end)
                break;
            if (j.end <= r.first)
                continue;
            // j's decodes, spread evenly over its decode span
            const double lo = std::max(r.first, j.first), hi = std::min(r.end, j.end);
            const double span = j.end - j.first;
            if (hi > lo && span > 0 && j.out > 1) {
                const double decodes = (j.out - 1) * (hi - lo) / span;
                const double fromIndex = 1 + (j.out - 1) * (lo - j.first) / span;
                const double toIndex = 1 + (j.out - 1) * (hi - j.first) / span;
                o.terms[2] += decodes;
                o.terms[3] += decodes;
                const double context = kvCellsOf(std::llround(j.prompt + (fromIndex + toIndex) / 2), kvPad);
                o.terms[4] += decodes * context;
                o.terms[5] += decodes * context;
            }
            // j's prompt ran in a step of r's window when its first token came in it
            if (&j != &r && j.first > r.first && j.first <= r.end) {
                const Terms pre = prefillTerms(j.prompt, chunk, kvPad);
                for (int i = 2; i < ProbeObservation::kTerms; ++i)
                    o.terms[std::size_t(i)] += pre[std::size_t(i)];
            }
        }
        if (o.seconds > 0)
            out.push_back(o);
    }
    return out;
}

} // namespace bp
