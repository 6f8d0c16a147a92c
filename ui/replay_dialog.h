// Asks how to replay a session or trace: speed, length scaling, a request
// limit, real or virtual clock, and which config to run under. The last
// choices are kept in QSettings.
#pragma once

#include "engine/store/replayer.h"

#include <QDialog>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QSpinBox;

namespace bp::ui {

class ReplayDialog : public QDialog {
    Q_OBJECT
public:
    // `current` is the console's live config, offered as an alternative to
    // the source's own.
    ReplayDialog(const QString &sourceText, const BatchingConfig &current, QWidget *parent = nullptr);

    // The options chosen (the caller sets `source`).
    ReplayOptions options() const;
    void accept() override;

    QDoubleSpinBox *speedBox() const { return m_speed; }
    QComboBox *clockBox() const { return m_clock; }

private:
    BatchingConfig m_current;
    QDoubleSpinBox *m_speed = nullptr;
    QDoubleSpinBox *m_lengthScale = nullptr;
    QSpinBox *m_limit = nullptr;
    QComboBox *m_clock = nullptr;
    QComboBox *m_config = nullptr;
    QLineEdit *m_notes = nullptr;
};

} // namespace bp::ui
