#include "remote_load.h"

#include "engine/workload/traffic_pacer.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace bp::remote {

namespace {

nlohmann::json workloadJson(const WorkloadSpec &s)
{
    static const char *arrivals[] = {"poisson", "gamma", "constant", "bursts", "trace"};
    static const char *lengths[] = {"fixed", "uniform", "trace"};
    nlohmann::json j = {{"arrivals", arrivals[int(s.arrivals)]},
                        {"rate", s.rate},
                        {"lengths", lengths[int(s.lengths)]},
                        {"max_new_tokens", s.maxNewTokens},
                        {"seed", s.seed}};
    if (s.arrivals == ArrivalKind::Bursts)
        j["burst_size"] = s.burstSize;
    if (s.lengths == LengthKind::Fixed)
        j["input_tokens"] = s.fixedLength;
    if (s.lengths == LengthKind::Uniform)
        j["input_tokens"] = {s.minLength, s.maxLength};
    if (s.lengths == LengthKind::Trace)
        j["length_scale"] = s.lengthScale;
    if (s.systemPromptTokens > 0)
        j["system_prompt"] = {{"tokens", s.systemPromptTokens}, {"share", s.systemPromptShare}};
    if (s.conversations > 0)
        j["conversations"] = {
            {"count", s.conversations}, {"turns", s.turnsPerConversation}, {"think_time_s", s.thinkTimeS}};
    return j;
}

} // namespace

Result<std::unique_ptr<RemoteLoad>> RemoteLoad::start(std::shared_ptr<TraceStore> store,
                                                      std::unique_ptr<RemoteTarget> target, WorkloadSpec spec,
                                                      std::string notes, RecorderOptions recorder)
{
    if (!target)
        return Status(StatusCode::InvalidArgument, "no remote target");
    if (Status s = spec.validate(); !s)
        return s;
    std::unique_ptr<RemoteLoad> load(new RemoteLoad);
    load->m_target = std::move(target);
    SessionStart start;
    start.notes = std::move(notes);
    start.replay = {{"traffic", workloadJson(spec)}};
    auto session = RemoteSession::start(std::move(store), *load->m_target, start, recorder);
    if (!session) {
        (void)load->m_target->finish(true); // the scraper may have started
        load->m_finished = true;
        return session.status();
    }
    load->m_session = std::move(session.value());
    load->m_thread = std::thread(
        [self = load.get(), spec = std::move(spec), now = SteadyClock::now()] { self->run(spec, now); });
    return load;
}

RemoteLoad::~RemoteLoad()
{
    stop();
    finish(true);
}

Status RemoteLoad::restart(WorkloadSpec spec)
{
    if (Status s = spec.validate(); !s)
        return s;
    if (m_finished)
        return Status(StatusCode::Unavailable, "the remote session has ended");
    stop();
    {
        std::lock_guard lock(m_mutex);
        m_stop = false;
    }
    m_thread = std::thread([this, spec = std::move(spec), now = SteadyClock::now()] { run(spec, now); });
    return Status::ok();
}

void RemoteLoad::stop()
{
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_cv.notify_all();
    if (m_thread.joinable())
        m_thread.join();
}

nlohmann::json RemoteLoad::finish(bool cancel)
{
    if (m_finished)
        return m_client;
    stop();
    m_finished = true;
    if (!cancel)
        m_target->failPending(false);    // never sent: not owed an answer
    m_client = m_target->finish(cancel); // every completion has run after this
    m_session->end(m_client);
    return m_client;
}

RemoteLoad::Counters RemoteLoad::counters() const
{
    Counters c;
    c.sent = m_tally->sent.load();
    c.accepted = m_tally->accepted.load();
    c.rejected = m_tally->rejected.load();
    c.completed = m_tally->completed.load();
    c.failed = m_tally->failed.load();
    c.shed = m_target->shed();
    return c;
}

void RemoteLoad::run(WorkloadSpec spec, TimePoint start)
{
#ifdef __linux__
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
#endif
    // Open-loop arrivals and conversations' closed-loop turns (traffic_pacer.h).
    auto pacer = std::make_shared<TrafficPacer>(std::move(spec));
    std::unique_lock lock(m_mutex);
    while (!m_stop) {
        const std::optional<TimePoint> due = pacer->nextDue(start);
        const TimePoint now = SteadyClock::now();
        if (!due || *due > now) {
            if (!due && pacer->finished())
                break;
            const TimePoint until = due ? std::min(*due, now + std::chrono::milliseconds(50))
                                        : now + std::chrono::milliseconds(50);
            lock.unlock();
            pacer->waitUntil(until);
            lock.lock();
            continue;
        }
        lock.unlock();
        auto item = pacer->take(start);
        if (!item) {
            lock.lock();
            continue;
        }
        Request r;
        r.id = m_nextId++;
        r.tokens = std::move(item->tokens);
        r.maxNewTokens = item->arrival.outputTokens;
        r.arrival = item->when; // the scheduled time: our own lateness shows as latency
        r.conversation = item->arrival.conversation;
        r.turn = item->arrival.turn;
        ++m_tally->sent;
        const std::uint64_t key = item->key;
        // A remote answer is text: the next turn's context takes a stand-in of its length.
        const Status s = m_target->submit(std::move(r), [tally = m_tally, pacer, key](Response &&resp) {
            pacer->completed(key, SteadyClock::now(), resp.tokens);
            ++(resp.status.isOk() ? tally->completed : tally->failed);
        });
        if (!s.isOk())
            pacer->completed(key, SteadyClock::now(), {});
        ++(s.isOk() ? m_tally->accepted : m_tally->rejected);
        lock.lock();
    }
}

} // namespace bp::remote
