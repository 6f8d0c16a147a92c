// The console's main window. (Minimal for now: the engine's live figures and
// a synthetic load switch; the full console grows from here.)
#pragma once

#include "app/engine_bridge.h"

#include <QMainWindow>

#include <memory>

class QLabel;
class QSpinBox;
class QPushButton;

namespace bp {
class LoadGenerator;
}

namespace bp::ui {

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(app::EngineBridge &bridge, QWidget *parent = nullptr);
    ~MainWindow() override;

private:
    void showSnapshot(const app::SnapshotPtr &snapshot);
    void toggleLoad();

    app::EngineBridge &m_bridge;
    QLabel *m_figures = nullptr;
    QSpinBox *m_rate = nullptr;
    QPushButton *m_loadButton = nullptr;
    std::unique_ptr<LoadGenerator> m_load;
};

} // namespace bp::ui
