#include "batch_timeline.h"

#include "gui_profiler.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include <array>
#include <cmath>

namespace bp::ui {

namespace {
constexpr int kLaneLabelWidth = 74;
constexpr int kAxisHeight = 18;
constexpr std::array kReasons = {DispatchReason::Full, DispatchReason::DelayExpired,
                                 DispatchReason::StaticFull, DispatchReason::Single, DispatchReason::Drain};

QString formatMs(double seconds)
{
    const double ms = seconds * 1000;
    return ms < 1 ? QStringLiteral("%1 µs").arg(ms * 1000, 0, 'f', 0)
                  : QStringLiteral("%1 ms").arg(ms, 0, 'f', ms < 10 ? 2 : 1);
}

QString tickLabel(double t, double step)
{
    if (std::abs(t) < step * 1e-6)
        return QStringLiteral("now");
    if (step < 1)
        return QStringLiteral("%1 ms").arg(t * 1000, 0, 'f', step < 0.001 ? 1 : 0);
    return QStringLiteral("%1 s").arg(t, 0, 'f', 0);
}
} // namespace

const QColor BatchTimeline::kDecodeColor(50, 110, 210);
const QColor BatchTimeline::kPrefillColor(240, 150, 30);
const QColor BatchTimeline::kJoinColor(20, 150, 60);
const QColor BatchTimeline::kPreemptColor(210, 30, 30);

BatchTimeline::BatchTimeline(QWidget *parent) : QWidget(parent)
{
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);
    m_tick.setInterval(40);
    connect(&m_tick, &QTimer::timeout, this, qOverload<>(&QWidget::update));
    m_sinceSnapshot.start();
}

QColor BatchTimeline::colorFor(DispatchReason reason)
{
    switch (reason) {
    case DispatchReason::Full: return {46, 160, 67};
    case DispatchReason::DelayExpired: return {240, 150, 30};
    case DispatchReason::StaticFull: return {50, 110, 210};
    case DispatchReason::Single: return {140, 140, 140};
    case DispatchReason::Drain: return {150, 80, 190};
    case DispatchReason::CacheHit: return {0, 150, 150}; // no batch runs for these
    }
    return Qt::black;
}

void BatchTimeline::addSnapshot(const app::SnapshotPtr &s)
{
    const BatchingConfig &c = s->config;
    m_batchLimit = c.policy == PolicyKind::Static ? c.staticBatchSize
                   : c.policy == PolicyKind::None ? 1
                                                  : c.maxBatchSize;
    m_stepMode = c.policy == PolicyKind::Continuous;
    m_tokenBudget = c.continuous.maxNumBatchedTokens;
    // recentBatches is in completion order; with several instances ids can
    // arrive out of order, so "seen" is a set, not the highest id.
    for (const BatchRecord &b : s->recentBatches) {
        if (!m_seen.insert(b.id).second)
            continue;
        m_seenOrder.push_back(b.id);
        if (m_seenOrder.size() > kSeenKept) {
            m_seen.erase(m_seenOrder.front());
            m_seenOrder.pop_front();
        }
        m_batches.push_back(b);
        m_lanes = std::max(m_lanes, b.executor + 1);
        if (!isStep(b))
            m_batchLimit = std::max(m_batchLimit, b.size); // formed under an earlier, larger limit
    }
    m_lanes = std::max(m_lanes, c.instances);
    while (m_batches.size() > kMaxBatches ||
           (!m_batches.empty() && m_batches.front().dispatchedAt < s->takenAt - fromSeconds(kMaxSpanS)))
        m_batches.pop_front();
    m_snapshotAt = s->takenAt;
    m_sinceSnapshot.restart();
    if (!m_paused && isVisible() && !m_tick.isActive())
        m_tick.start();
}

void BatchTimeline::setPaused(bool paused)
{
    if (paused)
        m_frozenNow = now();
    m_paused = paused;
    if (paused)
        m_tick.stop();
    else if (isVisible())
        m_tick.start();
    update();
}

void BatchTimeline::setSpan(double seconds)
{
    m_spanS = std::clamp(seconds, kMinSpanS, kMaxSpanS);
    update();
}

TimePoint BatchTimeline::now() const
{
    if (m_paused)
        return m_frozenNow;
    // Between snapshots the strip keeps scrolling with the wall clock (the
    // engine's clock is the steady clock); capped so a stalled engine or a
    // fake clock does not run away.
    const auto since = std::min<qint64>(m_sinceSnapshot.nsecsElapsed(), 250'000'000);
    return m_snapshotAt + Duration(since);
}

TimePoint BatchTimeline::startOf(const BatchRecord &b) const
{
    return b.startedAt != TimePoint{} ? b.startedAt : b.dispatchedAt;
}

BatchTimeline::Geometry BatchTimeline::geometry() const
{
    const QFontMetrics fm(font());
    const double legend = fm.height() + 8;
    QRectF lanes(kLaneLabelWidth, legend, std::max(10, width() - kLaneLabelWidth - 6),
                 std::max(10.0, height() - legend - kAxisHeight));
    return {lanes, lanes.height() / m_lanes,
            TimelineMapping::window(0, m_spanS, lanes.left(), lanes.width())};
}

void BatchTimeline::paintEvent(QPaintEvent *)
{
    GuiProfiler::Scope scope(GuiProfiler::Timeline);
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    const Geometry g = geometry();
    const QFontMetrics fm(font());

    m_stepScale = largestStepInView(g.map, now());
    paintLegend(p);
    const QString help = tr("%1 window · wheel to zoom").arg(formatMs(m_spanS));
    p.drawText(QPointF(width() - fm.horizontalAdvance(help) - 6, 6 + fm.ascent() - 1), help);

    // Lanes and their labels.
    for (int lane = 0; lane < m_lanes; ++lane) {
        const QRectF r(g.lanes.left(), g.lanes.top() + lane * g.laneHeight, g.lanes.width(), g.laneHeight);
        p.fillRect(r, lane % 2 ? palette().alternateBase() : palette().base());
        p.setPen(palette().text().color());
        p.drawText(QRectF(4, r.top(), kLaneLabelWidth - 8, r.height()), Qt::AlignVCenter | Qt::AlignLeft,
                   tr("instance %1").arg(lane));
    }

    // Time axis.
    const double step = g.map.tickStep(90);
    p.setPen(palette().mid().color());
    for (double t = g.map.firstTick(step); t <= g.map.endS + step * 1e-9; t += step) {
        const double tx = g.map.toX(t);
        p.drawLine(QPointF(tx, g.lanes.top()), QPointF(tx, g.lanes.bottom() + 3));
        const QString label = tickLabel(t, step);
        const double w = fm.horizontalAdvance(label);
        p.drawText(QPointF(std::clamp(tx - w / 2, g.lanes.left(), g.lanes.right() - w),
                           g.lanes.bottom() + fm.ascent() + 3),
                   label);
    }

    // Batches, newest last so they draw on top.
    p.setRenderHint(QPainter::Antialiasing, false);
    const TimePoint t0 = now();
    for (auto it = m_batches.rbegin(); it != m_batches.rend(); ++it) {
        const BatchRecord &b = *it;
        const double start = toSeconds(startOf(b) - t0);
        if (start + toSeconds(b.compute) < g.map.startS - kOrderSlackS)
            break; // older batches are further left still (completion order is nearly start order)
        const auto span = g.map.span(start, start + toSeconds(b.compute), 2);
        if (!span.visible)
            continue;
        const double laneTop = g.lanes.top() + std::clamp(b.executor, 0, m_lanes - 1) * g.laneHeight;
        if (isStep(b)) {
            paintStep(p, b, QRectF(span.x0, laneTop + 2, span.x1 - span.x0, g.laneHeight - 4));
            continue;
        }
        const double h = std::max(3.0, (g.laneHeight - 4) * std::min(1.0, double(b.size) / m_batchLimit));
        const QRectF bar(span.x0, laneTop + g.laneHeight - 2 - h, span.x1 - span.x0, h);
        const QColor c = colorFor(b.reason);
        p.fillRect(bar, c);
        if (bar.width() >= 4) {
            p.setPen(c.darker(150));
            p.drawRect(bar.adjusted(0, 0, -1, -1));
        }
        const QString label = QStringLiteral("%1×%2").arg(b.size).arg(b.paddedLength);
        if (bar.width() > fm.horizontalAdvance(label) + 4 && bar.height() > fm.height()) {
            p.setPen(Qt::white);
            QString text = label;
            const QString more = QStringLiteral("%1 · b%2").arg(formatMs(toSeconds(b.compute))).arg(b.bucket);
            if (bar.height() > 2 * fm.height() && bar.width() > fm.horizontalAdvance(more) + 4)
                text += QLatin1Char('\n') + more;
            p.drawText(bar.adjusted(2, 1, -2, -1), Qt::AlignLeft | Qt::AlignTop, text);
        }
    }
}

int BatchTimeline::largestStepInView(const TimelineMapping &map, TimePoint t0) const
{
    int largest = 1;
    for (auto it = m_batches.rbegin(); it != m_batches.rend(); ++it) {
        const double start = toSeconds(startOf(*it) - t0);
        if (start + toSeconds(it->compute) < map.startS - kOrderSlackS)
            break;
        if (isStep(*it) && start <= map.endS)
            largest = std::max(largest, it->prefillTokens + it->decodeTokens);
    }
    return largest;
}

void BatchTimeline::paintLegend(QPainter &p) const
{
    const QFontMetrics fm(font());
    double x = 6;
    auto swatch = [&](const QColor &color, const QString &name) {
        p.fillRect(QRectF(x, 6, 10, 10), color);
        p.setPen(palette().text().color());
        p.drawText(QPointF(x + 14, 6 + fm.ascent() - 1), name);
        x += 14 + fm.horizontalAdvance(name) + 14;
    };
    if (m_stepMode) {
        swatch(kDecodeColor, tr("decode tokens"));
        swatch(kPrefillColor, tr("prefill tokens"));
        swatch(kJoinColor, tr("sequences joined"));
        swatch(kPreemptColor, tr("preempted"));
        p.drawText(QPointF(x, 6 + fm.ascent() - 1),
                   tr("bar = one step; height = its tokens, full = %1 (the largest in view; budget %2)")
                       .arg(m_stepScale)
                       .arg(m_tokenBudget));
        return;
    }
    for (DispatchReason r : kReasons)
        swatch(colorFor(r), QString::fromUtf8(dispatchReasonName(r).data()));
}

BatchTimeline::StepBar BatchTimeline::stepBar(const BatchRecord &step, const QRectF &slot, int fullTokens)
{
    const double tokens = std::max(0, step.prefillTokens) + std::max(0, step.decodeTokens);
    const double share = fullTokens > 0 ? std::min(1.0, tokens / fullTokens) : 1.0;
    const double h = std::max(3.0, slot.height() * share);
    const double decodeH = tokens > 0 ? h * std::max(0, step.decodeTokens) / tokens : 0;
    StepBar bar;
    bar.decode = QRectF(slot.left(), slot.bottom() - decodeH, slot.width(), decodeH);
    bar.prefill = QRectF(slot.left(), slot.bottom() - h, slot.width(), h - decodeH);
    return bar;
}

void BatchTimeline::paintStep(QPainter &p, const BatchRecord &b, const QRectF &slot) const
{
    const StepBar bar = stepBar(b, slot, m_stepScale);
    if (bar.decode.height() > 0)
        p.fillRect(bar.decode, kDecodeColor);
    if (bar.prefill.height() > 0)
        p.fillRect(bar.prefill, kPrefillColor);
    const QRectF whole = bar.whole();
    if (whole.width() >= 4) {
        p.setPen(kDecodeColor.darker(160));
        p.drawRect(whole.adjusted(0, 0, -1, -1));
    }
    // Joins and preemptions: a 4 px cap above the bar, at least 3 px wide.
    const double capW = std::max(3.0, whole.width());
    const QRectF cap(whole.left(), std::max(slot.top(), whole.top() - 5), capW, 4);
    // The label at the bottom, clear of the caps.
    const QFontMetrics fm(font());
    const QString label = tr("%1 seq · %2+%3 tok").arg(b.size).arg(b.prefillTokens).arg(b.decodeTokens);
    if (whole.width() > fm.horizontalAdvance(label) + 4 && whole.height() > fm.height() + 8) {
        p.setPen(Qt::white);
        p.drawText(whole.adjusted(2, 1, -2, -1), Qt::AlignLeft | Qt::AlignBottom, label);
    }
    if (b.joined > 0)
        p.fillRect(cap, kJoinColor);
    if (b.preempted > 0) // above the join cap where there is room
        p.fillRect(cap.translated(0, b.joined > 0 && cap.top() - 5 >= slot.top() ? -5 : 0), kPreemptColor);
}

QString BatchTimeline::describeStep(const BatchRecord &b) const
{
    return tr("<b>step %1</b> on instance %2<br>%3 sequences: %4 prefill + %5 decode tokens (budget %6)<br>"
              "joined %7, preempted %8<br>after it: %9 running, %10 waiting, %11 KV tokens<br>"
              "compute %12<br>config v%13")
        .arg(b.id)
        .arg(b.executor)
        .arg(b.size)
        .arg(b.prefillTokens)
        .arg(b.decodeTokens)
        .arg(m_tokenBudget)
        .arg(b.joined)
        .arg(b.preempted)
        .arg(b.running)
        .arg(b.waiting)
        .arg(b.kvTokens)
        .arg(formatMs(toSeconds(b.compute)))
        .arg(b.configVersion);
}

const BatchRecord *BatchTimeline::batchAt(const QPoint &pos) const
{
    const Geometry g = geometry();
    if (!g.lanes.contains(pos))
        return nullptr;
    const int lane = int((pos.y() - g.lanes.top()) / g.laneHeight);
    const TimePoint t0 = now();
    const double slack = 2 * g.map.secondsPerPixel(); // bars are at least 2 px wide
    for (auto it = m_batches.rbegin(); it != m_batches.rend(); ++it) {
        if (it->executor != lane)
            continue;
        const double start = toSeconds(startOf(*it) - t0);
        const double t = g.map.toTime(pos.x());
        if (t >= start - slack && t <= start + toSeconds(it->compute) + slack)
            return &*it;
        if (start + toSeconds(it->compute) < g.map.startS - kOrderSlackS)
            break;
    }
    return nullptr;
}

QString BatchTimeline::describe(const BatchRecord &b) const
{
    return tr("<b>batch %1</b> on instance %2<br>%3 requests × %4 tokens padded (bucket %5)<br>"
              "padding efficiency %6%<br>compute %7<br>dispatched: <b>%8</b> (%9 after the policy's "
              "moment)<br>"
              "policy %10, config v%11")
        .arg(b.id)
        .arg(b.executor)
        .arg(b.size)
        .arg(b.paddedLength)
        .arg(b.bucket)
        .arg(b.paddedTokens ? 100.0 * double(b.realTokens) / double(b.paddedTokens) : 100.0, 0, 'f', 1)
        .arg(formatMs(toSeconds(b.compute)))
        .arg(QString::fromUtf8(dispatchReasonName(b.reason).data()))
        .arg(formatMs(std::max(0.0, toSeconds(b.dispatchedAt - b.intendedAt))))
        .arg(QString::fromUtf8(policyName(b.policy).data()))
        .arg(b.configVersion);
}

bool BatchTimeline::event(QEvent *event)
{
    if (event->type() == QEvent::ToolTip) {
        auto *help = static_cast<QHelpEvent *>(event);
        if (const BatchRecord *b = batchAt(help->pos()))
            QToolTip::showText(help->globalPos(), isStep(*b) ? describeStep(*b) : describe(*b), this);
        else
            QToolTip::hideText();
        return true;
    }
    return QWidget::event(event);
}

void BatchTimeline::wheelEvent(QWheelEvent *event)
{
    const double notches = event->angleDelta().y() / 120.0;
    setSpan(m_spanS * std::pow(1.25, -notches));
    event->accept();
}

void BatchTimeline::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    if (!m_paused)
        m_tick.start();
}

void BatchTimeline::hideEvent(QHideEvent *event)
{
    QWidget::hideEvent(event);
    m_tick.stop();
}

} // namespace bp::ui
