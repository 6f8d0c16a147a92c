#include "bucket_edges_editor.h"

#include "bucket_edges_model.h"

#include <QHBoxLayout>
#include <QListView>
#include <QToolButton>
#include <QVBoxLayout>

namespace bp::ui {

BucketEdgesEditor::BucketEdgesEditor(QWidget *parent) : QWidget(parent)
{
    m_model = new BucketEdgesModel(this);
    m_view = new QListView(this);
    m_view->setModel(m_model);
    m_view->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                            QAbstractItemView::AnyKeyPressed);
    m_view->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_view->setUniformItemSizes(true);
    m_view->setToolTip(tr("Upper edges (inclusive) of the length buckets; longer requests go to an overflow "
                          "bucket. Double-click to edit."));
    const int rowHeight = m_view->fontMetrics().height() + 4;
    m_view->setMinimumHeight(rowHeight * 3);
    m_view->setMaximumHeight(rowHeight * 6 + 4);

    m_add = new QToolButton(this);
    m_add->setText(tr("Add"));
    m_add->setToolTip(tr("Add an edge above the last one"));
    m_remove = new QToolButton(this);
    m_remove->setText(tr("Remove"));
    m_remove->setToolTip(tr("Remove the selected edges"));

    auto *buttons = new QVBoxLayout;
    buttons->addWidget(m_add);
    buttons->addWidget(m_remove);
    buttons->addStretch();
    auto *layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_view, 1);
    layout->addLayout(buttons);

    connect(m_add, &QToolButton::clicked, this, &BucketEdgesEditor::addEdge);
    connect(m_remove, &QToolButton::clicked, this, &BucketEdgesEditor::removeSelected);
    connect(m_view->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &BucketEdgesEditor::updateButtons);
    connect(m_model, &QAbstractItemModel::modelReset, this, &BucketEdgesEditor::updateButtons);
    updateButtons();
}

void BucketEdgesEditor::addEdge()
{
    const int row = m_model->addEdge();
    const QModelIndex index = m_model->index(row);
    m_view->setCurrentIndex(index);
    m_view->edit(index);
}

void BucketEdgesEditor::removeSelected()
{
    QList<int> rows;
    for (const QModelIndex &i : m_view->selectionModel()->selectedIndexes())
        rows << i.row();
    std::sort(rows.begin(), rows.end(), std::greater<>());
    for (int row : rows)
        m_model->removeRows(row, 1);
}

void BucketEdgesEditor::updateButtons()
{
    m_remove->setEnabled(m_view->selectionModel()->hasSelection());
}

} // namespace bp::ui
