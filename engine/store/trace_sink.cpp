#include "trace_sink.h"

#include "row_writer.h"

#include <cstdio>
#include <ctime>

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace bp {

namespace {
std::int64_t threadCpuNs()
{
#ifdef __linux__
    timespec ts{};
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
        return std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
#endif
    return 0;
}
} // namespace

Result<std::shared_ptr<TraceSink>> TraceSink::create(const std::string &dbPath, std::int64_t sessionId,
                                                     TimePoint epoch, TraceSinkOptions options)
{
    if (options.queueCapacity == 0 || options.wakeRows == 0 || options.flushInterval <= Duration::zero())
        return Status(StatusCode::InvalidArgument,
                      "trace sink: queue capacity, wake rows and flush interval must be positive");
    auto writer = store::RowWriter::open(dbPath, sessionId, epoch, options.requestSource, options.maxDatabaseBytes);
    if (!writer)
        return writer.status();
    std::shared_ptr<TraceSink> sink(new TraceSink(sessionId, epoch, std::move(options)));
    sink->m_writer = std::make_unique<store::RowWriter>(std::move(writer.value()));
    return sink;
}

TraceSink::TraceSink(std::int64_t sessionId, TimePoint epoch, TraceSinkOptions options)
    : m_sessionId(sessionId), m_epoch(epoch), m_options(std::move(options)),
      m_pending(std::make_unique<store::PendingRows>())
{
}

TraceSink::~TraceSink()
{
    stop();
}

void TraceSink::start()
{
    std::lock_guard lifecycle(m_lifecycle);
    {
        std::lock_guard lock(m_mutex);
        if (m_running || m_stopping)
            return;
        m_running = true;
    }
    m_thread = std::thread([this] { writerLoop(); });
}

void TraceSink::stop()
{
    std::lock_guard lifecycle(m_lifecycle);
    m_accepting.store(false);
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_writerCv.notify_one();
    if (m_thread.joinable()) {
        m_thread.join();
        return;
    }
    // Never started: nothing will write what is queued.
    std::lock_guard lock(m_mutex);
    m_dropped.fetch_add(m_pending->rows());
    m_pending->clear();
}

bool TraceSink::flush()
{
    std::unique_lock lock(m_mutex);
    if (!m_running)
        return false;
    const std::uint64_t ticket = ++m_flushRequested;
    m_writerCv.notify_one();
    m_flushCv.wait(lock, [&] { return m_flushServed >= ticket || !m_running; });
    return m_flushServed >= ticket && !m_failed.load();
}

bool TraceSink::admit(std::size_t rows)
{
    // Config rows ride outside the capacity (see onConfigChanged).
    const std::size_t queued = m_pending->rows() - m_pending->configs.size();
    if (!m_accepting.load(std::memory_order_relaxed) || queued + rows > m_options.queueCapacity) {
        m_dropped.fetch_add(rows, std::memory_order_relaxed);
        return false;
    }
    return true;
}

void TraceSink::onBatchCompleted(const BatchRecord &batch, std::span<const RequestRecord> requests)
{
    if (!m_accepting.load(std::memory_order_relaxed)) {
        m_dropped.fetch_add(1 + requests.size(), std::memory_order_relaxed);
        return;
    }
    bool wake = false;
    {
        std::lock_guard lock(m_mutex);
        if (!admit(1 + requests.size()))
            return;
        m_pending->batches.push_back(batch);
        m_pending->requests.insert(m_pending->requests.end(), requests.begin(), requests.end());
        wake = m_writerWaiting && m_pending->rows() >= m_options.wakeRows;
    }
    if (wake)
        m_writerCv.notify_one();
}

void TraceSink::onRequestFailed(const RequestRecord &request)
{
    pushRequest(request);
}

void TraceSink::onRequestServedFromCache(const RequestRecord &request)
{
    // Stored like any request, with batch_id 0 and status ok: the one kind of
    // row that completed without running (docs/schema.md).
    pushRequest(request);
}

void TraceSink::recordRequest(const RequestRecord &request)
{
    pushRequest(request);
}

void TraceSink::recordTargetSample(const TargetSample &sample)
{
    std::lock_guard lock(m_mutex);
    if (admit(1))
        m_pending->targetSamples.push_back(sample);
}

void TraceSink::pushRequest(const RequestRecord &request)
{
    if (!m_accepting.load(std::memory_order_relaxed)) {
        m_dropped.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    bool wake = false;
    {
        std::lock_guard lock(m_mutex);
        if (!admit(1))
            return;
        m_pending->requests.push_back(request);
        wake = m_writerWaiting && m_pending->rows() >= m_options.wakeRows;
    }
    if (wake)
        m_writerCv.notify_one();
}

void TraceSink::onConfigChanged(const ConfigChange &change)
{
    // Never dropped for a full queue: replays, comparisons and reports read
    // the config history, and a missing change would make them describe
    // another session. Changes are rare (an operator, or a controller at
    // most once per period), so this side lane past the capacity stays
    // small. Only a stopped or failed sink loses them, counted as dropped.
    std::lock_guard lock(m_mutex);
    if (!m_accepting.load(std::memory_order_relaxed)) {
        m_dropped.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    m_pending->configs.push_back(change);
}

void TraceSink::recordSample(const MetricSample &sample)
{
    std::lock_guard lock(m_mutex);
    if (admit(1))
        m_pending->samples.push_back(sample);
}

std::string TraceSink::warning() const
{
    std::lock_guard lock(m_mutex);
    return m_warning;
}

TraceSinkStats TraceSink::stats() const
{
    TraceSinkStats s;
    s.writtenRows = writtenRows();
    s.droppedRows = droppedRows();
    s.transactions = m_transactions.load(std::memory_order_relaxed);
    s.writerCpuSeconds = double(m_writerCpuNs.load(std::memory_order_relaxed)) / 1e9;
    s.active = loggingActive();
    s.warning = warning();
    return s;
}

void TraceSink::disable(const Status &why, std::uint64_t lostRows)
{
    m_accepting.store(false);
    m_failed.store(true);
    m_dropped.fetch_add(lostRows);
    std::string text = "trace logging stopped: " + why.message() + ". Serving continues; records are no longer saved.";
    std::fprintf(stderr, "batchpilot: %s\n", text.c_str());
    std::lock_guard lock(m_mutex);
    m_warning = std::move(text);
}

void TraceSink::writerLoop()
{
#ifdef __linux__
    prctl(PR_SET_NAME, "bp-trace-writer", 0, 0, 0);
    // Best effort: logging yields to serving.
    if (m_options.writerPriority == TraceSinkOptions::WriterPriority::Nice) {
        setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), 19);
    } else if (m_options.writerPriority == TraceSinkOptions::WriterPriority::Idle) {
        sched_param param{};
        pthread_setschedparam(pthread_self(), SCHED_IDLE, &param);
    }
#endif
    store::PendingRows local;
    std::unique_lock lock(m_mutex);
    TimePoint deadline = SteadyClock::now() + m_options.flushInterval;
    for (;;) {
        m_writerWaiting = true;
        m_writerCv.wait_until(lock, deadline, [&] {
            return m_stopping || m_pending->rows() >= m_options.wakeRows || m_flushRequested != m_flushServed;
        });
        m_writerWaiting = false;
        deadline = SteadyClock::now() + m_options.flushInterval;
        local.swap(*m_pending);
        const std::uint64_t ticket = m_flushRequested;
        const bool stopping = m_stopping;
        lock.unlock();

        const std::size_t rows = local.rows();
        Status written = m_writer->write(local);
        local.clear();
        m_writerCpuNs.store(threadCpuNs(), std::memory_order_relaxed);
        if (written.isOk() && rows > 0) {
            const std::uint64_t total = m_written.fetch_add(rows) + rows;
            m_transactions.fetch_add(1);
            if (m_options.onCommit)
                m_options.onCommit(total);
        } else if (!written.isOk()) {
            disable(written, rows);
        }

        lock.lock();
        m_flushServed = ticket;
        m_flushCv.notify_all();
        if (!written.isOk() || (stopping && m_pending->rows() == 0))
            break;
    }
    if (m_failed.load()) {
        m_dropped.fetch_add(m_pending->rows());
        m_pending->clear();
    }
    m_running = false;
    m_flushCv.notify_all();
}

} // namespace bp
