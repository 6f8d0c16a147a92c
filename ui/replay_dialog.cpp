#include "replay_dialog.h"

#include "remote_target_form.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>

namespace bp::ui {

ReplayDialog::ReplayDialog(const QString &sourceText, const BatchingConfig &current, QWidget *parent)
    : QDialog(parent), m_current(current)
{
    setWindowTitle(tr("Replay %1").arg(sourceText));
    QSettings settings;
    settings.beginGroup(QStringLiteral("replay"));
    auto *form = new QFormLayout(this);
    auto *intro = new QLabel(tr("Re-drives the arrivals of %1 into a fresh engine and records a new session "
                                "linked to it.")
                                 .arg(sourceText),
                             this);
    intro->setWordWrap(true);
    form->addRow(intro);

    m_target = new QComboBox(this);
    m_target->addItem(tr("embedded engine"));
    m_target->addItem(tr("remote server"));
    m_target->setToolTip(
        tr("Replay into this console's engine, or drive another server (Triton, vLLM, TGI, SGLang, "
           "another BatchPilot) over HTTP and scrape its /metrics"));
    form->addRow(tr("&Target"), m_target);
    m_remote = new RemoteTargetForm(this);
    m_remote->restore(settings);
    form->addRow(m_remote);

    m_speed = new QDoubleSpinBox(this);
    m_speed->setRange(0.01, 10000);
    m_speed->setDecimals(2);
    m_speed->setSuffix(QStringLiteral(" ×"));
    m_speed->setValue(settings.value(QStringLiteral("speed"), 1.0).toDouble());
    m_speed->setToolTip(tr("2 = arrival gaps halved (twice the rate)"));
    form->addRow(tr("&Speed"), m_speed);

    m_lengthScale = new QDoubleSpinBox(this);
    m_lengthScale->setRange(0.001, 1000);
    m_lengthScale->setDecimals(3);
    m_lengthScale->setValue(settings.value(QStringLiteral("lengthScale"), 1.0).toDouble());
    m_lengthScale->setToolTip(tr("Multiplies input and output token counts (0.125 = divide by 8)"));
    form->addRow(tr("&Length scale"), m_lengthScale);

    m_limit = new QSpinBox(this);
    m_limit->setObjectName(QStringLiteral("limit"));
    m_limit->setRange(0, std::numeric_limits<int>::max());
    m_limit->setSpecialValueText(tr("all requests"));
    m_limit->setValue(settings.value(QStringLiteral("limit"), 0).toInt());
    form->addRow(tr("Li&mit"), m_limit);

    m_clock = new QComboBox(this);
    m_clock->addItem(tr("real clock (paced, really computes)"), int(ReplayClock::Real));
    m_clock->addItem(tr("virtual clock (simulation, no waiting)"), int(ReplayClock::Virtual));
    m_clock->setCurrentIndex(settings.value(QStringLiteral("clock"), 0).toInt() == 1 ? 1 : 0);
    form->addRow(tr("&Clock"), m_clock);
    m_engineRows << m_clock << form->labelForField(m_clock);

    m_config = new QComboBox(this);
    m_config->addItem(tr("the source's own config"));
    m_config->addItem(tr("the console's current config"));
    m_config->setCurrentIndex(settings.value(QStringLiteral("useCurrentConfig"), true).toBool() ? 1 : 0);
    form->addRow(tr("C&onfig"), m_config);
    m_engineRows << m_config << form->labelForField(m_config);

    m_notes = new QLineEdit(this);
    m_notes->setPlaceholderText(tr("optional, stored with the session"));
    form->addRow(tr("&Notes"), m_notes);

    m_error = new QLabel(this);
    m_error->setWordWrap(true);
    m_error->setStyleSheet(QStringLiteral("color: #b00020"));
    m_error->hide();
    form->addRow(m_error);

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Replay"));
    form->addRow(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_target, &QComboBox::currentIndexChanged, this, &ReplayDialog::updateTarget);
    m_target->setCurrentIndex(settings.value(QStringLiteral("remote"), false).toBool() ? 1 : 0);
    updateTarget();
}

QLineEdit *ReplayDialog::urlEdit() const
{
    return m_remote->urlEdit();
}

QLineEdit *ReplayDialog::modelEdit() const
{
    return m_remote->modelEdit();
}

QComboBox *ReplayDialog::protocolBox() const
{
    return m_remote->protocolBox();
}

void ReplayDialog::updateTarget()
{
    const bool remote = m_target->currentIndex() == 1;
    m_remote->setVisible(remote);
    for (QWidget *w : m_engineRows)
        w->setVisible(!remote);
    m_error->hide();
}

std::optional<remote::RemoteOptions> ReplayDialog::remoteOptions() const
{
    if (m_target->currentIndex() != 1)
        return std::nullopt;
    return m_remote->options();
}

ReplayOptions ReplayDialog::options() const
{
    ReplayOptions o;
    o.speed = m_speed->value();
    o.lengthScale = m_lengthScale->value();
    o.limit = std::size_t(m_limit->value());
    o.clock = m_target->currentIndex() == 1 ? ReplayClock::Real : ReplayClock(m_clock->currentData().toInt());
    if (m_config->currentIndex() == 1 && m_target->currentIndex() == 0)
        o.config = m_current;
    o.notes = m_notes->text().toStdString();
    return o;
}

void ReplayDialog::accept()
{
    if (auto remote = remoteOptions()) {
        if (Status s = remote::validate(*remote); !s) {
            m_error->setText(QString::fromStdString(s.message()));
            m_error->show();
            return;
        }
    }
    QSettings settings;
    settings.beginGroup(QStringLiteral("replay"));
    settings.setValue(QStringLiteral("speed"), m_speed->value());
    settings.setValue(QStringLiteral("lengthScale"), m_lengthScale->value());
    settings.setValue(QStringLiteral("limit"), m_limit->value());
    settings.setValue(QStringLiteral("clock"), m_clock->currentIndex());
    settings.setValue(QStringLiteral("useCurrentConfig"), m_config->currentIndex() == 1);
    settings.setValue(QStringLiteral("remote"), m_target->currentIndex() == 1);
    m_remote->save(settings);
    QDialog::accept();
}

} // namespace bp::ui
