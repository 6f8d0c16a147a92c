#include "engine/sim/simulation/simulator.h"

#include "engine/core/length_rule.h"

#include "engine/sim/simulation/sim_replica.h"

#include "engine/workload/prefix_tokens.h"

#include <algorithm>
#include <deque>
#include <queue>
#include <unordered_map>

namespace bp {

namespace {

// The config history's changes after the first, for SimOutcome.
struct ChangeCounter final : EngineObserver {
    std::size_t changes = 0;
    void onConfigChanged(const ConfigChange &) override { ++changes; }
};

} // namespace

struct Simulator::Impl {
    using Replica = sim::Replica;

    struct Waiting {
        std::size_t index;
        TimePoint arrival;
    };

    sim::Shared shared;
    const SimulatorOptions &o;
    NoiseDraws &noise;
    TimePoint &now;
    SimOutcome &out;
    std::vector<std::unique_ptr<Replica>> replicas;
    std::shared_ptr<ChangeCounter> changes = std::make_shared<ChangeCounter>();
    Router router;
    std::vector<ReplicaLoad> loads;
    std::vector<std::optional<TimePoint>> completions; // per replica, this event's

    std::unique_ptr<bool[]> eligible; // per replica: below the router's limit
    std::deque<Waiting> routerQueue;
    std::span<const SimArrival> arrivals;
    // Multi-turn: follow-ups released by their previous turn's completion
    // (virtual time, arrival position), and each turn's prompt and answer
    // until its follow-up is built.
    using Due = std::pair<TimePoint, std::size_t>;
    std::priority_queue<Due, std::vector<Due>, std::greater<Due>> released;
    std::unordered_map<std::size_t, std::vector<TokenId>> prompts, answers;

    explicit Impl(const SimulatorOptions &options)
        : shared{options, NoiseDraws(options.costNoise, options.noiseSeed), options.start, {}, {}},
          o(options), noise(shared.noise), now(shared.now), out(shared.out), router([&] {
              RouterOptions r = options.router;
              r.replicas = std::max(1, options.replicas);
              return r;
          }())
    {
        const int n = std::max(1, o.replicas);
        for (int i = 0; i < n; ++i) {
            replicas.push_back(std::make_unique<Replica>(shared, i));
            Replica &r = *replicas.back();
            r.core.addObserver(changes);
            if (!o.observer)
                continue;
            if (n == 1 && o.routerQueueLimit <= 0) // not owned: the caller keeps it alive across run()
                r.core.addObserver(std::shared_ptr<EngineObserver>(o.observer, [](EngineObserver *) {}));
            else
                r.core.addObserver(std::make_shared<sim::ReplicaTagger>(*o.observer, shared, i, n));
        }
        loads.resize(replicas.size());
        completions.resize(replicas.size());
        eligible = std::make_unique<bool[]>(replicas.size());
    }

    void setClocks()
    {
        for (auto &r : replicas)
            r->clock.set(now);
    }

    // Routes arrival `index` (it arrived at `arrival`) to a replica below
    // the router's limit; false when every replica is at it.
    bool route(std::size_t index, TimePoint arrival)
    {
        const SimArrival &a = arrivals[index];
        bool any = false;
        for (std::size_t k = 0; k < replicas.size(); ++k) {
            loads[k] = {replicas[k]->outstanding, replicas[k]->backend->cachedTokens()};
            eligible[k] = o.routerQueueLimit <= 0 || replicas[k]->outstanding < o.routerQueueLimit;
            any = any || eligible[k];
        }
        if (!any)
            return false;
        const int k = replicas.size() == 1
                          ? 0
                          : router.route(prefixKeyOf(a.blocks), loads,
                                         std::span<const bool>(eligible.get(), replicas.size()));
        submit(*replicas[std::size_t(k)], a, index, arrival);
        return true;
    }

    // The prompt: distinct ids (a trace's prompts do not repeat), the
    // trace's blocks in front, a follow-up's context before it.
    std::vector<TokenId> promptOf(const SimArrival &a, std::uint64_t id)
    {
        const bool content = o.config.cache.enabled || !a.blocks.empty() || a.conversation != 0;
        std::vector<TokenId> t(std::size_t(std::max(0, a.inputTokens)));
        if (!content)
            return t;
        const auto vocab = std::uint64_t(std::max(1, o.limits.vocabSize));
        for (std::size_t k = 0; k < t.size(); ++k)
            t[k] = TokenId((id * 2654435761u + k) % vocab);
        std::size_t at = 0;
        for (std::int64_t block : a.blocks) {
            if (at >= t.size() || a.blockTokens <= 0)
                break;
            const std::vector<TokenId> ids = blockTokenIds(block, a.blockTokens, int(vocab));
            const std::size_t n = std::min(ids.size(), t.size() - at);
            std::copy_n(ids.begin(), n, t.begin() + std::ptrdiff_t(at));
            at += n;
        }
        if (a.previous < 0)
            return t;
        const auto prev = std::size_t(a.previous);
        std::vector<TokenId> before = std::move(prompts[prev]), answer = std::move(answers[prev]);
        prompts.erase(prev);
        answers.erase(prev);
        const std::uint64_t seed = std::uint64_t(a.conversation) * 1'000'003u + std::uint64_t(a.turn);
        return nextTurnPrompt(before, answer, arrivals[prev].maxNewTokens, seed, t, int(vocab));
    }

    // A turn completed (or was refused) now: its follow-up is due after its think time.
    void release(std::size_t index, std::vector<TokenId> answer)
    {
        const SimArrival &a = arrivals[index];
        if (a.next < 0)
            return;
        if (a.maxNewTokens > 0)
            answers[index] = std::move(answer);
        released.push({now + arrivals[std::size_t(a.next)].think, std::size_t(a.next)});
    }

    void submit(Replica &rep, const SimArrival &a, std::size_t index, TimePoint arrival)
    {
        Request r;
        r.id = a.id ? a.id : index + 1;
        r.tokens = promptOf(a, r.id);
        r.maxNewTokens = a.maxNewTokens;
        if (a.previous >= 0 && o.limits.maxSequenceLength > 0) {
            // The length rule (engine/core/length_rule.h) on the grown prompt:
            // cut from the end, so the shared prefix stays.
            const ScaledLengths len =
                clampLengths(int(r.tokens.size()), a.maxNewTokens,
                             {.maxLength = o.limits.maxSequenceLength, .generative = a.maxNewTokens > 0});
            if (len.clamped) {
                r.tokens.resize(std::size_t(len.input));
                r.maxNewTokens = len.output;
                ++out.clamped;
            }
        }
        if (a.next >= 0)
            prompts[index] = r.tokens;
        r.conversation = a.conversation;
        r.turn = a.turn;
        r.arrival = arrival; // before now when it waited in the router's queue
        r.priority = a.priority;
        if (a.timeout)
            r.deadline = arrival + *a.timeout;
        const Duration waited = now - arrival;
        if (waited > Duration::zero()) {
            if (o.observer)
                shared.routerWaits[r.id] = waited;
            out.routerWaitTotal += waited;
            out.routerWaitMax = std::max(out.routerWaitMax, waited);
        }
        rep.clock.set(now);
        rep.dirty = true;
        ++rep.fig.routed;
        ++rep.outstanding;
        rep.fig.peakOutstanding = std::max(rep.fig.peakOutstanding, rep.outstanding);
        Replica *p = &rep;
        const Status s = rep.core.submit(std::move(r), [this, p, index](Response &&response) {
            const bool ok = response.status.isOk();
            ++(ok ? out.completed : out.failed);
            ++(ok ? p->fig.completed : p->fig.failed);
            p->fig.outputTokens += response.tokens.size();
            --p->outstanding;
            release(index, std::move(response.tokens));
        });
        ++(s.isOk() ? out.accepted : out.rejected);
        if (!s.isOk()) {
            ++rep.fig.failed;
            --rep.outstanding;
            release(index, {});
        }
    }

    void arrive(std::size_t index)
    {
        ++out.submitted;
        if (!routerQueue.empty() || !route(index, now)) {
            routerQueue.push_back({index, now});
            ++out.routerQueued;
        }
    }

    void drainRouterQueue()
    {
        while (!routerQueue.empty() && route(routerQueue.front().index, routerQueue.front().arrival))
            routerQueue.pop_front();
    }

    void moveTo(TimePoint t, TimePoint &nextSample)
    {
        if (o.onSample && o.samplePeriod > Duration::zero())
            while (nextSample <= t) {
                now = std::max(now, nextSample);
                setClocks();
                o.onSample(snapshot());
                nextSample += o.samplePeriod;
            }
        now = std::max(now, t);
        setClocks();
    }

    Snapshot snapshot() const
    {
        if (replicas.size() == 1)
            return replicas[0]->core.snapshot();
        std::vector<Snapshot> each;
        each.reserve(replicas.size());
        for (const auto &r : replicas)
            each.push_back(r->core.snapshot());
        return fleetSnapshot(each);
    }

    std::size_t queued() const
    {
        std::size_t n = routerQueue.size();
        for (const auto &r : replicas)
            n += r->core.queueDepth();
        return n;
    }

    void run(std::span<const SimArrival> all)
    {
        arrivals = all;
        if (o.observer)
            o.observer->onConfigChanged({o.start, 1, "initial", "start", o.config});
        TimePoint nextSample = o.start + o.samplePeriod;
        std::size_t i = 0; // the next open-loop arrival
        for (;;) {
            while (i < arrivals.size() && arrivals[i].previous >= 0)
                ++i;
            const bool more = i < arrivals.size() || !released.empty();
            if (more && o.cancel && o.cancel->load(std::memory_order_relaxed)) {
                out.cancelled = true;
                break;
            }
            // The next arrival: open loop at its offset, or a released follow-up (ties: the lower position).
            std::optional<Due> nextArrival;
            if (i < arrivals.size())
                nextArrival = Due{o.start + arrivals[i].offset, i};
            if (!released.empty() && (!nextArrival || released.top() < *nextArrival))
                nextArrival = released.top();
            const std::optional<TimePoint> arrival =
                nextArrival ? std::optional(nextArrival->first) : std::nullopt;
            std::optional<TimePoint> done, next = arrival;
            for (std::size_t k = 0; k < replicas.size(); ++k) {
                const Replica &r = *replicas[k];
                const std::optional<TimePoint> d = r.nextCompletion();
                completions[k] = d;
                if (d && (!done || *d < *done))
                    done = d;
                for (const auto &t : {d, r.wakeUp()})
                    if (t && (!next || *t < *next))
                        next = t;
            }
            if (!next) {
                if (queued() == 0)
                    break;
                // Every arrival is in and no replica plans anything more:
                // each engine shuts down (Drain), partial batches may leave;
                // one already draining fails what it still holds (decide()
                // failed what a draining policy will not run; the rest could
                // never run).
                bool drained = false;
                for (auto &r : replicas) {
                    if (r->core.queueDepth() == 0 && routerQueue.empty())
                        continue;
                    if (r->draining) {
                        r->failHeld();
                    } else {
                        r->draining = true;
                        drained = true;
                        r->stop(ShutdownMode::Drain);
                    }
                }
                if (!drained) {
                    for (const Waiting &w : routerQueue) // every replica is shut down
                        route(w.index, w.arrival);
                    routerQueue.clear();
                    break;
                }
                for (auto &r : replicas)
                    r->dispatchReady();
                continue;
            }
            moveTo(*next, nextSample);
            if (done && *done <= now) {
                for (std::size_t k = 0; k < replicas.size(); ++k)
                    if (completions[k] && *completions[k] <= now)
                        replicas[k]->completeDue();
            } else if (arrival && *arrival <= now) {
                const std::size_t index = nextArrival->second;
                if (index == i)
                    ++i;
                else
                    released.pop();
                arrive(index);
                if (o.onProgress && out.submitted % o.progressEvery == 0)
                    o.onProgress(out);
            }
            drainRouterQueue();
            for (auto &r : replicas) // those with news, or due to wake up
                if (r->dirty || (r->wakeAt && *r->wakeAt <= now))
                    r->dispatchReady();
        }
        if (out.cancelled)
            cancelRest(nextSample);
        out.replicas.clear();
        for (auto &r : replicas) {
            MutexLock lock(r->core.mutex());
            // An iteration-level scheduler (BatchPilot's continuous or a
            // server model's) reports its preemptions in its gauges.
            if (const auto g = r->core.schedulerLocked().gauges(now).iteration)
                r->fig.preemptions = g->preemptions;
            out.preemptions += r->fig.preemptions;
            out.replicas.push_back(r->fig);
        }
        out.router = router.counters();
        out.configChanges = changes->changes;
        setClocks();
        out.last = snapshot();
        if (o.onSample)
            o.onSample(out.last);
    }

    void cancelRest(TimePoint &nextSample)
    {
        for (const Waiting &w : routerQueue) { // never routed: failed at the router
            RequestRecord rec;
            rec.id = arrivals[w.index].id ? arrivals[w.index].id : w.index + 1;
            rec.arrival = w.arrival;
            rec.inputTokens = arrivals[w.index].inputTokens;
            rec.status = StatusCode::ShuttingDown;
            rec.routerWait = now - w.arrival;
            ++out.failed;
            if (o.observer)
                o.observer->onRequestFailed(rec);
        }
        routerQueue.clear();
        for (auto &r : replicas)
            r->stop(ShutdownMode::Fail); // queued requests fail; units in flight finish
        for (;;) {
            std::optional<TimePoint> t;
            for (const auto &r : replicas)
                if (const auto d = r->nextCompletion(); d && (!t || *d < *t))
                    t = d;
            if (!t)
                break;
            moveTo(*t, nextSample);
            for (auto &r : replicas)
                r->completeDue();
        }
        for (auto &r : replicas) // continuous: sequences running when the last step ended
            r->failHeld();
    }
};

Snapshot fleetSnapshot(std::span<const Snapshot> replicas)
{
    if (replicas.empty())
        return {};
    Snapshot f = replicas[0];
    if (replicas.size() == 1)
        return f;
    auto merge = [](LatencySummary &into, const LatencySummary &s) {
        const std::uint64_t n = into.count + s.count;
        if (n)
            into.meanUs = (into.meanUs * double(into.count) + s.meanUs * double(s.count)) / double(n);
        into.count = n;
        into.p50Us = std::max(into.p50Us, s.p50Us);
        into.p90Us = std::max(into.p90Us, s.p90Us);
        into.p99Us = std::max(into.p99Us, s.p99Us);
        into.p999Us = std::max(into.p999Us, s.p999Us);
        into.maxUs = std::max(into.maxUs, s.maxUs);
    };
    double busy = f.busyFraction;
    for (std::size_t i = 1; i < replicas.size(); ++i) {
        const Snapshot &s = replicas[i];
        f.submitted += s.submitted;
        f.completed += s.completed;
        for (std::size_t k = 0; k < f.byStatus.size(); ++k)
            f.byStatus[k] += s.byStatus[k];
        f.batches += s.batches;
        f.inputTokens += s.inputTokens;
        f.outputTokens += s.outputTokens;
        f.queueDepth += s.queueDepth;
        f.inFlightBatches += s.inFlightBatches;
        f.arrivalRate += s.arrivalRate;
        f.requestsPerS += s.requestsPerS;
        f.inputTokensPerS += s.inputTokensPerS;
        f.outputTokensPerS += s.outputTokensPerS;
        f.goodputPerS += s.goodputPerS;
        busy += s.busyFraction;
        for (auto [into, from] : {std::pair{&f.total, &s.total},
                                  {&f.queueWait, &s.queueWait},
                                  {&f.compute, &s.compute},
                                  {&f.timeToFirstToken, &s.timeToFirstToken},
                                  {&f.totalAll, &s.totalAll},
                                  {&f.queueWaitAll, &s.queueWaitAll},
                                  {&f.computeAll, &s.computeAll},
                                  {&f.timePerOutputToken, &s.timePerOutputToken}})
            merge(*into, *from);
    }
    f.busyFraction = busy / double(replicas.size());
    return f;
}

Simulator::Simulator(SimulatorOptions options) : m_options(std::move(options)) {}

SimOutcome Simulator::run(std::span<const SimArrival> arrivals)
{
    Impl impl(m_options);
    impl.run(arrivals);
    return std::move(impl.shared.out);
}

} // namespace bp
