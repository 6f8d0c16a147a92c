#include "compare_view.h"

#include "comparison_model.h"
#include "time_chart_view.h"

#include "engine/store/trace_store.h"

#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

namespace bp::ui {

namespace {
struct SessionData {
    SessionSummary summary;
    std::vector<MetricSample> samples;
    std::vector<StoredConfigChange> changes;
};

Result<SessionData> load(TraceStore &store, std::int64_t id)
{
    SessionData d;
    auto summary = store.summary(id);
    if (!summary)
        return summary.status();
    auto samples = store.metricSamples(id);
    if (!samples)
        return samples.status();
    auto changes = store.configHistory(id);
    if (!changes)
        return changes.status();
    d.summary = std::move(summary.value());
    d.samples = std::move(samples.value());
    d.changes = std::move(changes.value());
    return d;
}

using Pair = std::pair<Result<SessionData>, Result<SessionData>>;
using Field = double (*)(const MetricSample &);

const QColor kColorA(40, 110, 200), kColorB(220, 110, 20);
} // namespace

CompareView::CompareView(std::shared_ptr<TraceStore> store, QWidget *parent)
    : QWidget(parent), m_store(std::move(store))
{
    m_title = new QLabel(
        tr("Select two sessions in the Traces panel and press Compare (or double-click a replay)."), this);
    m_title->setWordWrap(true);
    QFont f = m_title->font();
    f.setBold(true);
    m_title->setFont(f);

    auto *chartArea = new QWidget(this);
    auto *grid = new QGridLayout(chartArea);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->setSpacing(2);
    const struct {
        QString title, axis;
    } specs[] = {{tr("Throughput"), tr("requests/s")},
                 {tr("Latency p99 (p50 thin)"), tr("ms")},
                 {tr("Mean batch size"), tr("requests/batch")},
                 {tr("Queue depth"), tr("requests")}};
    for (int i = 0; i < 4; ++i) {
        auto *chart = new TimeChartView(specs[i].title, specs[i].axis, chartArea);
        chart->setTimeAxisTitle(tr("seconds from the session's start"));
        chart->addSeries(tr("A"), kColorA, TimeChartView::Axis::Left, Qt::SolidLine, 2);
        chart->addSeries(tr("B"), kColorB, TimeChartView::Axis::Left, Qt::DashLine, 2);
        if (i == 1) {
            chart->addSeries(tr("A p50"), kColorA.lighter(140), TimeChartView::Axis::Left, Qt::SolidLine, 1);
            chart->addSeries(tr("B p50"), kColorB.lighter(140), TimeChartView::Axis::Left, Qt::DashLine, 1);
        }
        grid->addWidget(chart, i / 2, i % 2);
        m_charts << chart;
    }

    m_model = new ComparisonModel(this);
    m_table = new QTableView(this);
    m_table->setModel(m_model);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 4);
    // Columns sized to the numbers, not to the long config strings (those
    // are elided; the full text is in the tooltip): a column as wide as a
    // config pushed the right-aligned figures out of view.
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setTextElideMode(Qt::ElideMiddle);
    m_table->setWordWrap(false);
    m_table->setAlternatingRowColors(true);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);

    auto *splitter = new QSplitter(Qt::Horizontal, this);
    splitter->addWidget(chartArea);
    splitter->addWidget(m_table);
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 1);

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_title);
    layout->addWidget(splitter, 1);
}

CompareView::~CompareView()
{
    m_jobs.reset();
    m_pool.waitForDone();
}

void CompareView::compare(std::int64_t a, std::int64_t b)
{
    if (!m_store) {
        emit failed(tr("No trace database to compare sessions from."));
        return;
    }
    m_title->setText(tr("Loading sessions %1 and %2…").arg(a).arg(b));
    m_jobs.startJob(
        [store = m_store, a, b](const JobTracker::Ticket &) {
            return Pair(load(*store, a), load(*store, b));
        },
        [this, a, b](Pair data) {
            if (!data.first || !data.second) {
                // Name every session that failed to load, not just the first.
                QStringList problems;
                for (const auto *loaded : {&data.first, &data.second})
                    if (!*loaded)
                        problems << QString::fromStdString(loaded->status().message());
                m_title->setText(tr("Cannot compare: %1").arg(problems.join(QStringLiteral("; "))));
                emit failed(m_title->text());
                return;
            }
            const SessionData &da = data.first.value(), &db = data.second.value();
            m_model->setSessions(da.summary, db.summary);
            m_table->resizeColumnsToContents();
            const int widest = m_table->fontMetrics().horizontalAdvance(QStringLiteral("1000000.000 (A)")) + 12;
            for (int c = 1; c < m_model->columnCount(); ++c) // the figure names stay whole
                m_table->setColumnWidth(c, std::min(m_table->columnWidth(c), widest));
            m_title->setText(
                tr("A = session %1 (%2, %3)   vs   B = session %4 (%5, %6)")
                    .arg(a)
                    .arg(QString::fromStdString(da.summary.kind), QString::fromStdString(da.summary.config))
                    .arg(b)
                    .arg(QString::fromStdString(db.summary.kind), QString::fromStdString(db.summary.config)));
            auto series = [](const std::vector<MetricSample> &samples, Field field) {
                QList<QPointF> out;
                out.reserve(qsizetype(samples.size()));
                for (const MetricSample &s : samples)
                    out.append(QPointF(toSeconds(s.at), field(s)));
                return out;
            };
            const Field fields[] = {
                [](const MetricSample &s) { return s.requestsPerS; },
                [](const MetricSample &s) { return s.totalP99Us / 1000; },
                [](const MetricSample &s) { return s.meanBatchSize; },
                [](const MetricSample &s) { return double(s.queueDepth); },
            };
            double end = 1;
            for (const auto *d : {&da, &db})
                if (!d->samples.empty())
                    end = std::max(end, toSeconds(d->samples.back().at));
            std::vector<TimeChartView::Marker> markers;
            for (const auto &[label, d] :
                 {std::pair{QStringLiteral("A"), &da}, std::pair{QStringLiteral("B"), &db}})
                for (const StoredConfigChange &c : d->changes)
                    if (c.version > 1)
                        markers.push_back(
                            {toSeconds(c.at),
                             QStringLiteral("%1: %2").arg(label, QString::fromStdString(c.summary)),
                             tr("session %1, config v%2 from %3")
                                 .arg(d->summary.sessionId)
                                 .arg(c.version)
                                 .arg(QString::fromStdString(c.origin))});
            for (int i = 0; i < m_charts.size(); ++i) {
                TimeChartView *chart = m_charts[i];
                chart->setPoints(0, series(da.samples, fields[i]));
                chart->setPoints(1, series(db.samples, fields[i]));
                if (i == 1) {
                    const Field p50 = [](const MetricSample &s) { return s.totalP50Us / 1000; };
                    chart->setPoints(2, series(da.samples, p50));
                    chart->setPoints(3, series(db.samples, p50));
                }
                chart->setSeriesName(0, tr("A (session %1)").arg(a));
                chart->setSeriesName(1, tr("B (session %1)").arg(b));
                chart->setTimeRange(0, std::ceil(end));
                chart->rescale();
                chart->setMarkers(markers);
            }
            emit compared(a, b);
        });
}

} // namespace bp::ui
