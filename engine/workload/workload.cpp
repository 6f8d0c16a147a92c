#include "workload.h"

#include <algorithm>
#include <cmath>

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace bp {

Status WorkloadSpec::validate() const
{
    const bool needTrace = arrivals == ArrivalKind::Trace || lengths == LengthKind::Trace;
    if (needTrace && (!trace || trace->empty()))
        return {StatusCode::InvalidArgument, "a trace workload needs a non-empty trace"};
    if (arrivals != ArrivalKind::Trace && !(rate > 0 && rate <= 10'000'000))
        return {StatusCode::InvalidArgument, "rate must be in (0, 1e7] requests/s"};
    if (arrivals == ArrivalKind::Gamma && !(burstiness > 0 && burstiness <= 1000))
        return {StatusCode::InvalidArgument, "burstiness must be in (0, 1000]"};
    if (arrivals == ArrivalKind::Bursts && (burstSize < 1 || burstSize > 100000))
        return {StatusCode::InvalidArgument, "burst size must be in [1, 100000]"};
    if (!(timeScale > 0) || !(lengthScale > 0))
        return {StatusCode::InvalidArgument, "time and length scales must be positive"};
    if (lengths == LengthKind::Fixed && fixedLength < 1)
        return {StatusCode::InvalidArgument, "fixed length must be at least 1"};
    if (lengths == LengthKind::Uniform && (minLength < 1 || maxLength < minLength))
        return {StatusCode::InvalidArgument, "uniform lengths need 1 <= min <= max"};
    if (maxNewTokens < 0 || vocabSize < 1)
        return {StatusCode::InvalidArgument, "max_new_tokens must be >= 0 and the vocabulary non-empty"};
    if (systemPromptTokens < 0 || !(systemPromptShare >= 0 && systemPromptShare <= 1))
        return {StatusCode::InvalidArgument,
                "the system prompt's length must be >= 0 and its share in [0, 1]"};
    return Status::ok();
}

WorkloadSchedule::WorkloadSchedule(WorkloadSpec spec) : m_spec(std::move(spec)), m_rng(m_spec.seed) {}

Duration WorkloadSchedule::gap()
{
    const double mean = 1.0 / m_spec.rate;
    switch (m_spec.arrivals) {
    case ArrivalKind::Poisson: return fromSeconds(std::exponential_distribution<double>(m_spec.rate)(m_rng));
    case ArrivalKind::Gamma: {
        // shape k = 1/CV², scale θ = mean/k: mean gap stays 1/rate
        const double k = 1.0 / m_spec.burstiness;
        return fromSeconds(std::gamma_distribution<double>(k, mean / k)(m_rng));
    }
    case ArrivalKind::Constant: return fromSeconds(mean);
    case ArrivalKind::Bursts:
        return (m_index % std::size_t(m_spec.burstSize)) == 0 ? fromSeconds(mean * m_spec.burstSize)
                                                              : Duration{};
    case ArrivalKind::Trace: break;
    }
    return {};
}

std::optional<Arrival> WorkloadSchedule::next()
{
    const auto &trace = m_spec.trace;
    if (m_spec.limit && m_index >= m_spec.limit)
        return std::nullopt;
    if (m_spec.arrivals == ArrivalKind::Trace && m_index >= trace->size())
        return std::nullopt;
    Arrival a;
    if (m_spec.arrivals == ArrivalKind::Trace) {
        a.offset = fromSeconds((*trace)[m_index].arrivalS / m_spec.timeScale);
    } else {
        if (m_index > 0 || m_spec.arrivals == ArrivalKind::Poisson || m_spec.arrivals == ArrivalKind::Gamma)
            m_clock += gap();
        a.offset = m_clock;
    }
    switch (m_spec.lengths) {
    case LengthKind::Fixed:
        a.inputTokens = m_spec.fixedLength;
        a.outputTokens = m_spec.maxNewTokens;
        break;
    case LengthKind::Uniform:
        a.inputTokens = std::uniform_int_distribution<int>(m_spec.minLength, m_spec.maxLength)(m_rng);
        a.outputTokens = m_spec.maxNewTokens;
        break;
    case LengthKind::Trace: {
        const TraceRow &row = (*trace)[m_index % trace->size()];
        a.inputTokens = std::max(1, int(std::lround(row.inputTokens * m_spec.lengthScale)));
        a.outputTokens = m_spec.outputFromTrace
                             ? std::max(1, int(std::lround(row.outputTokens * m_spec.lengthScale)))
                             : m_spec.maxNewTokens;
        break;
    }
    }
    if (m_spec.lengthCap > 0)
        a.inputTokens = std::min(a.inputTokens, m_spec.lengthCap);
    if (m_spec.outputCap > 0)
        a.outputTokens = std::min(a.outputTokens, m_spec.outputCap);
    if (m_spec.systemPromptTokens > 0) // its own generator: the other draws stay as they were
        a.systemPrompt = std::uniform_real_distribution<double>(0, 1)(m_shareRng) < m_spec.systemPromptShare;
    ++m_index;
    return a;
}

std::vector<TokenId> WorkloadSchedule::tokens(const Arrival &arrival)
{
    if (!arrival.systemPrompt || m_spec.systemPromptTokens <= 0)
        return tokens(arrival.inputTokens);
    if (m_systemPrompt.empty()) { // drawn once, from its own seed
        std::mt19937_64 rng(m_spec.seed ^ 0x5157'5052'4f4d'5054ULL);
        std::uniform_int_distribution<TokenId> dist(0, m_spec.vocabSize - 1);
        m_systemPrompt.resize(std::size_t(m_spec.systemPromptTokens));
        for (auto &id : m_systemPrompt)
            id = dist(rng);
    }
    std::vector<TokenId> t = m_systemPrompt;
    const std::vector<TokenId> own = tokens(arrival.inputTokens);
    t.insert(t.end(), own.begin(), own.end());
    return t;
}

std::vector<TokenId> WorkloadSchedule::tokens(int length)
{
    std::vector<TokenId> t(std::size_t(std::max(0, length)));
    std::uniform_int_distribution<TokenId> dist(0, m_spec.vocabSize - 1);
    for (auto &id : t)
        id = dist(m_rng);
    return t;
}

LoadGenerator::LoadGenerator(Engine &engine, WorkloadSpec spec, ResponseHook hook)
    : m_engine(engine), m_schedule(std::move(spec)), m_shared(std::make_shared<Shared>())
{
    m_shared->hook = std::move(hook);
}

LoadGenerator::~LoadGenerator()
{
    stop();
}

void LoadGenerator::start(TimePoint at)
{
    if (m_thread.joinable())
        return;
    m_running = true;
    m_thread = std::thread([this, at] { run(at); });
}

void LoadGenerator::stop()
{
    m_stop = true;
    if (m_thread.joinable())
        m_thread.join();
    m_running = false;
}

void LoadGenerator::run(TimePoint start)
{
#ifdef __linux__
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
#endif
    while (!m_stop.load(std::memory_order_relaxed)) {
        auto a = m_schedule.next();
        if (!a)
            break;
        const TimePoint when = start + a->offset;
        // sleep in short slices so stop() stays responsive
        for (TimePoint now = SteadyClock::now(); now < when && !m_stop.load(); now = SteadyClock::now())
            std::this_thread::sleep_until(std::min(when, now + std::chrono::milliseconds(50)));
        if (m_stop.load())
            break;
        Request r;
        r.tokens = m_schedule.tokens(*a);
        r.maxNewTokens = a->outputTokens;
        r.arrival = when; // scheduled time: latency includes any lateness of ours
        Shared &sh = *m_shared;
        ++sh.sent;
        const Arrival arrival = *a;
        Status s = m_engine.submit(std::move(r), [shared = m_shared, arrival, when](Response &&resp) {
            if (shared->hook)
                shared->hook(arrival, when, resp);
            (resp.status.isOk() ? shared->completed : shared->failed).fetch_add(1);
            std::lock_guard lock(shared->mutex);
            shared->cv.notify_all();
        });
        (s.isOk() ? sh.accepted : sh.rejected).fetch_add(1);
    }
    std::lock_guard lock(m_shared->mutex);
    m_shared->producerDone = true;
    m_running = false;
    m_shared->cv.notify_all();
}

void LoadGenerator::waitFinished()
{
    Shared &sh = *m_shared;
    std::unique_lock lock(sh.mutex);
    sh.cv.wait(lock, [&] {
        return sh.producerDone && sh.completed.load() + sh.failed.load() >= sh.accepted.load();
    });
}

LoadGenerator::Counters LoadGenerator::counters() const
{
    const Shared &sh = *m_shared;
    return {sh.sent.load(), sh.accepted.load(), sh.rejected.load(), sh.completed.load(), sh.failed.load()};
}

std::optional<ArrivalKind> parseArrivalKind(std::string_view n)
{
    if (n == "poisson")
        return ArrivalKind::Poisson;
    if (n == "gamma")
        return ArrivalKind::Gamma;
    if (n == "constant")
        return ArrivalKind::Constant;
    if (n == "bursts")
        return ArrivalKind::Bursts;
    if (n == "trace")
        return ArrivalKind::Trace;
    return std::nullopt;
}

std::optional<LengthKind> parseLengthKind(std::string_view n)
{
    if (n == "fixed")
        return LengthKind::Fixed;
    if (n == "uniform")
        return LengthKind::Uniform;
    if (n == "trace")
        return LengthKind::Trace;
    return std::nullopt;
}

} // namespace bp
