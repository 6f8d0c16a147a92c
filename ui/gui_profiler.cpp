#include "gui_profiler.h"

#include <QString>
#include <QTextStream>

namespace bp::ui {

GuiProfiler &GuiProfiler::instance()
{
    static GuiProfiler profiler;
    return profiler;
}

GuiProfiler::GuiProfiler() : m_print(qEnvironmentVariableIntValue("BATCHPILOT_UI_PROFILE") != 0)
{
    m_since.start();
}

void GuiProfiler::add(Stage stage, std::int64_t ns)
{
    m_total[stage] += ns;
    ++m_calls[stage];
    m_windowNs[stage] += ns;
    ++m_windowCalls[stage];
    if (m_print && m_since.elapsed() >= 1000)
        report();
}

void GuiProfiler::report()
{
    const double seconds = double(m_since.nsecsElapsed()) / 1e9;
    const std::uint64_t snapshots = m_snapshots - m_windowSnapshots;
    auto msPerS = [&](Stage s) { return double(m_windowNs[s]) / 1e6 / seconds; };
    QTextStream(stderr) << QStringLiteral(
                               "ui-profile: %1 s: snapshots %2/s; chart update %3 ms/s (%4 calls); "
                               "chart paint %5 ms/s (%6 calls); timeline paint %7 ms/s (%8 calls); "
                               "GUI thread busy with charts %9% at %10 requests/s\n")
                               .arg(seconds, 0, 'f', 2)
                               .arg(double(snapshots) / seconds, 0, 'f', 1)
                               .arg(msPerS(Update), 0, 'f', 2)
                               .arg(m_windowCalls[Update])
                               .arg(msPerS(Paint), 0, 'f', 2)
                               .arg(m_windowCalls[Paint])
                               .arg(msPerS(Timeline), 0, 'f', 2)
                               .arg(m_windowCalls[Timeline])
                               .arg((msPerS(Update) + msPerS(Paint) + msPerS(Timeline)) / 10, 0, 'f', 2)
                               .arg(m_requestsPerS, 0, 'f', 0);
    for (int s = 0; s < StageCount; ++s) {
        m_windowNs[s] = 0;
        m_windowCalls[s] = 0;
    }
    m_windowSnapshots = m_snapshots;
    m_since.restart();
}

} // namespace bp::ui
