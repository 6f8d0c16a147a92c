#include "main_window.h"

#include "engine/workload.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QStatusBar>
#include <QVBoxLayout>

namespace bp::ui {

MainWindow::MainWindow(app::EngineBridge &bridge, QWidget *parent) : QMainWindow(parent), m_bridge(bridge)
{
    setWindowTitle(tr("BatchPilot"));
    auto *central = new QWidget(this);
    auto *layout = new QVBoxLayout(central);
    m_figures = new QLabel(tr("waiting for the first snapshot…"), central);
    m_figures->setTextFormat(Qt::RichText);
    m_figures->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    layout->addWidget(m_figures, 1);

    auto *row = new QHBoxLayout();
    row->addWidget(new QLabel(tr("Synthetic load (Poisson, requests/s):"), central));
    m_rate = new QSpinBox(central);
    m_rate->setRange(1, 1'000'000);
    m_rate->setValue(200);
    row->addWidget(m_rate);
    m_loadButton = new QPushButton(tr("Start load"), central);
    row->addWidget(m_loadButton);
    row->addStretch();
    layout->addLayout(row);
    setCentralWidget(central);
    statusBar()->showMessage(QString::fromStdString(bridge.engine().model().name));

    connect(m_loadButton, &QPushButton::clicked, this, &MainWindow::toggleLoad);
    connect(&m_bridge, &app::EngineBridge::snapshotReady, this, &MainWindow::showSnapshot);
    resize(640, 360);
}

MainWindow::~MainWindow() = default;

void MainWindow::toggleLoad()
{
    if (m_load) {
        m_load.reset();
        m_loadButton->setText(tr("Start load"));
        return;
    }
    WorkloadSpec spec;
    spec.rate = m_rate->value();
    spec.lengths = LengthKind::Uniform;
    spec.minLength = 8;
    spec.maxLength = 64;
    spec.vocabSize = m_bridge.engine().model().vocabSize;
    spec.lengthCap = m_bridge.engine().model().maxSequenceLength;
    m_load = std::make_unique<LoadGenerator>(m_bridge.engine(), spec);
    m_load->start();
    m_loadButton->setText(tr("Stop load"));
}

void MainWindow::showSnapshot(const app::SnapshotPtr &s)
{
    m_figures->setText(
        tr("<h3>%1 on %2</h3>"
           "<table cellspacing=6>"
           "<tr><td>policy</td><td><b>%3</b> (config v%4)</td></tr>"
           "<tr><td>throughput</td><td><b>%5</b> req/s</td></tr>"
           "<tr><td>latency p50 / p90 / p99</td><td><b>%6 / %7 / %8</b> µs</td></tr>"
           "<tr><td>mean batch size</td><td>%9</td></tr>"
           "<tr><td>padding efficiency</td><td>%10</td></tr>"
           "<tr><td>queue depth</td><td>%11</td></tr>"
           "<tr><td>completed / submitted</td><td>%12 / %13</td></tr>"
           "</table>")
            .arg(QString::fromStdString(s->modelName), QString::fromStdString(s->device),
                 QString::fromUtf8(policyName(s->config.policy).data()))
            .arg(s->configVersion)
            .arg(s->requestsPerS, 0, 'f', 1)
            .arg(s->total.p50Us, 0, 'f', 0)
            .arg(s->total.p90Us, 0, 'f', 0)
            .arg(s->total.p99Us, 0, 'f', 0)
            .arg(s->meanBatchSize, 0, 'f', 2)
            .arg(s->paddingEfficiency, 0, 'f', 3)
            .arg(s->queueDepth)
            .arg(s->completed)
            .arg(s->submitted));
}

} // namespace bp::ui
