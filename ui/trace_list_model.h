// Imported traces in the store, one row each (newest first, as the store
// lists them). Qt::UserRole on any column is the trace id.
#pragma once

#include "engine/store/store_types.h"

#include <QAbstractTableModel>

#include <vector>

namespace bp::ui {

class TraceListModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Id, Name, Rows, Duration, Skipped, Format, Imported, Source, ColumnCount };
    static constexpr int IdRole = Qt::UserRole;

    explicit TraceListModel(QObject *parent = nullptr);

    // Same ids in the same order: the rows are updated in place (views keep
    // their selection); otherwise the model is reset.
    void setTraces(std::vector<TraceInfo> traces);
    const std::vector<TraceInfo> &traces() const { return m_traces; }
    // Row of `id`, or -1.
    int rowOf(std::int64_t id) const;

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<TraceInfo> m_traces;
};

// "2024-05-01 14:03:22" in local time, from microseconds since the epoch.
QString formatWallClock(std::int64_t micros);

} // namespace bp::ui
