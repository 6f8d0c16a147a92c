#include "remote_target_form.h"

#include <QComboBox>
#include <QFormLayout>
#include <QLineEdit>
#include <QSettings>
#include <QSpinBox>

#include <algorithm>

namespace bp::ui {

RemoteTargetForm::RemoteTargetForm(QWidget *parent) : QWidget(parent)
{
    auto *form = new QFormLayout(this);
    form->setContentsMargins(0, 0, 0, 0);
    m_url = new QLineEdit(this);
    m_url->setObjectName(QStringLiteral("remoteUrl"));
    m_url->setPlaceholderText(QStringLiteral("http://host:8000"));
    m_url->setToolTip(tr("The server's base URL; routes are appended to its path"));
    m_protocol = new QComboBox(this);
    m_protocol->addItem(tr("OIP / KServe v2 infer"), QStringLiteral("oip"));
    m_protocol->addItem(tr("OpenAI /v1/completions (streaming)"), QStringLiteral("openai"));
    m_protocol->addItem(tr("OpenAI /v1/chat/completions (streaming)"), QStringLiteral("openai-chat"));
    m_model = new QLineEdit(this);
    m_model->setObjectName(QStringLiteral("remoteModel"));
    m_model->setPlaceholderText(tr("the model's name on the server"));
    m_token = new QLineEdit(this);
    m_token->setEchoMode(QLineEdit::Password);
    m_token->setPlaceholderText(tr("optional bearer token (not saved)"));
    m_concurrency = new QSpinBox(this);
    m_concurrency->setRange(1, 16384);
    m_concurrency->setValue(64);
    m_concurrency->setToolTip(tr("Requests on the wire at most (one keep-alive connection each)"));
    m_maxQueued = new QSpinBox(this);
    m_maxQueued->setObjectName(QStringLiteral("remoteMaxQueued"));
    m_maxQueued->setRange(0, 10'000'000);
    m_maxQueued->setSpecialValueText(tr("no cap"));
    m_maxQueued->setValue(remote::RemoteOptions{}.maxQueued);
    m_maxQueued->setToolTip(tr("Requests waiting for a connection at most; more are shed by the client "
                               "(recorded as rejected, counted as shed)"));
    m_scrapeMs = new QSpinBox(this);
    m_scrapeMs->setRange(0, 600000);
    m_scrapeMs->setSuffix(tr(" ms"));
    m_scrapeMs->setSpecialValueText(tr("never"));
    m_scrapeMs->setValue(1000);
    m_scrapeMs->setToolTip(tr("How often the server's Prometheus /metrics is sampled"));
    form->addRow(tr("&URL"), m_url);
    form->addRow(tr("&Protocol"), m_protocol);
    form->addRow(tr("Mo&del"), m_model);
    form->addRow(tr("To&ken"), m_token);
    form->addRow(tr("Max conc&urrency"), m_concurrency);
    form->addRow(tr("Client &queue cap"), m_maxQueued);
    form->addRow(tr("Scrape &metrics every"), m_scrapeMs);
    for (QLineEdit *e : {m_url, m_model, m_token})
        connect(e, &QLineEdit::textEdited, this, &RemoteTargetForm::edited);
    connect(m_protocol, &QComboBox::currentIndexChanged, this, &RemoteTargetForm::edited);
    for (QSpinBox *b : {m_concurrency, m_maxQueued, m_scrapeMs})
        connect(b, &QSpinBox::valueChanged, this, &RemoteTargetForm::edited);
}

remote::RemoteOptions RemoteTargetForm::options() const
{
    remote::RemoteOptions o;
    o.target = QUrl(m_url->text().trimmed());
    o.protocol = *remote::parseProtocol(m_protocol->currentData().toString());
    o.model = m_model->text().trimmed();
    o.token = m_token->text();
    o.maxConcurrency = m_concurrency->value();
    o.maxQueued = m_maxQueued->value();
    o.scrapeInterval = std::chrono::milliseconds(m_scrapeMs->value());
    return o;
}

void RemoteTargetForm::restore(QSettings &s)
{
    m_url->setText(s.value(QStringLiteral("remoteUrl")).toString());
    m_protocol->setCurrentIndex(std::max(0, m_protocol->findData(s.value(QStringLiteral("remoteProtocol")))));
    m_model->setText(s.value(QStringLiteral("remoteModel")).toString());
    m_concurrency->setValue(s.value(QStringLiteral("remoteConcurrency"), 64).toInt());
    m_maxQueued->setValue(
        s.value(QStringLiteral("remoteMaxQueued"), remote::RemoteOptions{}.maxQueued).toInt());
    m_scrapeMs->setValue(s.value(QStringLiteral("remoteScrapeMs"), 1000).toInt());
}

void RemoteTargetForm::save(QSettings &s) const
{
    s.setValue(QStringLiteral("remoteUrl"), m_url->text().trimmed());
    s.setValue(QStringLiteral("remoteProtocol"), m_protocol->currentData().toString());
    s.setValue(QStringLiteral("remoteModel"), m_model->text().trimmed());
    s.setValue(QStringLiteral("remoteConcurrency"), m_concurrency->value());
    s.setValue(QStringLiteral("remoteMaxQueued"), m_maxQueued->value());
    s.setValue(QStringLiteral("remoteScrapeMs"), m_scrapeMs->value());
}

} // namespace bp::ui
