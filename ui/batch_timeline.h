// The latest batches as a scrolling strip, one lane per model instance:
// each batch is a bar from its start to the end of its compute, as tall as
// its share of the batch limit and coloured by why it left the queue, with
// size × padded length, bucket and compute time written in when it fits
// (and in a tooltip always). "Now" is at the right edge; the wheel zooms.
// Under policy `continuous` a bar is one model step instead, as tall as its
// tokens against the largest step in view (a decode-only step of a few
// sequences is ~1% of a 512-token budget: scaled to the budget it would be
// a line), split into decode
// tokens (bottom) and prefill tokens (top); a step that sequences joined
// carries a green mark on top, one that preempted a red one.
// Painting runs on a 40 ms timer only while the widget is visible.
#pragma once

#include "timeline_mapping.h"

#include "app/engine_bridge.h"

#include <QColor>
#include <QElapsedTimer>
#include <QRectF>
#include <QTimer>
#include <QWidget>

#include <deque>
#include <unordered_set>

namespace bp::ui {

class BatchTimeline : public QWidget {
    Q_OBJECT
public:
    explicit BatchTimeline(QWidget *parent = nullptr);

    void addSnapshot(const app::SnapshotPtr &snapshot);
    void setPaused(bool paused);
    void setSpan(double seconds);
    double span() const { return m_spanS; }

    std::size_t batchCount() const { return m_batches.size(); }
    const std::deque<BatchRecord> &batches() const { return m_batches; }
    // The batch drawn under `pos`, or nullptr.
    const BatchRecord *batchAt(const QPoint &pos) const;
    static QColor colorFor(DispatchReason reason);

    // A step's bar inside `slot` (its time span, the lane's usable height):
    // decode tokens at the bottom, prefill tokens stacked on them, together
    // as tall as the step's tokens against `fullTokens` (at least 3 px).
    struct StepBar {
        QRectF decode, prefill;
        QRectF whole() const { return decode.united(prefill); }
    };
    static StepBar stepBar(const BatchRecord &step, const QRectF &slot, int fullTokens);
    static bool isStep(const BatchRecord &b) { return b.policy == PolicyKind::Continuous; }
    static const QColor kDecodeColor, kPrefillColor, kJoinColor, kPreemptColor;
    // True while the newest config is `continuous`: the legend names step parts.
    bool showsSteps() const { return m_stepMode; }

    static constexpr std::size_t kMaxBatches = 20000;
    static constexpr double kMinSpanS = 0.01, kMaxSpanS = 60;
    static constexpr std::size_t kSeenKept = 4096; // > the 256 batches one snapshot carries
    static constexpr double kOrderSlackS = 1;      // how far completion order may stray from start order

protected:
    void paintEvent(QPaintEvent *event) override;
    void wheelEvent(QWheelEvent *event) override;
    bool event(QEvent *event) override;
    void showEvent(QShowEvent *event) override;
    void hideEvent(QHideEvent *event) override;
    QSize sizeHint() const override { return {600, 160}; }
    QSize minimumSizeHint() const override { return {200, 90}; }

private:
    struct Geometry {
        QRectF lanes; // the area the lanes share
        double laneHeight;
        TimelineMapping map;
    };
    Geometry geometry() const;
    TimePoint now() const;
    double seconds(TimePoint t) const { return toSeconds(t - now()); }
    TimePoint startOf(const BatchRecord &b) const;
    QString describe(const BatchRecord &b) const;
    QString describeStep(const BatchRecord &b) const;
    void paintLegend(QPainter &p) const;
    int largestStepInView(const TimelineMapping &map, TimePoint t0) const;
    void paintStep(QPainter &p, const BatchRecord &b, const QRectF &slot) const;

    std::deque<BatchRecord> m_batches;        // in completion order, oldest first
    std::unordered_set<std::uint64_t> m_seen; // ids of the last kSeenKept batches
    std::deque<std::uint64_t> m_seenOrder;
    TimePoint m_snapshotAt{};
    QElapsedTimer m_sinceSnapshot;
    TimePoint m_frozenNow{};
    int m_lanes = 1;
    int m_batchLimit = 16;
    int m_tokenBudget = 512; // max_num_batched_tokens (the legend and tooltips name it)
    int m_stepScale = 1;     // tokens of a full-height step: the largest in view, set by paintEvent
    bool m_stepMode = false;
    double m_spanS = 1;
    bool m_paused = false;
    QTimer m_tick;
};

} // namespace bp::ui
