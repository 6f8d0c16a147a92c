#include "session_list_model.h"

#include "trace_list_model.h"

#include <QFont>

namespace bp::ui {

SessionListModel::SessionListModel(QObject *parent) : QAbstractTableModel(parent) {}

void SessionListModel::setSessions(std::vector<SessionInfo> sessions)
{
    const bool sameRows = sessions.size() == m_sessions.size() &&
                          std::equal(sessions.begin(), sessions.end(), m_sessions.begin(),
                                     [](const SessionInfo &a, const SessionInfo &b) { return a.id == b.id; });
    if (!sameRows) {
        beginResetModel();
        m_sessions = std::move(sessions);
        endResetModel();
        return;
    }
    m_sessions = std::move(sessions);
    if (!m_sessions.empty())
        emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

int SessionListModel::rowOf(std::int64_t id) const
{
    for (std::size_t i = 0; i < m_sessions.size(); ++i)
        if (m_sessions[i].id == id)
            return int(i);
    return -1;
}

int SessionListModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_sessions.size());
}

int SessionListModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QString SessionListModel::describeKind(const SessionInfo &s) const
{
    QString kind = QString::fromStdString(s.kind);
    if (s.sourceSessionId)
        kind = tr("%1 of session %2").arg(kind).arg(*s.sourceSessionId);
    else if (s.sourceTraceId)
        kind = tr("%1 of trace %2").arg(kind).arg(*s.sourceTraceId);
    if (s.replay.is_object() && s.replay.contains("speed") && s.replay["speed"].is_number()) {
        const double speed = s.replay["speed"].get<double>();
        if (speed != 1)
            kind += tr(" (×%1)").arg(speed);
    }
    if (s.id == m_live)
        kind += tr(" — this console");
    return kind;
}

QVariant SessionListModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const SessionInfo &s = m_sessions[std::size_t(index.row())];
    if (role == IdRole)
        return qlonglong(s.id);
    if (role == Qt::FontRole && s.id == m_live) {
        QFont f;
        f.setBold(true);
        return f;
    }
    if (role == Qt::TextAlignmentRole) {
        switch (index.column()) {
        case Id:
        case Duration:
        case Requests:
        case Batches:
        case Dropped: return int(Qt::AlignRight | Qt::AlignVCenter);
        default: return {};
        }
    }
    if (role == Qt::ToolTipRole) {
        QString tip = tr("session %1: %2 on %3")
                          .arg(s.id)
                          .arg(QString::fromStdString(s.model), QString::fromStdString(s.device));
        if (!s.loggingError.empty())
            tip += tr("\nlogging stopped: %1").arg(QString::fromStdString(s.loggingError));
        if (!s.endedAtUs)
            tip += tr("\nstill recording (or the process ended without closing it)");
        return tip;
    }
    if (role != Qt::DisplayRole && role != Qt::EditRole)
        return {};
    switch (Column(index.column())) {
    case Id: return qlonglong(s.id);
    case Kind: return describeKind(s);
    case Started: return formatWallClock(s.startedAtUs);
    case Duration:
        return s.endedAtUs ? QString::number(double(*s.endedAtUs - s.startedAtUs) / 1e6, 'f', 1)
                           : tr("running");
    case Requests: return qulonglong(s.requestCount);
    case Batches: return qulonglong(s.batchCount);
    case Model:
        return QStringLiteral("%1 (%2)").arg(QString::fromStdString(s.model),
                                             QString::fromStdString(s.device));
    case Dropped: return qulonglong(s.droppedRows);
    case Notes: return QString::fromStdString(s.notes);
    case ColumnCount: break;
    }
    return {};
}

QVariant SessionListModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= ColumnCount)
        return {};
    switch (Column(section)) {
    case Id: return tr("id");
    case Kind: return tr("kind");
    case Started: return tr("started");
    case Duration: return tr("length (s)");
    case Requests: return tr("requests");
    case Batches: return tr("batches");
    case Model: return tr("model");
    case Dropped: return tr("dropped rows");
    case Notes: return tr("notes");
    case ColumnCount: break;
    }
    return {};
}

} // namespace bp::ui
