#include "advisor_verify_panel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include <cmath>

namespace bp::ui {

namespace {

QString figure(double v, double scale, int decimals)
{
    return std::isfinite(v) ? QString::number(v * scale, 'f', decimals) : QStringLiteral("∞");
}

QString change(double predicted, double measured)
{
    if (!std::isfinite(predicted) || !std::isfinite(measured) || measured == 0)
        return QStringLiteral("–");
    const double percent = std::round(100 * (predicted / measured - 1));
    return QStringLiteral("%1%2%").arg(percent > 0 ? "+" : "").arg(percent, 0, 'f', 0);
}

} // namespace

QString aboutDuration(double seconds)
{
    const long s = std::lround(std::ceil(std::max(1.0, seconds)));
    if (s < 60)
        return QObject::tr("about %1 s").arg(s);
    if (s < 3600)
        return QObject::tr("about %1 min %2 s").arg(s / 60).arg(s % 60);
    return QObject::tr("about %1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
}

AdvisorVerifyPanel::AdvisorVerifyPanel(AdvisorSearch *search, QWidget *parent)
    : QWidget(parent), m_search(search)
{
    m_window = new QComboBox(this);
    m_window->setEditable(true);
    m_window->addItems({QStringLiteral("busiest:3m"), QStringLiteral("busiest:1m"),
                        QStringLiteral("first:1m"), QStringLiteral("all")});
    m_window->setToolTip(
        tr("The arrivals the real-clock check replays: busiest:LEN (the LEN-long stretch with "
           "the most arrivals), first:LEN or all; LEN in ms, s, m, h"));
    m_verify = new QPushButton(tr("&Verify for real"), this);
    m_verify->setToolTip(
        tr("Replay the window for real on the served model under the selected candidate (the "
           "recommendation when none is selected) and compare with the prediction"));
    m_expected = new QLabel(this);
    m_expected->setWordWrap(true);
    m_result = new QLabel(this);
    m_result->setWordWrap(true);
    m_result->setTextFormat(Qt::RichText);
    m_result->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto *row = new QHBoxLayout;
    row->setContentsMargins(0, 0, 0, 0);
    auto *label = new QLabel(tr("Verif&y window"), this);
    label->setBuddy(m_window);
    row->addWidget(label);
    row->addWidget(m_window, 1);
    row->addWidget(m_verify);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(row);
    layout->addWidget(m_expected);
    layout->addWidget(m_result);

    connect(m_verify, &QPushButton::clicked, this, &AdvisorVerifyPanel::verifyRequested);
    connect(m_window, &QComboBox::currentTextChanged, this, &AdvisorVerifyPanel::showExpected);
    connect(m_search, &AdvisorSearch::verified, this, [this](const AdvisorVerification &v) {
        showVerification(v);
        emit verificationFinished();
    });
    setResult(nullptr);
}

Result<VerifyWindowSpec> AdvisorVerifyPanel::window() const
{
    return parseVerifyWindow(m_window->currentText().trimmed().toStdString());
}

void AdvisorVerifyPanel::setResult(const AdvisorResult *result)
{
    m_source.reset();
    if (result && result->run && result->tune.recommended)
        m_source = *result;
    m_verification.reset();
    m_result->clear();
    if (m_source)
        m_window->setEditText(QString::fromStdString(formatVerifyWindow(m_source->request.verifyWindow)));
    m_verify->setEnabled(m_source.has_value());
    showExpected();
}

void AdvisorVerifyPanel::showExpected()
{
    if (!m_source) {
        m_expected->setText(tr("Run a search first: the check replays its pick for real."));
        return;
    }
    auto spec = window();
    if (!spec) {
        m_expected->setText(QString::fromStdString(spec.status().message()));
        return;
    }
    const TuneSource &source = m_source->run->source;
    if (m_source->verifyPlan && m_source->verifyPlan->spec == *spec) {
        const VerifyPlan &p = *m_source->verifyPlan;
        m_expected->setText(tr("Replays %1: %2 of %3 requests; expected %4 of real time.")
                                .arg(QString::fromStdString(describe(p.spec)))
                                .arg(p.window.size())
                                .arg(p.sourceRequests)
                                .arg(aboutDuration(p.expectedSeconds)));
        return;
    }
    const std::vector<Duration> offsets = source.offsets();
    const VerifyWindow w = selectVerifyWindow(offsets, *spec);
    m_expected->setText(tr("Replays %1: %2 of %3 requests; %4 of real time plus the last ones' latency.")
                            .arg(QString::fromStdString(describe(*spec)))
                            .arg(w.size())
                            .arg(offsets.size())
                            .arg(aboutDuration(toSeconds(w.span()))));
}

void AdvisorVerifyPanel::verify(std::size_t index, std::shared_ptr<Backend> backend)
{
    auto spec = window();
    if (!m_source || !spec)
        return;
    m_verification.reset();
    m_result->clear();
    m_search->verify(*m_source, index, *spec, std::move(backend));
}

void AdvisorVerifyPanel::showVerification(const AdvisorVerification &av)
{
    m_verification = av;
    const Verification &v = av.verification;
    const TuneFigures &p = v.predicted, &m = v.measured;
    QString h = tr("<b>Verified %1</b> for real over %2 (session %3, %4 s)")
                    .arg(QString::fromStdString(v.plan.label).toHtmlEscaped(),
                         QString::fromStdString(describe(v.plan.spec)).toHtmlEscaped())
                    .arg(v.replay.sessionId)
                    .arg(v.replay.wallSeconds, 0, 'f', 1);
    if (v.partial)
        h += tr("<br><span style='color:#b00020'>Partial: cancelled after %1 of %2 requests; both columns "
                "cover the %3 sent before it.</span>")
                 .arg(v.replay.submitted)
                 .arg(v.plan.window.size())
                 .arg(v.compared);
    h += QStringLiteral(
        "<table cellspacing='6'><tr><th></th><th>predicted</th><th>measured</th><th>error</th></tr>");
    auto row = [&](const QString &name, double a, double b, double scale, int decimals) {
        h += QStringLiteral("<tr><td>%1</td><td align='right'>%2</td><td align='right'>%3</td><td "
                            "align='right'>%4</td></tr>")
                 .arg(name, figure(a, scale, decimals), figure(b, scale, decimals), change(a, b));
    };
    row(tr("throughput/s"), p.throughputPerS, m.throughputPerS, 1, 1);
    row(tr("p50 ms"), p.p50S, m.p50S, 1e3, 2);
    row(tr("p99 ms"), p.p99S, m.p99S, 1e3, 2);
    if (p.ttftP99S > 0 || m.ttftP99S > 0) {
        row(tr("TTFT p99 ms"), p.ttftP99S, m.ttftP99S, 1e3, 2);
        row(tr("TPOT p99 ms"), p.tpotP99S, m.tpotP99S, 1e3, 2);
    }
    row(tr("mean batch"), p.meanBatch, m.meanBatch, 1, 1);
    h += QStringLiteral("<tr><td>%1</td><td align='right'>%2</td><td align='right'>%3</td></tr></table>")
             .arg(tr("SLO met"), p.sloMet ? tr("yes") : tr("no"), m.sloMet ? tr("yes") : tr("no"));
    m_result->setText(h);
}

} // namespace bp::ui
