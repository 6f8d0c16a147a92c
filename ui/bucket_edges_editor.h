// Edits the bucketed policy's length edges: a short sorted list (double-
// click or F2 to edit a value) with add and remove buttons.
#pragma once

#include <QWidget>

class QListView;
class QToolButton;

namespace bp::ui {

class BucketEdgesModel;

class BucketEdgesEditor : public QWidget {
    Q_OBJECT
public:
    explicit BucketEdgesEditor(QWidget *parent = nullptr);

    BucketEdgesModel *model() const { return m_model; }
    QListView *view() const { return m_view; }
    QToolButton *addButton() const { return m_add; }
    QToolButton *removeButton() const { return m_remove; }

    void addEdge();
    void removeSelected();

private:
    void updateButtons();

    BucketEdgesModel *m_model = nullptr;
    QListView *m_view = nullptr;
    QToolButton *m_add = nullptr;
    QToolButton *m_remove = nullptr;
};

} // namespace bp::ui
