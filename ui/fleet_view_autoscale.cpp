// The Fleet view's autoscaler runs: a stored replay of a
// policy over a trace (`batchpilot autoscale --trace`, table autoscale_runs)
// drawn as replicas over time beside the plan's replicas per window, the
// windows with misses during a cold start marked. The document is made
// ready to draw off the GUI thread (fleet_view_drawing.cpp).
#include "fleet_view.h"

#include "trace_list_model.h"

#include <QChart>
#include <QComboBox>
#include <QLabel>
#include <QLineSeries>
#include <QScatterSeries>
#include <QSignalBlocker>
#include <QValueAxis>

#include <algorithm>
#include <vector>

namespace bp::ui {

namespace {

constexpr int kDashedPoints = 500; // a dashed line with more points takes seconds to paint

} // namespace

void FleetView::listAutoscaleRuns(const std::vector<AutoscaleHeadline> &runs)
{
    // The run shown stays, unless a newer one was stored since (then the newest).
    const std::int64_t kept = m_autoscale->currentData().toLongLong();
    const std::int64_t newestBefore = m_autoscale->count() ? m_autoscale->itemData(0).toLongLong() : 0;
    {
        QSignalBlocker block(m_autoscale);
        m_autoscale->clear();
        for (const AutoscaleHeadline &h : runs) {
            const QString text = tr("#%1 %2 — %3% windows met, %4 replica-h, peak %5 (%6)")
                                     .arg(h.id)
                                     .arg(QString::fromStdString(h.policy))
                                     .arg(100 * h.windowsMetShare, 0, 'f', 1)
                                     .arg(replicaHours(h.replicaHours))
                                     .arg(h.peakReplicas)
                                     .arg(formatWallClock(h.createdAtUs));
            m_autoscale->addItem(text, qlonglong(h.id));
            m_autoscale->setItemData(m_autoscale->count() - 1,
                                     tr("%1<br>SLO: %2")
                                         .arg(text.toHtmlEscaped())
                                         .arg(QString::fromStdString(h.slo).toHtmlEscaped()),
                                     Qt::ToolTipRole);
        }
        const bool newer = !runs.empty() && runs.front().id != newestBefore;
        const int keptRow = newer ? -1 : m_autoscale->findData(qlonglong(kept));
        m_autoscale->setCurrentIndex(keptRow >= 0 ? keptRow : m_autoscale->count() ? 0 : -1);
    }
    const bool any = !runs.empty();
    m_autoscale->setVisible(any);
    m_autoscaleLabel->setVisible(any);
    m_autoscalePanel->setVisible(any);
    emit autoscaleRunsListed();
    if (!any) {
        m_autoscaleJobs.reset();
        m_autoscaleShown.reset();
        clearAutoscaleChart();
    } else if (!m_autoscaleShown || *m_autoscaleShown != m_autoscale->currentData().toLongLong()) {
        loadAutoscaleRun();
    }
}

void FleetView::loadAutoscaleRun()
{
    if (!m_store || m_autoscale->currentIndex() < 0)
        return;
    const std::int64_t id = m_autoscale->currentData().toLongLong();
    m_autoscaleJobs.startJob(
        [store = m_store, id](const JobTracker::Ticket &) -> Result<AutoscaleDrawing> {
            Result<StoredAutoscaleRun> run = autoscaleRun(*store, id);
            if (!run)
                return run.status();
            return autoscaleDrawing(*run);
        },
        [this](Result<AutoscaleDrawing> d) {
            if (!d) {
                m_autoscaleShown.reset();
                clearAutoscaleChart();
                m_autoscaleSummary->setText(QString::fromStdString(d.status().message()).toHtmlEscaped());
                emit failed(QString::fromStdString(d.status().message()));
                return;
            }
            showAutoscaleRun(*d);
        });
}

void FleetView::clearAutoscaleChart()
{
    for (QXYSeries *s :
         std::initializer_list<QXYSeries *>{m_asServing, m_asBilled, m_asWanted, m_asPlan, m_asColdMisses})
        s->clear();
    m_coldMissCounts.clear();
    m_coldMissTips.clear();
    m_autoscaleSummary->clear();
}

void FleetView::showAutoscaleRun(const AutoscaleDrawing &d)
{
    m_asServing->replace(d.serving);
    m_asBilled->replace(d.billed);
    m_asWanted->replace(d.wanted);
    // Dashing a line of thousands of jumps takes seconds to paint: solid then.
    QPen wantedPen = m_asWanted->pen();
    wantedPen.setStyle(d.wanted.size() <= kDashedPoints ? Qt::DashLine : Qt::SolidLine);
    m_asWanted->setPen(wantedPen);
    m_asPlan->replace(d.plan);
    m_asColdMisses->replace(d.coldMisses);
    m_coldMissCounts = d.coldMissCounts;
    m_coldMissTips = d.coldMissTips;
    m_autoscaleUnitS = d.unitS;
    m_asPlan->setVisible(!d.plan.isEmpty()); // no plan: no plan line, and none in the legend
    if (auto *x = qobject_cast<QValueAxis *>(m_autoscaleChart->axes(Qt::Horizontal).value(0))) {
        // Ticks at whole hours (minutes, seconds) from 0, at most 8 intervals.
        const double span = d.spanS / d.unitS;
        static const std::vector<double> hourSteps{1, 2, 3, 6, 12, 24, 48, 72, 168},
            otherSteps{1, 2, 5, 10, 15, 30, 60};
        double interval = 1;
        for (double c : d.unitS == 3600 ? hourSteps : otherSteps)
            if ((interval = c) * 8 >= span)
                break;
        while (interval * 8 < span)
            interval *= 2;
        x->setTickType(QValueAxis::TicksDynamic);
        x->setTickAnchor(0);
        x->setTickInterval(interval);
        x->setRange(0, span);
        x->setTitleText(d.unitS == 3600 ? tr("hours of serving time")
                        : d.unitS == 60 ? tr("minutes of serving time")
                                        : tr("seconds of serving time"));
    }
    if (auto *y = qobject_cast<QValueAxis *>(m_autoscaleChart->axes(Qt::Vertical).value(0))) {
        // Whole replicas on the ticks: at most 10 intervals of a whole step.
        int top = std::max(d.peak, 1) + 1;
        const int step = (top + 9) / 10;
        top = (top + step - 1) / step * step;
        y->setRange(0, top);
        y->setTickCount(top / step + 1);
    }
    m_autoscaleSummary->setText(d.summary);
    m_autoscaleShown = d.id;
    emit autoscaleRunShown(d.id);
}

} // namespace bp::ui
