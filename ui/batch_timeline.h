// The latest batches as a scrolling strip, one lane per model instance:
// each batch is a bar from its start to the end of its compute, as tall as
// its share of the batch limit and coloured by why it left the queue, with
// size × padded length, bucket and compute time written in when it fits
// (and in a tooltip always). "Now" is at the right edge; the wheel zooms.
// Painting runs on a 40 ms timer only while the widget is visible.
#pragma once

#include "timeline_mapping.h"

#include "app/engine_bridge.h"

#include <QElapsedTimer>
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

    static constexpr std::size_t kMaxBatches = 20000;
    static constexpr double kMinSpanS = 0.01, kMaxSpanS = 60;
    static constexpr std::size_t kSeenKept = 4096; // > the 256 batches one snapshot carries
    static constexpr double kOrderSlackS = 1;       // how far completion order may stray from start order

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

    std::deque<BatchRecord> m_batches; // in completion order, oldest first
    std::unordered_set<std::uint64_t> m_seen; // ids of the last kSeenKept batches
    std::deque<std::uint64_t> m_seenOrder;
    TimePoint m_snapshotAt{};
    QElapsedTimer m_sinceSnapshot;
    TimePoint m_frozenNow{};
    int m_lanes = 1;
    int m_batchLimit = 16;
    double m_spanS = 1;
    bool m_paused = false;
    QTimer m_tick;
};

} // namespace bp::ui
