// The trace store in the console: imported traces and recorded sessions
// (table models over the store, refreshed off the GUI thread), CSV import
// with a progress bar, replay of a trace or session with speed and length
// scaling, a progress bar and cancel, and "compare" for two sessions.
// First run: while no trace is imported, a banner offers the bundled sample
// trace (one click imports it, a second replays it).
#pragma once

#include "replay_runner.h"

#include "app/engine_bridge.h"

#include <QTimer>
#include <QWidget>

#include <memory>

class QHBoxLayout;
class QLabel;
class QProgressBar;
class QPushButton;
class QTableView;

namespace bp {
struct ImportResult;
}

namespace bp::ui {

class SessionListModel;
class TraceImporter;
class TraceListModel;

class TracesView : public QWidget {
    Q_OBJECT
public:
    TracesView(app::EngineBridge &bridge, std::shared_ptr<TraceStore> store, std::int64_t liveSessionId,
               ReplayRunner::BackendFactory replayBackend, QWidget *parent = nullptr);
    ~TracesView() override;

    TraceListModel *traceModel() const { return m_traces; }
    SessionListModel *sessionModel() const { return m_sessions; }
    QTableView *traceTable() const { return m_traceTable; }
    QTableView *sessionTable() const { return m_sessionTable; }
    QProgressBar *progressBar() const { return m_progress; }
    ReplayRunner *replayRunner() const { return m_replay; }
    TraceImporter *importer() const { return m_importer; }
    bool hasStore() const { return m_store != nullptr; }

    // The bundled sample trace to offer while the store holds no trace
    // (app::sampleTracePath(); empty: no offer).
    void setSampleTracePath(const QString &csvPath);
    QWidget *sampleOffer() const { return m_sampleOffer; }
    QLabel *sampleOfferText() const { return m_sampleText; }
    QPushButton *sampleImportButton() const { return m_sampleImport; }
    QPushButton *sampleReplayButton() const { return m_sampleReplay; }
    // The id the sample got when imported from the banner (0 before).
    std::int64_t sampleTraceId() const { return m_sampleTraceId; }

public slots:
    void refresh();
    void importFile(const QString &csvPath);
    void chooseAndImport();
    // Ask for the options, then replay the selected trace / session.
    void replaySelectedTrace();
    void replaySelectedSession();
    void askAndReplay(const ReplaySource &source);
    void replay(const ReplayOptions &options,
                const std::optional<remote::RemoteOptions> &remote = std::nullopt);
    void compareSelected();
    void cancelJob();
    void deleteSelected();
    // Report of the selected session (the live one when none is selected):
    // asks for a file (.html, .pdf or .json) and writes it off the GUI thread.
    void exportSelectedReport();
    // Writes the report of `sessionId` to `path` (format from its extension)
    // on the pool; emits reportExported() or reportFailed().
    void exportReport(std::int64_t sessionId, const QString &path);
    void importSample();
    void replaySample();

signals:
    void refreshed();
    void compareRequested(std::int64_t a, std::int64_t b);
    void replayFinished(std::int64_t sessionId);
    void message(const QString &text);
    void reportExported(std::int64_t sessionId, const QString &path);
    void reportFailed(const QString &reason);
    // The first-run banner appeared (the window raises this dock).
    void sampleOffered();

private:
    // The builders and wiring (traces_view_build.cpp), in the order the
    // constructor calls them.
    QWidget *buildTraceBox();
    QWidget *buildSessionBox(QPushButton *&refreshButton);
    QHBoxLayout *buildJobRow();
    QPushButton *buildSampleOffer();
    void connectButtons(QPushButton *refreshButton, QPushButton *dismiss);
    void connectJobs();
    void importDone(const ImportResult &r);
    void replayDone(const ReplayOutcome &o);

    void startJobUi(const QString &text);
    void finishJobUi(const QString &text, bool error = false);
    void updateButtons();
    std::int64_t selectedId(QTableView *view) const;
    void updateSampleOffer();

    app::EngineBridge &m_bridge;
    std::shared_ptr<TraceStore> m_store;
    const std::int64_t m_live;
    QThreadPool m_pool;
    JobTracker m_listJobs{this, &m_pool};
    JobTracker m_deleteJobs{this, &m_pool};
    JobTracker m_reportJobs{this, &m_pool};
    TraceListModel *m_traces = nullptr;
    SessionListModel *m_sessions = nullptr;
    TraceImporter *m_importer = nullptr;
    ReplayRunner *m_replay = nullptr;
    QTimer m_autoRefresh;

    QTableView *m_traceTable = nullptr;
    QTableView *m_sessionTable = nullptr;
    QPushButton *m_import = nullptr, *m_replayTrace = nullptr, *m_deleteTrace = nullptr;
    QPushButton *m_replaySession = nullptr, *m_compare = nullptr, *m_deleteSession = nullptr;
    QPushButton *m_export = nullptr;
    QLabel *m_jobText = nullptr;
    QProgressBar *m_progress = nullptr;
    QPushButton *m_cancel = nullptr;

    QString m_samplePath;
    bool m_listed = false;          // the first list arrived
    bool m_sampleImporting = false; // the importer runs for the banner
    bool m_sampleDone = false;      // replayed or dismissed: no banner again
    bool m_sampleSelected = false;  // its row was selected once after the import
    std::int64_t m_sampleTraceId = 0;
    QWidget *m_sampleOffer = nullptr;
    QLabel *m_sampleText = nullptr;
    QPushButton *m_sampleImport = nullptr, *m_sampleReplay = nullptr;
};

} // namespace bp::ui
