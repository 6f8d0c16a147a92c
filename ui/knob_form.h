// The console's editors for the batching knobs, made from the knob table
// (engine/config/knobs.h): each editor's range, step, unit, tooltip (the knob's doc
// line, its range, default and policies) and the value it writes come from
// the knob's declaration, so the console cannot drift from validate(), the
// JSON codec, /metrics and docs/configuration.md. The panels only place the
// editors and name their rows.
//
// Editor per type: Int -> QSpinBox, Double -> QDoubleSpinBox, Duration ->
// DurationSpinBox, Bool -> QCheckBox or a checkable QGroupBox, Policy ->
// QComboBox, Text -> QComboBox of its choices, IntList -> QLineEdit ("8,16,32"). Every editor carries its key
// in the property kKnobProperty.
//
// fill() writes a field only when its editor shows something other than the
// config it was filled with, so values the editor cannot show exactly (a
// sub-microsecond delay set through REST, bytes that are not whole MiB)
// survive an apply from the console.
#pragma once

#include "engine/config/knobs.h"

#include <QObject>
#include <QString>

#include <map>
#include <string>

class QGroupBox;
class QWidget;

namespace bp::ui {

class KnobForm : public QObject {
    Q_OBJECT
public:
    static constexpr const char *kKnobProperty = "bpKnob";

    explicit KnobForm(QObject *parent = nullptr);

    // The editor for `key` (a key of knobs(); anything else is a programming
    // error and aborts). `scale` shows the value in larger units (cache.max_bytes
    // in MiB: scale 2^20, unit "MiB"); Int knobs only.
    QWidget *add(std::string_view key, QWidget *parent, double scale = 1, const QString &unit = {});
    template <typename T> T *add(std::string_view key, QWidget *parent)
    {
        return qobject_cast<T *>(add(key, parent));
    }
    // A Bool knob as a checkable group box with this title.
    QGroupBox *addGroup(std::string_view key, const QString &title, QWidget *parent);
    // Binds an editor the caller made (e.g. the bucket edges list) for its
    // tooltip and property; fill/setConfig leave it to the caller.
    void attach(std::string_view key, QWidget *editor);

    // The editor of a knob, nullptr when none was added.
    QWidget *editor(std::string_view key) const;
    template <typename T> T *editor(std::string_view key) const { return qobject_cast<T *>(editor(key)); }
    // The knob's scale, as given to add() (1 when none).
    double scale(std::string_view key) const;

    // Shows `config` in every editor (not an edit: edited() stays quiet).
    void setConfig(const BatchingConfig &config);
    // Writes what the editors show into `config`, field by field, where it
    // differs from what setConfig() showed.
    void fill(BatchingConfig &config) const;

    // The knob's tooltip: its doc line, range with unit, default, policies.
    static QString toolTip(const Knob &knob, double scale = 1, const QString &unit = {});
    // The knob's unit as an editor shows it ("requests", "µs", "MiB" with scale).
    static QString unitText(const Knob &knob, const QString &unit = {});
    // How many decimals a Double knob's editor shows (from its step).
    static int decimals(const Knob &knob);
    // The editor's range for a scalar knob, in editor units: the table's
    // bounds divided by scale, an exclusive bound moved in by one editor step.
    static double editorMinimum(const Knob &knob, double scale = 1);
    static double editorMaximum(const Knob &knob, double scale = 1);
    static double editorStep(const Knob &knob, double scale = 1);

signals:
    void edited();

private:
    struct Field {
        const Knob *knob = nullptr;
        QWidget *editor = nullptr;
        double scale = 1;
        bool managed = true; // false: attach()ed, the caller reads and writes it
    };
    Field &bind(std::string_view key, QWidget *editor, double scale, const QString &unit, bool managed);
    void changed();

    std::map<std::string, Field, std::less<>> m_fields;
    bool m_filling = false;
};

} // namespace bp::ui
