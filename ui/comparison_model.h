// Headline figures of two sessions side by side with the relative change,
// from the store's comparison (engine/store/session_summary.h:
// comparisonRows), so the console, `batchpilot replay` and reports agree on
// labels and rounding. Changes are coloured by whether they are an
// improvement (more throughput, less latency, fewer rejects).
#pragma once

#include "engine/store/session_summary.h"

#include <QAbstractTableModel>

#include <vector>

namespace bp::ui {

class ComparisonModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Metric, A, B, Change, ColumnCount };

    explicit ComparisonModel(QObject *parent = nullptr);

    void setSessions(const SessionSummary &a, const SessionSummary &b);
    void clear();
    std::int64_t sessionA() const { return m_a; }
    std::int64_t sessionB() const { return m_b; }
    const std::vector<ComparisonRow> &rows() const { return m_rows; }

    // +1: higher is better, -1: lower is better, 0: neither (counts, text).
    static int direction(const std::string &key);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<ComparisonRow> m_rows;
    std::int64_t m_a = 0, m_b = 0;
};

} // namespace bp::ui
