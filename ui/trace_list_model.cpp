#include "trace_list_model.h"

#include <QDateTime>
#include <QFileInfo>

namespace bp::ui {

QString formatWallClock(std::int64_t micros)
{
    return QDateTime::fromMSecsSinceEpoch(micros / 1000).toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
}

TraceListModel::TraceListModel(QObject *parent) : QAbstractTableModel(parent) {}

void TraceListModel::setTraces(std::vector<TraceInfo> traces)
{
    const bool sameRows = traces.size() == m_traces.size() &&
                          std::equal(traces.begin(), traces.end(), m_traces.begin(),
                                     [](const TraceInfo &a, const TraceInfo &b) { return a.id == b.id; });
    if (!sameRows) {
        beginResetModel();
        m_traces = std::move(traces);
        endResetModel();
        return;
    }
    m_traces = std::move(traces);
    if (!m_traces.empty())
        emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

int TraceListModel::rowOf(std::int64_t id) const
{
    for (std::size_t i = 0; i < m_traces.size(); ++i)
        if (m_traces[i].id == id)
            return int(i);
    return -1;
}

int TraceListModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_traces.size());
}

int TraceListModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant TraceListModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const TraceInfo &t = m_traces[std::size_t(index.row())];
    if (role == IdRole)
        return qlonglong(t.id);
    if (role == Qt::TextAlignmentRole)
        return index.column() == Name || index.column() == Source || index.column() == Format
                   ? QVariant()
                   : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
    if (role == Qt::ToolTipRole)
        return tr("%1: %2 requests over %3 s, imported from %4")
            .arg(QString::fromStdString(t.name))
            .arg(t.rows)
            .arg(t.durationS, 0, 'f', 1)
            .arg(t.sourcePath.empty() ? tr("memory") : QString::fromStdString(t.sourcePath));
    if (role != Qt::DisplayRole && role != Qt::EditRole)
        return {};
    switch (Column(index.column())) {
    case Id: return qlonglong(t.id);
    case Name: return QString::fromStdString(t.name);
    case Rows: return qulonglong(t.rows);
    case Duration: return QString::number(t.durationS, 'f', 1);
    case Skipped: return qulonglong(t.skippedRows);
    case Format: return QString::fromUtf8(traceFormatName(t.format).data());
    case Imported: return formatWallClock(t.importedAtUs);
    case Source: return QFileInfo(QString::fromStdString(t.sourcePath)).fileName();
    case ColumnCount: break;
    }
    return {};
}

QVariant TraceListModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= ColumnCount)
        return {};
    switch (Column(section)) {
    case Id: return tr("id");
    case Name: return tr("name");
    case Rows: return tr("requests");
    case Duration: return tr("span (s)");
    case Skipped: return tr("bad rows");
    case Format: return tr("format");
    case Imported: return tr("imported");
    case Source: return tr("file");
    case ColumnCount: break;
    }
    return {};
}

} // namespace bp::ui
