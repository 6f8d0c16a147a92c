#include "engine/sim/fleet/capacity_plan.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <thread>

namespace bp {

namespace {

struct Searcher {
    const WindowJudge &judge;
    const CapacitySearch &s;
    std::size_t evaluations = 0;
    bool cancelled = false;
    std::map<std::pair<int, RouterPolicy>, PlanVerdict> seen;

    bool stop()
    {
        cancelled = cancelled || (s.cancel && s.cancel->load(std::memory_order_relaxed));
        return cancelled;
    }
    const PlanVerdict &at(int n, RouterPolicy r)
    {
        const auto key = std::pair(n, r);
        if (auto it = seen.find(key); it != seen.end())
            return it->second;
        ++evaluations;
        return seen.emplace(key, judge(n, r)).first->second;
    }
    bool meets(int n, RouterPolicy r) { return at(n, r).met; }

    // The fewest replicas in [lo, hi] meeting with `r`, galloping from
    // `hint`; 0 when even hi misses (or cancelled).
    int minimum(RouterPolicy r, int lo, int hi, int hint)
    {
        if (lo > hi)
            return 0;
        hint = std::clamp(hint, lo, hi);
        int met = 0; // the smallest count known to meet
        if (stop())
            return 0;
        if (meets(hint, r)) {
            met = hint;
            for (int step = 1; met - step >= lo; step *= 2) {
                if (stop())
                    return 0;
                const int c = met - step;
                if (!meets(c, r)) {
                    lo = c + 1;
                    break;
                }
                met = c;
                if (c == lo)
                    return c;
            }
        } else {
            lo = hint + 1;
            for (int step = 1;; step *= 2) {
                if (lo > hi || stop())
                    return 0;
                const int c = std::min(hint + step, hi);
                if (meets(c, r)) {
                    met = c;
                    break;
                }
                lo = c + 1;
            }
        }
        int top = met; // bisection: lo - 1 misses (or is below the range), top meets
        while (lo < top) {
            if (stop())
                return 0;
            const int mid = lo + (top - lo) / 2;
            if (meets(mid, r))
                top = mid;
            else
                lo = mid + 1;
        }
        return top;
    }
};

} // namespace

WindowChoice searchWindow(std::size_t window, const WindowJudge &judge, const CapacitySearch &search,
                          int hint)
{
    WindowChoice c;
    c.window = window;
    const int lo = std::max(1, search.minReplicas), hi = std::max(lo, search.maxReplicas);
    std::vector<RouterPolicy> routers = search.routers;
    if (routers.empty())
        routers.push_back(RouterPolicy::LeastOutstanding);
    Searcher s{judge, search, 0, false, {}};
    int best = 0;
    RouterPolicy bestRouter = routers.front();
    for (std::size_t i = 0; i < routers.size(); ++i) {
        const RouterPolicy r = routers[i];
        int n = 0;
        if (i == 0)
            n = s.minimum(r, lo, hi, hint);
        else if (best == 0)
            n = s.minimum(r, lo, hi, hi); // nothing met yet: does this router meet at all?
        else if (best > lo)
            n = s.minimum(r, lo, best - 1, best - 1);
        c.routers.emplace_back(r, n);
        if (n > 0 && (best == 0 || n < best)) {
            best = n;
            bestRouter = r;
        }
        if (s.cancelled)
            break;
    }
    c.done = !s.cancelled;
    c.replicas = best;
    c.router = bestRouter;
    c.evaluations = s.evaluations;
    if (c.done)
        c.verdict = s.at(best > 0 ? best : hi, bestRouter);
    return c;
}

FleetSearchResult searchCapacity(std::size_t windows, const WindowJudgeFactory &judge,
                                 const CapacitySearch &search)
{
    FleetSearchResult out;
    out.windows.resize(windows);
    for (std::size_t w = 0; w < windows; ++w)
        out.windows[w].window = w;
    std::mutex mutex;
    std::size_t next = 0, finished = 0;
    int lastAnswer = std::max(1, search.minReplicas);
    auto worker = [&] {
        for (;;) {
            std::size_t w;
            int hint;
            {
                std::lock_guard lock(mutex);
                if (next >= windows || (search.cancel && search.cancel->load()))
                    return;
                w = next++;
                hint = lastAnswer;
            }
            WindowChoice c = searchWindow(w, judge(w), search, hint);
            std::lock_guard lock(mutex);
            out.evaluations += c.evaluations;
            if (c.done) {
                ++finished;
                if (c.replicas > 0)
                    lastAnswer = c.replicas;
            }
            out.windows[w] = std::move(c);
            if (search.progress)
                search.progress(finished, windows);
        }
    };
    const int threads = std::clamp(search.threads, 1, 16);
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t)
        pool.emplace_back(worker);
    worker();
    for (auto &t : pool)
        t.join();
    out.cancelled = finished < windows;
    return out;
}

} // namespace bp
