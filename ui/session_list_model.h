// Recorded sessions in the store (live and replays), newest first.
// Qt::UserRole on any column is the session id; the live session of this
// console is shown in bold.
#pragma once

#include "engine/store/store_types.h"

#include <QAbstractTableModel>

#include <vector>

namespace bp::ui {

class SessionListModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Id, Kind, Started, Duration, Requests, Batches, Model, Dropped, Notes, ColumnCount };
    static constexpr int IdRole = Qt::UserRole;

    explicit SessionListModel(QObject *parent = nullptr);

    void setLiveSessionId(std::int64_t id) { m_live = id; }
    // Same ids in the same order: updated in place; otherwise a reset.
    void setSessions(std::vector<SessionInfo> sessions);
    const std::vector<SessionInfo> &sessions() const { return m_sessions; }
    int rowOf(std::int64_t id) const;

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // "replay of session 3 (×2.0)", "live", "live (this console)"
    QString describeKind(const SessionInfo &s) const;

private:
    std::vector<SessionInfo> m_sessions;
    std::int64_t m_live = 0;
};

} // namespace bp::ui
