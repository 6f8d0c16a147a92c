#include "bucket_edges_model.h"

#include <algorithm>
#include <limits>

namespace bp::ui {

BucketEdgesModel::BucketEdgesModel(QObject *parent) : QAbstractListModel(parent) {}

void BucketEdgesModel::setEdges(std::vector<int> edges)
{
    std::erase_if(edges, [](int e) { return e <= 0; });
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    if (edges == m_edges)
        return;
    beginResetModel();
    m_edges = std::move(edges);
    endResetModel();
}

int BucketEdgesModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_edges.size());
}

QVariant BucketEdgesModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const int edge = m_edges[std::size_t(index.row())];
    switch (role) {
    case Qt::DisplayRole: return tr("≤ %1 tokens").arg(edge);
    case Qt::EditRole: return edge;
    case Qt::ToolTipRole: {
        const int lower = index.row() == 0 ? 1 : m_edges[std::size_t(index.row()) - 1] + 1;
        return tr("bucket %1: %2–%3 tokens (double-click to edit)").arg(index.row()).arg(lower).arg(edge);
    }
    case Qt::TextAlignmentRole: return int(Qt::AlignRight | Qt::AlignVCenter);
    default: return {};
    }
}

QString BucketEdgesModel::refusal(qlonglong value, int row) const
{
    if (value <= 0)
        return tr("a bucket edge must be a positive token length, got %1").arg(value);
    for (std::size_t i = 0; i < m_edges.size(); ++i)
        if (int(i) != row && m_edges[i] == value)
            return tr("%1 is already an edge").arg(value);
    return {};
}

bool BucketEdgesModel::setData(const QModelIndex &index, const QVariant &value, int role)
{
    if (role != Qt::EditRole ||
        !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return false;
    bool ok = false;
    const qlonglong v = value.toString().trimmed().toLongLong(&ok);
    if (!ok) {
        emit editRejected(tr("'%1' is not a token length").arg(value.toString()));
        return false;
    }
    if (const QString why = refusal(v, index.row()); !why.isEmpty()) {
        emit editRejected(why);
        return false;
    }
    const int edge = int(std::min<qlonglong>(v, std::numeric_limits<int>::max()));
    const int row = index.row();
    if (m_edges[std::size_t(row)] == edge)
        return true;
    // Where the edited value belongs among the others.
    std::vector<int> others = m_edges;
    others.erase(others.begin() + row);
    const int target = int(std::lower_bound(others.begin(), others.end(), edge) - others.begin());
    if (target != row) {
        // beginMoveRows counts the destination in the list before the move.
        const int destination = target > row ? target + 1 : target;
        beginMoveRows({}, row, row, {}, destination);
        m_edges = others;
        m_edges.insert(m_edges.begin() + target, edge);
        endMoveRows();
    } else {
        m_edges[std::size_t(row)] = edge;
    }
    const QModelIndex moved = this->index(target);
    emit dataChanged(moved, moved);
    emit edgesEdited();
    return true;
}

Qt::ItemFlags BucketEdgesModel::flags(const QModelIndex &index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    return Qt::ItemIsSelectable | Qt::ItemIsEnabled | Qt::ItemIsEditable | Qt::ItemNeverHasChildren;
}

QVariant BucketEdgesModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (role == Qt::DisplayRole && orientation == Qt::Horizontal && section == 0)
        return tr("upper edge");
    return {};
}

int BucketEdgesModel::insertSorted(int value)
{
    const int row = int(std::lower_bound(m_edges.begin(), m_edges.end(), value) - m_edges.begin());
    beginInsertRows({}, row, row);
    m_edges.insert(m_edges.begin() + row, value);
    endInsertRows();
    emit edgesEdited();
    return row;
}

int BucketEdgesModel::addEdge()
{
    int value = m_edges.empty() ? 64 : m_edges.back() * 2;
    if (m_edges.empty() == false && m_edges.back() > std::numeric_limits<int>::max() / 2)
        value = m_edges.back() + 1;
    return insertSorted(value);
}

bool BucketEdgesModel::addEdge(int value)
{
    if (const QString why = refusal(value, -1); !why.isEmpty()) {
        emit editRejected(why);
        return false;
    }
    insertSorted(value);
    return true;
}

bool BucketEdgesModel::removeRows(int row, int count, const QModelIndex &parent)
{
    if (parent.isValid() || row < 0 || count <= 0 || row + count > rowCount())
        return false;
    beginRemoveRows({}, row, row + count - 1);
    m_edges.erase(m_edges.begin() + row, m_edges.begin() + row + count);
    endRemoveRows();
    emit edgesEdited();
    return true;
}

} // namespace bp::ui
