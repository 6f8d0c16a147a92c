// Two recorded sessions side by side: their metric samples overlaid on
// shared charts (A solid, B dashed; time from each session's start) with
// their config changes marked, and the headline figures in a table
// (ComparisonModel). Loaded off the GUI thread; a newer comparison drops
// an older one still loading.
#pragma once

#include "job_tracker.h"

#include <QThreadPool>
#include <QWidget>

#include <memory>

class QLabel;
class QTableView;

namespace bp {
class TraceStore;
}

namespace bp::ui {

class ComparisonModel;
class TimeChartView;

class CompareView : public QWidget {
    Q_OBJECT
public:
    explicit CompareView(std::shared_ptr<TraceStore> store, QWidget *parent = nullptr);
    ~CompareView() override;

    void compare(std::int64_t a, std::int64_t b);
    ComparisonModel *model() const { return m_model; }
    QList<TimeChartView *> charts() const { return m_charts; }

signals:
    void compared(std::int64_t a, std::int64_t b);
    void failed(const QString &message);

private:
    std::shared_ptr<TraceStore> m_store;
    QThreadPool m_pool;
    JobTracker m_jobs{this, &m_pool};
    ComparisonModel *m_model = nullptr;
    QLabel *m_title = nullptr;
    QTableView *m_table = nullptr;
    QList<TimeChartView *> m_charts;
};

} // namespace bp::ui
