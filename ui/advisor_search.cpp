#include "advisor_search.h"

#include "engine/sim/calibration/calibration_store.h"
#include "engine/sim/calibration/remote_server_model.h"
#include "engine/sim/calibration/remote_settings.h"

namespace bp::ui {

namespace {

// At most ~100 posts of a job's progress ("don't spam the progress bar").
class Throttle {
public:
    bool due(std::size_t done, std::size_t total)
    {
        const std::size_t step = std::max<std::size_t>(1, total / 100);
        if (done < m_shown + step && done < total)
            return false;
        m_shown = done;
        return true;
    }

private:
    std::size_t m_shown = 0;
};

Result<AdvisorResult> runSearch(const std::shared_ptr<TraceStore> &store, const AdvisorRequest &request,
                                const TuneHooks &hooks)
{
    auto cal = loadCalibration(*store, request.calibrationId);
    if (!cal)
        return cal.status();
    TuneRequest tr;
    tr.source.source = request.source;
    tr.source.config = request.base;
    if (cal->remote && simulatesServerModel(*cal->remote)) {
        // A remote vLLM, TGI, SGLang or Triton server: its own knobs on its
        // scheduler model, from its settings as calibrated and the probe's
        // caps (engine/sim/calibration/remote_server_model.h, docs/remote.md).
        auto base = remoteServerModel(*cal->remote, nullptr);
        if (!base)
            return base.status();
        tr.source.config = base->config;
    }
    tr.source.speed = request.speed;
    tr.source.lengthScale = request.lengthScale;
    tr.source.limit = request.limit;
    tr.settings = {.slo = request.slo,
                   .objective = request.objective,
                   .budget = request.budget,
                   .maxInstances = request.maxInstances,
                   .threads = request.threads};
    tr.verify = false; // on demand: AdvisorSearch::verify
    tr.origin = "console advisor";
    auto run = runTunePipeline(store, *cal, tr, nullptr, hooks);
    if (!run)
        return run.status();

    AdvisorResult result;
    result.request = request;
    result.tune = run->result;
    result.calibration = QStringLiteral("%1 #%2, batch fit error %3% (median)")
                             .arg(QString::fromStdString(cal->describe()))
                             .arg(cal->id)
                             .arg(100 * cal->batchError.medianRel, 0, 'f', 1);
    result.requests = run->source.plan.requests.size();
    result.offeredPerS = run->source.offeredPerS;
    result.tuningId = run->stored.tuningId;
    result.warning = QString::fromStdString(run->source.extrapolationWarning(*cal));
    if (run->interval)
        result.interval =
            QString::fromStdString(describeSpread(*run->interval) + "; " + narrowIntervalHint(*cal));
    if (run->result.recommended)
        result.verifyPlan =
            planVerification(run->source, run->calibration, run->settings,
                             run->result.candidates[*run->result.recommended], request.verifyWindow);
    result.run = std::make_shared<const TuneRun>(std::move(*run));
    return result;
}

} // namespace

AdvisorSearch::AdvisorSearch(std::shared_ptr<TraceStore> store, QObject *parent)
    : QObject(parent), m_store(std::move(store))
{
    qRegisterMetaType<AdvisorResult>();
    qRegisterMetaType<AdvisorVerification>();
    qRegisterMetaType<VerifyPlan>();
    m_pool.setMaxThreadCount(2); // a superseded job may still be winding down
}

AdvisorSearch::~AdvisorSearch()
{
    cancel();
    m_pool.waitForDone(); // the tuner and the replay check the flag
}

void AdvisorSearch::cancel()
{
    if (m_cancel)
        m_cancel->store(true);
}

const std::vector<std::string> &AdvisorSearch::searchedKnobs()
{
    // What the tuner's candidates set (engine/sim/tune/tuner.cpp, Space::makeConfig).
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

template <typename Job, typename Done> void AdvisorSearch::startJob(Job job, Done done)
{
    cancel();
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    m_jobs.startJob([store = m_store, job = std::move(job), cancel = m_cancel](
                        const JobTracker::Ticket &ticket) { return job(store, ticket, cancel.get()); },
                    [this, done = std::move(done)](auto result) {
                        if (!result) {
                            emit failed(QString::fromStdString(result.status().message()));
                            return;
                        }
                        done(std::move(*result));
                    });
}

void AdvisorSearch::start(const AdvisorRequest &request)
{
    emit progressChanged(0, int(request.budget));
    if (!m_store) {
        emit failed(tr("No trace database: the advisor searches over a recorded trace or session."));
        return;
    }
    startJob(
        [request, self = QPointer<AdvisorSearch>(this)](const std::shared_ptr<TraceStore> &store,
                                                        const JobTracker::Ticket &ticket,
                                                        const std::atomic<bool> *cancel) {
            auto throttle = std::make_shared<Throttle>();
            TuneHooks hooks;
            hooks.cancel = cancel;
            hooks.searchProgress = [throttle, ticket, self](std::size_t done, std::size_t total) {
                if (throttle->due(done, total))
                    ticket.post([self, done, total] {
                        if (self)
                            emit self->progressChanged(int(done), int(total));
                    });
            };
            return runSearch(store, request, hooks);
        },
        [this](AdvisorResult result) { emit finished(result); });
}

void AdvisorSearch::verify(const AdvisorResult &result, std::size_t candidate, const VerifyWindowSpec &window,
                           std::shared_ptr<Backend> backend)
{
    if (!m_store || !result.run || candidate >= result.run->result.candidates.size()) {
        emit failed(tr("Nothing to verify: run a search first."));
        return;
    }
    startJob(
        [run = result.run, candidate, window, backend = std::move(backend),
         self = QPointer<AdvisorSearch>(this)](
            const std::shared_ptr<TraceStore> &store, const JobTracker::Ticket &ticket,
            const std::atomic<bool> *cancel) -> Result<AdvisorVerification> {
            auto copy = std::make_shared<TuneRun>(*run);
            TuneHooks hooks;
            hooks.cancel = cancel;
            hooks.verifyStarting = [ticket, self](const VerifyPlan &plan) {
                ticket.post([self, plan] {
                    if (self)
                        emit self->verificationStarted(plan);
                });
            };
            hooks.verifyProgress = [ticket, self](const ReplayProgress &p) {
                ticket.post([self, p] {
                    if (self)
                        emit self->verificationProgress(int(p.finished), int(p.total));
                });
            };
            auto verified =
                verifyRun(store, backend, *copy, copy->result.candidates[candidate], window, hooks);
            if (!verified)
                return verified.status();
            return AdvisorVerification{*verified, std::move(copy)};
        },
        [this](AdvisorVerification v) { emit verified(v); });
}

} // namespace bp::ui
