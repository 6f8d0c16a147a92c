// The batching knobs, applied live. Every knob of the table (engine/config/knobs.h)
// has an editor here, made by KnobForm from its declaration. Every edit restarts a 300 ms debounce;
// when it fires, the fields the operator edited (the form against what it
// last showed) go to EngineBridge::applyPatch as one undoable change, which
// the engine applies to its config in force and checks with validate(). A value
// the engine refuses stays in its field with the reason next to it, and the
// engine keeps its config. While the form holds no pending or refused edit
// it follows the engine's config (changes from REST show up here too).
#pragma once

#include "app/engine_bridge.h"

#include <QTimer>
#include <QWidget>

#include <map>
#include <span>
#include <utility>

class QCheckBox;
class QComboBox;
class QFormLayout;
class QGroupBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QUndoStack;
class QVBoxLayout;

namespace bp::ui {

class AdaptiveOptions;
class BucketEdgesEditor;
class DurationSpinBox;
class KnobForm;

class ControlPanel : public QWidget {
    Q_OBJECT
public:
    ControlPanel(app::EngineBridge &bridge, QUndoStack *undoStack, QWidget *parent = nullptr);

    static constexpr int kDebounceMs = 300;

    // The config the form describes (what would be applied).
    BatchingConfig formConfig() const;
    // True while an edit waits for the debounce or was refused.
    bool dirty() const { return m_dirty; }
    // The reason shown next to `field` ("max_batch_size", ...; "" = general).
    QString errorFor(const QString &field) const;

    QComboBox *policyBox() const { return m_policy; }
    // "Default for a generative model: continuous." (app::defaultPolicyNote)
    QLabel *defaultPolicyNote() const { return m_defaultNote; }
    QSpinBox *maxBatchSizeBox() const { return m_maxBatch; }
    DurationSpinBox *queueDelayBox() const { return m_delay; }
    BucketEdgesEditor *bucketEdgesEditor() const { return m_edges; }
    QSpinBox *staticBatchSizeBox() const { return m_staticBatch; }
    QSpinBox *staticPaddedLengthBox() const { return m_paddedLength; }
    QCheckBox *flushOnDrainBox() const { return m_flush; }
    QSpinBox *instancesBox() const { return m_instances; }
    QSpinBox *queueCapacityBox() const { return m_queueCapacity; }
    AdaptiveOptions *adaptiveOptions() const { return m_adaptive; }
    // Every knob's editor, made from the knob table (engine/config/knobs.h).
    KnobForm *knobForm() const { return m_form; }

public slots:
    void applyNow();       // skip the rest of the debounce
    void revertToEngine(); // drop pending or refused edits

signals:
    void configApplied(const QString &summary);

private:
    // The constructor's sections, top to bottom; each makes its editors
    // through m_form and returns what the panel's layout adds.
    QFormLayout *buildPolicyRows();
    QGroupBox *buildDynamicGroup();
    QGroupBox *buildBucketGroup();
    QGroupBox *buildStaticGroup();
    QGroupBox *buildContinuousGroup();
    QGroupBox *buildGoodputGroup();
    QGroupBox *buildEngineGroup();
    QGroupBox *buildAdaptiveGroup();
    void addUnplacedKnobs(QVBoxLayout *layout); // "More knobs": rows no section places
    void addFooter(QVBoxLayout *layout);        // the general error, status and revert
    void connectEditsAndEngine();
    // A knob editor per row, each with its error label below it.
    void addKnobRows(QFormLayout *form, std::span<const std::pair<const char *, QString>> rows);

    void edited();
    void showConfig(const BatchingConfig &config);
    void showSnapshot(const app::SnapshotPtr &snapshot);
    void showError(const QString &message);
    void clearErrors();
    void updateStatus();
    void updatePolicyHints();
    QLabel *addErrorLabel(const QString &field);

    app::EngineBridge &m_bridge;
    QUndoStack *m_undo;
    QTimer m_debounce;
    bool m_dirty = false;
    bool m_showing = false; // showConfig() is filling the form: not an edit
    std::uint64_t m_version = 0;
    QString m_lastApplied;

    KnobForm *m_form = nullptr;

    QComboBox *m_policy = nullptr;
    QLabel *m_policyHint = nullptr;
    QLabel *m_defaultNote = nullptr; // the model's default policy
    QSpinBox *m_maxBatch = nullptr;
    DurationSpinBox *m_delay = nullptr;
    BucketEdgesEditor *m_edges = nullptr;
    QSpinBox *m_staticBatch = nullptr;
    QSpinBox *m_paddedLength = nullptr;
    QCheckBox *m_flush = nullptr;
    QSpinBox *m_instances = nullptr;
    QSpinBox *m_queueCapacity = nullptr;
    AdaptiveOptions *m_adaptive = nullptr;
    BatchingConfig
        m_shown; // what the form was last filled with (fields it has no control for come from here)
    QGroupBox *m_dynamicGroup = nullptr, *m_bucketGroup = nullptr, *m_staticGroup = nullptr;
    QGroupBox *m_continuousGroup = nullptr;
    void revealPolicyGroup();
    QLabel *m_status = nullptr;
    QPushButton *m_revert = nullptr;
    std::map<QString, QLabel *> m_errors; // field -> its reason label ("" = general)
};

} // namespace bp::ui
