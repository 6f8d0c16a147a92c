// GUI-thread cost accounting for the charts: time spent turning snapshots
// into series (update) and painting chart views (paint), per second.
// Enabled by BATCHPILOT_UI_PROFILE=1 (then printed to stderr once a second
// as "ui-profile: ..."); always counted, so a test or bench can read the
// totals. GUI thread only.
#pragma once

#include <QElapsedTimer>

#include <cstdint>

namespace bp::ui {

class GuiProfiler {
public:
    enum Stage { Update, Paint, Timeline, StageCount };

    static GuiProfiler &instance();
    void add(Stage stage, std::int64_t ns);
    // A snapshot arrived; `requestsPerS` is the engine's load it reports.
    void countSnapshot(double requestsPerS)
    {
        ++m_snapshots;
        m_requestsPerS = requestsPerS;
    }
    std::int64_t totalNs(Stage stage) const { return m_total[stage]; }
    std::uint64_t calls(Stage stage) const { return m_calls[stage]; }
    bool printing() const { return m_print; }

    class Scope {
    public:
        explicit Scope(Stage stage) : m_stage(stage) { m_timer.start(); }
        ~Scope() { GuiProfiler::instance().add(m_stage, m_timer.nsecsElapsed()); }
        Scope(const Scope &) = delete;
        Scope &operator=(const Scope &) = delete;

    private:
        Stage m_stage;
        QElapsedTimer m_timer;
    };

private:
    GuiProfiler();
    void report();

    bool m_print = false;
    QElapsedTimer m_since;
    std::int64_t m_total[StageCount] = {};
    std::uint64_t m_calls[StageCount] = {};
    std::int64_t m_windowNs[StageCount] = {};
    std::uint64_t m_windowCalls[StageCount] = {};
    std::uint64_t m_snapshots = 0, m_windowSnapshots = 0;
    double m_requestsPerS = 0;
};

} // namespace bp::ui
