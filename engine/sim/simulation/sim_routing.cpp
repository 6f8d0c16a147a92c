#include "engine/sim/simulation/sim_routing.h"

#include "engine/core/length_rule.h"

#include "engine/workload/prefix_tokens.h"

#include <algorithm>

namespace bp::sim {

namespace {

// A request that ended without running: its id and why.
Response refusal(std::uint64_t id, Status why)
{
    Response r;
    r.requestId = id;
    r.status = std::move(why);
    return r;
}

RouterOptions routerOptions(const SimulatorOptions &o)
{
    RouterOptions r = o.router;
    r.replicas = int(ReplicaSet::slotsFor(o));
    return r;
}

} // namespace

Routing::Routing(Shared &sim)
    : m_sim(sim), m_o(sim.o), m_router(routerOptions(sim.o)), m_loads(ReplicaSet::slotsFor(sim.o)),
      m_eligible(std::make_unique<bool[]>(ReplicaSet::slotsFor(sim.o))), m_promptRng(sim.o.promptSeed)
{
}

void Routing::start(std::span<const PlannedArrival> arrivals, ArrivalPlan &plan)
{
    m_arrivals = arrivals;
    m_plan = &plan;
}

void Routing::arrive(std::size_t index, ReplicaSet &replicas)
{
    if (!m_queue.empty() || !route(index, m_sim.now, replicas)) {
        m_queue.push_back({index, m_sim.now});
        ++m_sim.out.routerQueued;
    }
}

void Routing::drain(ReplicaSet &replicas)
{
    while (!m_queue.empty() && route(m_queue.front().index, m_queue.front().arrival, replicas))
        m_queue.pop_front();
}

void Routing::routeRest(ReplicaSet &replicas)
{
    for (const Waiting &w : m_queue)
        route(w.index, w.arrival, replicas);
    m_queue.clear();
}

void Routing::failWaiting()
{
    SimOutcome &out = m_sim.out;
    for (const Waiting &w : m_queue) {
        RequestRecord rec;
        rec.id = m_plan->idOf(w.index);
        rec.arrival = w.arrival;
        rec.inputTokens = m_arrivals[w.index].inputTokens;
        rec.status = StatusCode::ShuttingDown;
        rec.routerWait = m_sim.now - w.arrival;
        ++out.failed;
        if (m_o.onResponse)
            m_o.onResponse(w.index, w.arrival,
                           refusal(rec.id, Status(StatusCode::ShuttingDown, "cancelled")));
        if (m_o.observer)
            m_o.observer->onRequestFailed(rec);
    }
    m_queue.clear();
}

bool Routing::route(std::size_t index, TimePoint arrival, ReplicaSet &replicas)
{
    const PlannedArrival &a = m_arrivals[index];
    const std::size_t n = replicas.size();
    bool any = false;
    for (std::size_t k = 0; k < n; ++k) {
        const Replica &r = replicas[k];
        m_loads[k] = {r.outstanding, r.kvTokensNow()};
        m_eligible[k] = r.phase == ReplicaPhase::Ready &&
                        (m_o.routerQueueLimit <= 0 || r.outstanding < m_o.routerQueueLimit);
        any = any || m_eligible[k];
    }
    if (!any)
        return false;
    const int k = n == 1 ? 0
                         : m_router.route(prefixKeyOf(a.blocks), std::span(m_loads.data(), n),
                                          std::span<const bool>(m_eligible.get(), n));
    submit(replicas[std::size_t(k)], index, arrival);
    return true;
}

std::vector<TokenId> Routing::promptOf(std::size_t index)
{
    const PlannedArrival &a = m_arrivals[index];
    // Ids matter where something compares them: the response cache, a
    // prefix cache (a server model's prompt caching: all-zero prompts would
    // all share their prefix and hit), a trace's blocks, a conversation.
    const bool content = m_o.config.cache.enabled || m_o.config.prefixCache.enabled || !a.blocks.empty() ||
                         a.conversation != 0;
    if (!content)
        return std::vector<TokenId>(std::size_t(std::max(0, a.inputTokens)));
    const int vocab = std::max(1, m_o.limits.vocabSize);
    return m_plan->prompt(index, promptTokens(a.blocks, a.blockTokens, a.inputTokens, vocab, m_promptRng));
}

void Routing::submit(Replica &rep, std::size_t index, TimePoint arrival)
{
    const PlannedArrival &a = m_arrivals[index];
    SimOutcome &out = m_sim.out;
    const TimePoint now = m_sim.now;
    Request r;
    r.id = m_plan->idOf(index);
    r.tokens = promptOf(index);
    r.maxNewTokens = a.maxNewTokens;
    if (a.previous >= 0 && m_o.limits.maxSequenceLength > 0) {
        // The length rule (engine/core/length_rule.h) on the grown prompt:
        // cut from the end, so the shared prefix stays.
        const ScaledLengths len =
            clampLengths(int(r.tokens.size()), a.maxNewTokens,
                         {.maxLength = m_o.limits.maxSequenceLength, .generative = a.maxNewTokens > 0});
        if (len.clamped) {
            r.tokens.resize(std::size_t(len.input));
            r.maxNewTokens = len.output;
            ++out.clamped;
        }
    }
    m_plan->sent(index, r.tokens);
    r.conversation = a.conversation;
    r.turn = a.turn;
    r.arrival = arrival; // before now when it waited in the router's queue
    r.priority = a.priority;
    if (a.timeout)
        r.deadline = arrival + *a.timeout;
    const Duration waited = now - arrival;
    if (waited > Duration::zero()) {
        if (m_o.observer)
            m_sim.routerWaits[r.id] = waited;
        out.routerWaitTotal += waited;
        out.routerWaitMax = std::max(out.routerWaitMax, waited);
    }
    rep.clock.set(now);
    rep.cutDecodeRun(); // it joins at the next decision
    rep.dirty = true;
    ++rep.fig.routed;
    ++rep.outstanding;
    rep.fig.peakOutstanding = std::max(rep.fig.peakOutstanding, rep.outstanding);
    Replica *p = &rep;
    const Status s = rep.core->submit(std::move(r), [this, p, index, arrival](Response &&response) {
        const bool ok = response.status.isOk();
        if (m_o.onResponse)
            m_o.onResponse(index, arrival, response);
        ++(ok ? m_sim.out.completed : m_sim.out.failed);
        ++(ok ? p->fig.completed : p->fig.failed);
        p->fig.outputTokens += response.tokens.size();
        --p->outstanding;
        m_plan->ended(index, m_sim.now, std::move(response.tokens));
    });
    ++(s.isOk() ? out.accepted : out.rejected);
    if (!s.isOk()) {
        if (m_o.onResponse)
            m_o.onResponse(index, arrival, refusal(m_plan->idOf(index), s));
        ++rep.fig.failed;
        --rep.outstanding;
        m_plan->ended(index, m_sim.now, {});
    }
}

} // namespace bp::sim
