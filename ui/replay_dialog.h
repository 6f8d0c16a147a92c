// Asks how to replay a session or trace: speed, length scaling, a request
// limit, real or virtual clock, and which config to run under — or, with
// the target selector on "remote server", which server to drive instead of
// the embedded engine (URL, protocol, model, concurrency, scrape interval;
// docs/remote.md). The last choices are kept in QSettings (not the token).
#pragma once

#include "app/remote/http_remote_target.h"
#include "engine/replay/replayer.h"

#include <optional>

#include <QDialog>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace bp::ui {

class RemoteTargetForm;

class ReplayDialog : public QDialog {
    Q_OBJECT
public:
    // `current` is the console's live config, offered as an alternative to
    // the source's own.
    ReplayDialog(const QString &sourceText, const BatchingConfig &current, QWidget *parent = nullptr);

    // The options chosen (the caller sets `source`).
    ReplayOptions options() const;
    void accept() override;

    // Set when the target selector says "remote server".
    std::optional<remote::RemoteOptions> remoteOptions() const;

    QDoubleSpinBox *speedBox() const { return m_speed; }
    QComboBox *clockBox() const { return m_clock; }
    QComboBox *targetBox() const { return m_target; }
    RemoteTargetForm *remoteForm() const { return m_remote; }
    QLineEdit *urlEdit() const;
    QLineEdit *modelEdit() const;
    QComboBox *protocolBox() const;

private:
    void updateTarget();

    BatchingConfig m_current;
    QDoubleSpinBox *m_speed = nullptr;
    QDoubleSpinBox *m_lengthScale = nullptr;
    QSpinBox *m_limit = nullptr;
    QComboBox *m_clock = nullptr;
    QComboBox *m_config = nullptr;
    QLineEdit *m_notes = nullptr;
    QComboBox *m_target = nullptr;
    RemoteTargetForm *m_remote = nullptr;
    QLabel *m_error = nullptr;
    QList<QWidget *> m_engineRows;
};

} // namespace bp::ui
