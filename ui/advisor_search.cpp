#include "advisor_search.h"

#include "engine/config/config_json.h"
#include "engine/sim/calibration_store.h"
#include "engine/sim/tuning_document.h"
#include "engine/replay/replay_plan.h"
#include "engine/store/tuning_store.h"

#include <cmath>

namespace bp::ui {

namespace {

// Stores a finished search in the `tunings` table (as `batchpilot tune`
// does, without a verification replay): reports of a tuned session show it.
Result<std::int64_t> storeTuning(const TraceStore &store, const AdvisorResult &a, const Calibration &cal)
{
    const AdvisorRequest &q = a.request;
    TuningContext context;
    context.source = q.source;
    context.requests = a.requests;
    context.offeredPerS = a.offeredPerS;
    context.speed = q.speed;
    context.lengthScale = q.lengthScale;
    context.limit = q.limit;
    context.slo = q.slo;
    context.objective = q.objective;
    context.jobs = q.threads;
    context.origin = "console advisor";
    const StoredTuning t = storedTuning(tuningDocument(a.tune, context, cal), context, cal);
    return saveTuning(store, t);
}

Result<AdvisorResult> runSearch(const TraceStore &store, const AdvisorRequest &request,
                                const std::function<void(std::size_t, std::size_t)> &progress,
                                const std::atomic<bool> *cancel)
{
    auto cal = loadCalibration(store, request.calibrationId);
    if (!cal)
        return cal.status();
    ReplayOptions ro;
    ro.source = request.source;
    ro.config = request.base;
    ro.speed = request.speed;
    ro.lengthScale = request.lengthScale;
    ro.limit = request.limit;
    ro.clock = ReplayClock::Simulated;
    auto plan = planReplay(store, ro, cal->modelInfo());
    if (!plan)
        return plan.status();

    // As `batchpilot tune` and the simulated replay count outputs.
    TuneWorkload workload;
    workload.limits = cal->modelInfo().limits();
    workload.cost = cal->cost;
    workload.output = cal->model == "builtin:echo" ? OutputKind::Echo
                      : cal->generative            ? OutputKind::Generated
                                                   : OutputKind::None;
    workload.positions = cal->positions;
    TuneOptions to;
    to.slo = request.slo;
    to.objective = request.objective;
    to.budget = request.budget;
    to.maxInstances = request.maxInstances;
    to.threads = request.threads;
    to.base = plan->config;
    to.maxLength = cal->maxSequenceLength;
    to.generative = cal->generative;
    to.progress = progress;
    to.cancel = cancel;
    workload.arrivals.reserve(plan->requests.size());
    to.inputLengths.reserve(plan->requests.size());
    for (std::size_t i = 0; i < plan->requests.size(); ++i) {
        const PlannedRequest &r = plan->requests[i];
        workload.arrivals.push_back({r.offset, r.inputTokens, r.maxNewTokens, i + 1, 0, std::nullopt});
        to.inputLengths.push_back(r.inputTokens);
    }
    auto tuned = tune(simulationEvaluator(workload, request.slo), to);
    if (!tuned)
        return tuned.status();

    AdvisorResult result;
    result.request = request;
    result.tune = std::move(*tuned);
    result.calibration = QStringLiteral("%1 #%2, batch fit error %3% (median)")
                             .arg(QString::fromStdString(cal->describe()))
                             .arg(cal->id)
                             .arg(100 * cal->batchError.medianRel, 0, 'f', 1);
    result.requests = plan->requests.size();
    const auto &rs = plan->requests;
    const double spanS = rs.size() > 1 ? toSeconds(rs.back().offset - rs.front().offset) : 0;
    result.offeredPerS = spanS > 0 ? double(rs.size()) / spanS : 0;
    if (result.tune.recommended && !result.tune.cancelled) {
        auto id = storeTuning(store, result, *cal);
        if (!id)
            return id.status();
        result.tuningId = *id;
    }
    return result;
}

} // namespace

AdvisorSearch::AdvisorSearch(std::shared_ptr<TraceStore> store, QObject *parent)
    : QObject(parent), m_store(std::move(store))
{
    qRegisterMetaType<AdvisorResult>();
    m_pool.setMaxThreadCount(2); // a superseded search may still be winding down
}

AdvisorSearch::~AdvisorSearch()
{
    cancel();
    m_pool.waitForDone(); // the tuner checks the flag between candidates
}

void AdvisorSearch::cancel()
{
    if (m_cancel)
        m_cancel->store(true);
}

const std::vector<std::string> &AdvisorSearch::searchedKnobs()
{
    // What the tuner's candidates set (engine/sim/tuner.cpp, Space::makeConfig).
    static const std::vector<std::string> knobs{
        "policy",
        "max_batch_size",
        "max_queue_delay_us",
        "static_batch_size",
        "static_padded_length",
        "static_flush_on_drain",
        "bucket_edges",
        "instances",
        "adaptive_delay.enabled",
        "adaptive_delay.min_delay_us",
        "adaptive_delay.max_delay_us",
        "slo.enabled",
        "hybrid.static_sizes",
        "hybrid.max_static_length",
        "hybrid.static_max_wait_us",
        "continuous.max_num_seqs",
        "continuous.max_num_batched_tokens",
    };
    return knobs;
}

void AdvisorSearch::start(const AdvisorRequest &request)
{
    cancel();
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    emit progressChanged(0, int(request.budget));
    if (!m_store) {
        emit failed(tr("No trace database: the advisor searches over a recorded trace or session."));
        return;
    }
    m_jobs.startJob(
        [store = m_store, request, cancel = m_cancel,
         self = QPointer<AdvisorSearch>(this)](const JobTracker::Ticket &ticket) -> Result<AdvisorResult> {
            // At most ~100 progress posts per search ("don't spam the progress bar").
            std::size_t shown = 0;
            auto progress = [&shown, ticket, self](std::size_t done, std::size_t total) {
                const std::size_t step = std::max<std::size_t>(1, total / 100);
                if (done < shown + step && done < total)
                    return;
                shown = done;
                ticket.post([self, done, total] {
                    if (self)
                        emit self->progressChanged(int(done), int(total));
                });
            };
            return runSearch(*store, request, progress, cancel.get());
        },
        [this](Result<AdvisorResult> result) {
            if (!result) {
                emit failed(QString::fromStdString(result.status().message()));
                return;
            }
            emit finished(*result);
        });
}

} // namespace bp::ui
