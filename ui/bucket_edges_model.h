// The bucket edges being edited: a sorted list of distinct positive token
// lengths. Edits that would break that (zero, negative, a duplicate, not a
// number) are refused with a reason (editRejected); an accepted edit moves
// the row to keep the list sorted. The value range and the number of edges
// are the engine's to check (validate()), like every other knob.
#pragma once

#include <QAbstractListModel>

#include <vector>

namespace bp::ui {

class BucketEdgesModel : public QAbstractListModel {
    Q_OBJECT
public:
    explicit BucketEdgesModel(QObject *parent = nullptr);

    // Sorts and removes duplicates (values <= 0 are dropped).
    void setEdges(std::vector<int> edges);
    const std::vector<int> &edges() const { return m_edges; }

    // Adds an edge above the last (twice it, or 64 for an empty list) and
    // returns its row.
    int addEdge();
    // Adds `value` at its sorted place; false (and editRejected) when invalid.
    bool addEdge(int value);

    int rowCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    bool setData(const QModelIndex &index, const QVariant &value, int role = Qt::EditRole) override;
    Qt::ItemFlags flags(const QModelIndex &index) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    bool removeRows(int row, int count, const QModelIndex &parent = {}) override;

signals:
    void edgesEdited(); // by the user (setData, addEdge, removeRows), not by setEdges
    void editRejected(const QString &reason);

private:
    // The reason `value` cannot replace row `row` (-1: a new edge), or empty.
    QString refusal(qlonglong value, int row) const;
    int insertSorted(int value); // returns its row

    std::vector<int> m_edges;
};

} // namespace bp::ui
