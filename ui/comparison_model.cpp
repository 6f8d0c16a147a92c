#include "comparison_model.h"

#include <QBrush>
#include <QColor>

#include <cmath>

namespace bp::ui {

ComparisonModel::ComparisonModel(QObject *parent) : QAbstractTableModel(parent) {}

void ComparisonModel::setSessions(const SessionSummary &a, const SessionSummary &b)
{
    beginResetModel();
    m_rows = comparisonRows(a, b);
    m_a = a.sessionId;
    m_b = b.sessionId;
    endResetModel();
}

void ComparisonModel::clear()
{
    beginResetModel();
    m_rows.clear();
    m_a = m_b = 0;
    endResetModel();
}

int ComparisonModel::direction(const std::string &key)
{
    for (const char *better : {"throughput", "tokens_per_s", "padding_efficiency"})
        if (key.find(better) != std::string::npos)
            return +1;
    for (const char *worse : {"latency", "queue_wait", "rejected", "failed", "dropped"})
        if (key.find(worse) != std::string::npos)
            return -1;
    return 0;
}

int ComparisonModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int ComparisonModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ComparisonModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const ComparisonRow &r = m_rows[std::size_t(index.row())];
    if (role == Qt::TextAlignmentRole)
        return index.column() == Metric || !r.numeric ? QVariant()
                                                      : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
    if (role == Qt::ForegroundRole && index.column() == Change && r.numeric) {
        const int d = direction(r.key);
        if (d == 0 || std::abs(r.relativeChange) < 0.005)
            return {};
        return QBrush(r.relativeChange * d > 0 ? QColor(20, 130, 40) : QColor(190, 30, 30));
    }
    if (role == Qt::ToolTipRole && index.column() == Change && r.numeric)
        return tr("session %1 against session %2 (b/a − 1)").arg(m_b).arg(m_a);
    if (role == Qt::ToolTipRole && (index.column() == A || index.column() == B) && !r.numeric)
        return QString::fromStdString(index.column() == A ? r.a : r.b); // the full config text
    if (role != Qt::DisplayRole)
        return {};
    switch (Column(index.column())) {
    case Metric: return QString::fromStdString(r.label);
    case A: return QString::fromStdString(r.a);
    case B: return QString::fromStdString(r.b);
    case Change: return QString::fromStdString(r.change);
    case ColumnCount: break;
    }
    return {};
}

QVariant ComparisonModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= ColumnCount)
        return {};
    switch (Column(section)) {
    case Metric: return tr("figure");
    case A: return tr("session %1 (A)").arg(m_a);
    case B: return tr("session %1 (B)").arg(m_b);
    case Change: return tr("change");
    case ColumnCount: break;
    }
    return {};
}

} // namespace bp::ui
