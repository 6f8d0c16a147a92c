#include "traffic_panel.h"

#include "remote_target_form.h"
#include "trace_list_model.h"

#include "engine/store/trace_store.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QThreadPool>
#include <QVBoxLayout>

namespace bp::ui {

TrafficPanel::TrafficPanel(app::EngineBridge &bridge, std::shared_ptr<TraceStore> store,
                           TraceListModel *traces, QWidget *parent)
    : QWidget(parent), m_bridge(bridge), m_store(std::move(store))
{
    const ModelInfo &model = m_bridge.engine().model();
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    m_form = new QFormLayout;
    layout->addLayout(m_form);
    const int cap = std::max(1, model.maxSequenceLength);
    addTargetRows();
    addArrivalRows();
    addLengthRows(cap, traces);
    addMaxNewRow(model);
    addConversationRows(cap);
    addStatusLines(layout);
    connectTimers();
    connectForm();
    updateVisibility();
    updateCounters();
    updateLoad();
    measureCapacity();
}

void TrafficPanel::addTargetRows()
{
    m_targetBox = new QComboBox(this);
    m_targetBox->addItem(tr("embedded engine"));
    m_targetBox->addItem(tr("remote server"));
    m_targetBox->setToolTip(tr("Send the traffic to this console's engine, or to another server (Triton, "
                               "vLLM, TGI, SGLang, another BatchPilot) over HTTP, recorded as a remote "
                               "session with its /metrics scraped"));
    m_form->addRow(tr("Tar&get"), m_targetBox);
    m_remoteForm = new RemoteTargetForm(this);
    m_form->addRow(m_remoteForm);
}

void TrafficPanel::addArrivalRows()
{
    m_rate = new QDoubleSpinBox(this);
    m_rate->setRange(0.1, 1'000'000);
    m_rate->setDecimals(1);
    // Until the capacity is measured (a second or two): a rate every built-in
    // model serves on a CPU.
    m_rate->setValue(5);
    m_rate->setSuffix(tr(" req/s"));
    m_rate->setToolTip(tr("Mean arrival rate (open loop: arrivals do not wait for answers)"));
    m_form->addRow(tr("&Rate"), m_rate);

    m_arrivals = new QComboBox(this);
    m_arrivals->addItem(tr("Poisson"), int(ArrivalKind::Poisson));
    m_arrivals->addItem(tr("constant"), int(ArrivalKind::Constant));
    m_arrivals->addItem(tr("bursts"), int(ArrivalKind::Bursts));
    m_form->addRow(tr("&Arrivals"), m_arrivals);
    m_burst = new QSpinBox(this);
    m_burst->setRange(1, 100'000);
    m_burst->setValue(16);
    m_burst->setToolTip(tr("Requests arriving together in each burst"));
    m_form->addRow(tr("Burst size"), m_burst);
}

void TrafficPanel::addLengthRows(int cap, TraceListModel *traces)
{
    m_lengths = new QComboBox(this);
    m_lengths->addItem(tr("fixed"), int(LengthKind::Fixed));
    m_lengths->addItem(tr("uniform"), int(LengthKind::Uniform));
    m_lengths->addItem(tr("from a trace"), int(LengthKind::Trace));
    m_lengths->setCurrentIndex(1);
    m_form->addRow(tr("&Lengths"), m_lengths);
    auto length = [this, cap](int value) {
        auto *box = new QSpinBox(this);
        box->setRange(1, cap);
        box->setValue(std::min(value, cap));
        return box;
    };
    m_fixed = length(32);
    m_form->addRow(tr("Input tokens"), m_fixed);
    m_min = length(8);
    m_form->addRow(tr("Shortest"), m_min);
    m_max = length(128);
    m_form->addRow(tr("Longest"), m_max);
    m_trace = new QComboBox(this);
    if (traces) {
        m_trace->setModel(traces);
        m_trace->setModelColumn(TraceListModel::Name);
    }
    m_trace->setToolTip(tr("Imported trace whose input (and output) lengths are drawn in order"));
    m_form->addRow(tr("Trace"), m_trace);
    m_lengthScale = new QDoubleSpinBox(this);
    m_lengthScale->setRange(0.001, 100);
    m_lengthScale->setDecimals(3);
    m_lengthScale->setValue(1);
    m_lengthScale->setToolTip(tr("Multiplies the trace's token counts (0.125 = divide by 8)"));
    m_form->addRow(tr("Length scale"), m_lengthScale);
}

void TrafficPanel::addMaxNewRow(const ModelInfo &model)
{
    m_maxNew = new QSpinBox(this);
    m_maxNew->setRange(0, model.generative ? std::max(0, model.maxNewTokensLimit) : 0);
    m_maxNew->setValue(model.generative ? std::min(16, model.maxNewTokensLimit) : 0);
    m_maxNew->setEnabled(model.generative);
    m_maxNew->setToolTip(model.generative
                             ? tr("Tokens each request asks the model to generate")
                             : tr("%1 does not generate tokens").arg(QString::fromStdString(model.name)));
    m_form->addRow(tr("max_new_&tokens"), m_maxNew);
}

// Shared prefixes and conversations (engine/workload/traffic_pacer.h).
void TrafficPanel::addConversationRows(int cap)
{
    m_systemPrompt = new QSpinBox(this);
    m_systemPrompt->setRange(0, cap);
    m_systemPrompt->setSuffix(tr(" tokens"));
    m_systemPrompt->setToolTip(tr("A system prompt of this many tokens, the same ids in every prompt that "
                                  "has it: what a prefix cache reuses (0 = none)"));
    m_form->addRow(tr("S&ystem prompt"), m_systemPrompt);
    m_systemShare = new QDoubleSpinBox(this);
    m_systemShare->setRange(0, 100);
    m_systemShare->setDecimals(0);
    m_systemShare->setValue(100);
    m_systemShare->setSuffix(tr(" %"));
    m_systemShare->setToolTip(
        tr("The share of prompts (of conversations) that start with the system prompt"));
    m_form->addRow(tr("Shared by"), m_systemShare);
    m_conversations = new QSpinBox(this);
    m_conversations->setRange(0, 10'000'000);
    m_conversations->setSpecialValueText(tr("single requests"));
    m_conversations->setToolTip(tr("Arrivals start this many conversations; each later turn resends the "
                                   "conversation so far (0 = single requests)"));
    m_form->addRow(tr("&Conversations"), m_conversations);
    m_turns = new QSpinBox(this);
    m_turns->setRange(1, 10'000);
    m_turns->setToolTip(tr("Turns per conversation"));
    m_form->addRow(tr("Turns"), m_turns);
    m_think = new QDoubleSpinBox(this);
    m_think->setRange(0, 86'400);
    m_think->setDecimals(2);
    m_think->setSuffix(tr(" s"));
    m_think->setToolTip(tr("From an answer to the next turn (closed loop: a turn waits for its answer)"));
    m_form->addRow(tr("Think time"), m_think);
}

// Start, then the counters, the load against capacity and the last error.
void TrafficPanel::addStatusLines(QVBoxLayout *layout)
{
    m_start = new QPushButton(tr("Start traffic"), this);
    m_start->setCheckable(true);
    m_start->setToolTip(tr("Start or stop the synthetic load (Ctrl+T)"));
    layout->addWidget(m_start);
    m_counters = new QLabel(this);
    m_counters->setWordWrap(true);
    m_counters->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_counters);
    m_load = new QLabel(this);
    m_load->setWordWrap(true);
    m_load->setObjectName(QStringLiteral("loadLabel"));
    layout->addWidget(m_load);
    m_error = new QLabel(this);
    m_error->setWordWrap(true);
    m_error->setStyleSheet(QStringLiteral("color: #b00020;"));
    m_error->hide();
    layout->addWidget(m_error);
    layout->addStretch(1);
}

// The debounced restart after an edit, and the counters' refresh while running.
void TrafficPanel::connectTimers()
{
    m_restart.setSingleShot(true);
    m_restart.setInterval(300);
    connect(&m_restart, &QTimer::timeout, this, [this] {
        if (m_remoteLoad) {
            // The same remote session, the arrivals restarted with the new shape.
            WorkloadSpec spec = targetSpec(m_rows);
            ++m_seed;
            if (Status s = m_remoteLoad->restart(std::move(spec)); !s) {
                m_error->setText(QString::fromStdString(s.message()));
                m_error->show();
                return;
            }
            emit restarted();
            return;
        }
        if (running()) {
            stop();
            start();
            emit restarted();
        }
    });
    m_refresh.setInterval(250);
    connect(&m_refresh, &QTimer::timeout, this, &TrafficPanel::updateCounters);
}

void TrafficPanel::connectForm()
{
    connect(m_start, &QPushButton::clicked, this, [this](bool on) { on ? start() : stop(); });
    connect(m_arrivals, &QComboBox::currentIndexChanged, this, &TrafficPanel::edited);
    connect(m_targetBox, &QComboBox::currentIndexChanged, this, [this] {
        updateVisibility();
        updateLoad();
    });
    connect(m_lengths, &QComboBox::currentIndexChanged, this, &TrafficPanel::edited);
    connect(m_trace, &QComboBox::currentIndexChanged, this, &TrafficPanel::edited);
    for (QDoubleSpinBox *box : {m_rate, m_lengthScale, m_systemShare, m_think})
        connect(box, &QDoubleSpinBox::valueChanged, this, &TrafficPanel::edited);
    connect(m_rate, &QDoubleSpinBox::valueChanged, this, [this] {
        if (!m_settingRate)
            m_rateChosen = true;
        updateLoad();
    });
    connect(&m_bridge, &app::EngineBridge::snapshotReady, this, &TrafficPanel::observe);
    for (QSpinBox *box : {m_burst, m_fixed, m_min, m_max, m_maxNew, m_systemPrompt, m_conversations, m_turns})
        connect(box, &QSpinBox::valueChanged, this, &TrafficPanel::edited);
}

// The generator's destructor stops and joins its thread; a remote load's
// fails what is still on the wire and ends its session.
TrafficPanel::~TrafficPanel() = default;

bool TrafficPanel::remoteTarget() const
{
    return m_targetBox->currentIndex() == 1;
}

qint64 TrafficPanel::remoteSessionId() const
{
    return m_remoteLoad ? m_remoteLoad->sessionId() : 0;
}

WorkloadSpec TrafficPanel::targetSpec(std::shared_ptr<const std::vector<TraceRow>> rows) const
{
    WorkloadSpec spec = formSpec();
    spec.trace = std::move(rows);
    if (remoteTarget()) {
        // The remote model's facts, as the remote target takes them.
        const remote::RemoteOptions o = m_remoteForm->options();
        spec.vocabSize = o.vocabSize;
        spec.lengthCap = o.maxInputTokens;
        spec.outputFromTrace = o.generative;
        spec.outputCap = 0;
    }
    return spec;
}

WorkloadSpec TrafficPanel::formSpec() const
{
    const ModelInfo &model = m_bridge.engine().model();
    WorkloadSpec spec;
    spec.arrivals = ArrivalKind(m_arrivals->currentData().toInt());
    spec.rate = m_rate->value();
    spec.burstSize = m_burst->value();
    spec.lengths = LengthKind(m_lengths->currentData().toInt());
    spec.fixedLength = m_fixed->value();
    spec.minLength = std::min(m_min->value(), m_max->value());
    spec.maxLength = std::max(m_min->value(), m_max->value());
    spec.lengthScale = m_lengthScale->value();
    spec.maxNewTokens = m_maxNew->value();
    spec.outputFromTrace = model.generative;
    spec.lengthCap = model.maxSequenceLength;
    spec.outputCap = model.generative ? model.maxNewTokensLimit : 0;
    spec.vocabSize = model.vocabSize;
    spec.seed = m_seed;
    spec.systemPromptTokens = m_systemPrompt->value();
    spec.systemPromptShare = m_systemShare->value() / 100.0;
    spec.conversations = std::size_t(m_conversations->value());
    spec.turnsPerConversation = spec.conversations ? m_turns->value() : 1;
    spec.thinkTimeS = m_think->value();
    return spec;
}

LoadGenerator::Counters TrafficPanel::counters() const
{
    LoadGenerator::Counters c = m_before;
    auto add = [&c](const auto &now) {
        c.sent += now.sent;
        c.accepted += now.accepted;
        c.rejected += now.rejected;
        c.completed += now.completed;
        c.failed += now.failed;
        c.shed += now.shed;
    };
    if (m_generator)
        add(m_generator->counters());
    if (m_remoteLoad)
        add(m_remoteLoad->counters());
    return c;
}

} // namespace bp::ui
