#include "trace_importer.h"

namespace bp::ui {

TraceImporter::TraceImporter(std::shared_ptr<TraceStore> store, QObject *parent)
    : QObject(parent), m_store(std::move(store))
{
    qRegisterMetaType<ImportResult>();
    m_pool.setMaxThreadCount(2);
}

TraceImporter::~TraceImporter()
{
    cancel();
    m_pool.waitForDone();
}

void TraceImporter::cancel()
{
    if (m_cancel)
        m_cancel->store(true);
}

void TraceImporter::start(const QString &csvPath)
{
    cancel();
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    emit progressChanged(0);
    m_jobs.startJob(
        [store = m_store, path = csvPath.toStdString(), cancel = m_cancel,
         self = QPointer<TraceImporter>(this)](const JobTracker::Ticket &ticket) -> Result<ImportResult> {
            ImportOptions options;
            // Throttled: the parser calls back every few thousand lines.
            auto last = SteadyClock::now() - std::chrono::seconds(1);
            int lastPercent = -1;
            options.progress = [&, ticket, self](double fraction) {
                const int percent = int(100 * fraction);
                const auto now = SteadyClock::now();
                if (percent != lastPercent && now - last >= std::chrono::milliseconds(100)) {
                    last = now;
                    lastPercent = percent;
                    ticket.post([self, percent] {
                        if (self)
                            emit self->progressChanged(percent);
                    });
                }
                return !cancel->load();
            };
            return store->importTrace(path, options);
        },
        [this](Result<ImportResult> result) {
            if (!result) {
                emit failed(QString::fromStdString(result.status().message()));
                return;
            }
            emit progressChanged(100);
            emit imported(*result);
        });
}

} // namespace bp::ui
