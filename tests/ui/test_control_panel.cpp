// ControlPanel against a real engine: every control changes the engine's
// config (after the debounce), an invalid value is refused with the
// engine's reason next to its field and the config stays, a change is one
// undo step (Ctrl+Z), and changes made elsewhere (REST) show up in the form.
#include "gui_test_support.h"

#include "app/engine_host.h"
#include "ui/adaptive_options.h"
#include "ui/bucket_edges_editor.h"
#include "ui/bucket_edges_model.h"
#include "ui/control_panel.h"
#include "ui/duration_spin_box.h"
#include "ui/knob_form.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QSpinBox>
#include <QToolButton>
#include <QUndoStack>

using namespace bp;
using namespace bp::ui;
using namespace std::chrono_literals;

class TestControlPanel : public QObject {
    Q_OBJECT

    struct Fixture {
        std::unique_ptr<Engine> engine = test::makeEchoEngine();
        app::EngineBridge bridge{*engine};
        QUndoStack undo;
        ControlPanel panel{bridge, &undo};
        std::uint64_t startVersion = engine->snapshot().configVersion;
    };

private slots:
    void initTestCase() { test::isolateSettings(); }

    // The panel says which default policy the model opened
    // with: continuous for a generative model, dynamic for an encoder and
    // for the no-compute echo.
    void notesTheModelsDefaultPolicy()
    {
        Fixture echo;
        QCOMPARE(echo.panel.defaultPolicyNote()->text(),
                 QStringLiteral("Default for builtin:echo (no compute): dynamic."));

        app::AppOptions o;
        o.model = QStringLiteral("builtin:tiny-decoder");
        o.preset = QStringLiteral("test");
        o.threads = 1;
        o.device = QStringLiteral("cpu");
        auto backend = app::backendFor(o);
        if (!backend)
            QSKIP("this build has no libtorch models");
        auto config = app::batchingConfigFor(o, backend->get());
        QVERIFY(config);
        EngineOptions eo;
        eo.backend = *backend;
        eo.batching = *config;
        auto engine = Engine::create(eo);
        QVERIFY2(engine, engine.status().toString().c_str());
        app::EngineBridge bridge(**engine);
        QUndoStack undo;
        ControlPanel panel(bridge, &undo);
        QCOMPARE(panel.policyBox()->currentData().toInt(), int(PolicyKind::Continuous));
        QCOMPARE(panel.defaultPolicyNote()->text(),
                 QStringLiteral("Default for a generative model: continuous."));

        o.model = QStringLiteral("builtin:tiny-encoder");
        auto encoder = app::backendFor(o);
        QVERIFY2(encoder, encoder.status().toString().c_str());
        QCOMPARE(app::batchingConfigFor(o, encoder->get())->policy, PolicyKind::Dynamic);
        QCOMPARE(app::defaultPolicyNote((*encoder)->info()),
                 QStringLiteral("Default for an encoder: dynamic."));
    }

    void formStartsWithTheEngineConfig()
    {
        Fixture f;
        QCOMPARE(f.panel.formConfig(), f.engine->config());
        QCOMPARE(f.panel.queueDelayBox()->text(), QStringLiteral("5 ms"));
        QVERIFY(!f.panel.dirty());
    }

    void policyChangesTheEngine()
    {
        Fixture f;
        f.panel.policyBox()->setCurrentIndex(f.panel.policyBox()->findText("bucketed"));
        QVERIFY(f.panel.dirty());
        QCOMPARE(f.engine->config().policy, PolicyKind::Dynamic); // debounced: not yet
        QTRY_COMPARE(f.engine->config().policy, PolicyKind::Bucketed);
        QVERIFY(!f.panel.dirty());
        QCOMPARE(f.engine->snapshot().configHistory.back().origin, std::string("gui"));
    }

    void eachSpinBoxChangesTheEngine_data()
    {
        QTest::addColumn<QString>("knob");
        QTest::addColumn<int>("value");
        QTest::newRow("max_batch_size") << "max_batch_size" << 48;
        QTest::newRow("static_batch_size") << "static_batch_size" << 12;
        QTest::newRow("static_padded_length") << "static_padded_length" << 256;
        QTest::newRow("instances") << "instances" << 3;
        QTest::newRow("queue_capacity") << "queue_capacity" << 9000;
    }
    void eachSpinBoxChangesTheEngine()
    {
        QFETCH(QString, knob);
        QFETCH(int, value);
        Fixture f;
        const std::map<QString, std::pair<QSpinBox *, int BatchingConfig::*>> knobs = {
            {"max_batch_size", {f.panel.maxBatchSizeBox(), &BatchingConfig::maxBatchSize}},
            {"static_batch_size", {f.panel.staticBatchSizeBox(), &BatchingConfig::staticBatchSize}},
            {"static_padded_length", {f.panel.staticPaddedLengthBox(), &BatchingConfig::staticPaddedLength}},
            {"instances", {f.panel.instancesBox(), &BatchingConfig::instances}},
            {"queue_capacity", {f.panel.queueCapacityBox(), &BatchingConfig::queueCapacity}},
        };
        auto [box, field] = knobs.at(knob);
        // Typed, as an operator would.
        box->selectAll();
        QTest::keyClicks(box, QString::number(value));
        QTRY_COMPARE(f.engine->config().*field, value);
        QCOMPARE(f.engine->snapshot().configVersion, f.startVersion + 1); // one change, not one per keystroke
        QVERIFY(QString::fromStdString(f.engine->snapshot().configHistory.back().summary).startsWith(knob));
    }

    void queueDelayTakesReadableUnits_data()
    {
        QTest::addColumn<QString>("typed");
        QTest::addColumn<qint64>("us");
        QTest::newRow("µs") << "250 µs" << qint64(250);
        QTest::newRow("us") << "750us" << qint64(750);
        QTest::newRow("ms") << "2 ms" << qint64(2000);
        QTest::newRow("fraction of a second") << "1.5 s" << qint64(1'500'000);
        QTest::newRow("bare number keeps the unit shown (ms)") << "12" << qint64(12'000);
    }
    void queueDelayTakesReadableUnits()
    {
        QFETCH(QString, typed);
        QFETCH(qint64, us);
        Fixture f;
        DurationSpinBox *box = f.panel.queueDelayBox();
        box->selectAll();
        QTest::keyClicks(box, typed);
        QTRY_COMPARE(f.engine->config().maxQueueDelay, Duration(std::chrono::microseconds(us)));
        box->clearFocus();
        QTest::keyClick(box, Qt::Key_Enter);
        QCOMPARE(box->text(), DurationSpinBox::format(us));
    }

    void queueDelayArrowsStep125()
    {
        Fixture f;
        DurationSpinBox *box = f.panel.queueDelayBox();
        box->stepBy(1); // 5 ms -> 10 ms
        QTRY_COMPARE(f.engine->config().maxQueueDelay, Duration(10ms));
        box->stepBy(-2); // -> 2 ms
        QTRY_COMPARE(f.engine->config().maxQueueDelay, Duration(2ms));
    }

    void flushOnDrainChangesTheEngine()
    {
        Fixture f;
        f.panel.flushOnDrainBox()->click();
        QTRY_COMPARE(f.engine->config().staticFlushOnDrain, false);
    }

    void bucketEdgesAddEditRemove()
    {
        Fixture f;
        BucketEdgesEditor *editor = f.panel.bucketEdgesEditor();
        BucketEdgesModel *model = editor->model();
        editor->addButton()->click(); // 1024 -> adds 2048 at the end
        QTRY_COMPARE(f.engine->config().bucketEdges, (std::vector<int>{64, 128, 256, 512, 1024, 2048}));
        QVERIFY(model->setData(model->index(0), 300)); // 64 -> 300: moves, stays sorted
        QTRY_COMPARE(f.engine->config().bucketEdges, (std::vector<int>{128, 256, 300, 512, 1024, 2048}));
        editor->view()->selectionModel()->select(model->index(1), QItemSelectionModel::ClearAndSelect);
        editor->removeButton()->click();
        QTRY_COMPARE(f.engine->config().bucketEdges, (std::vector<int>{128, 300, 512, 1024, 2048}));
    }

    void bucketEdgeDuplicateIsRefusedWithReason()
    {
        Fixture f;
        BucketEdgesModel *model = f.panel.bucketEdgesEditor()->model();
        QVERIFY(!model->setData(model->index(0), 256));
        QCOMPARE(f.panel.errorFor("bucket_edges"), QStringLiteral("256 is already an edge"));
        QVERIFY(!model->setData(model->index(0), -3));
        QVERIFY(f.panel.errorFor("bucket_edges").contains("positive"));
        QCOMPARE(model->edges(), (std::vector<int>{64, 128, 256, 512, 1024}));
    }

    // The editors hold the table's ranges (editorsFollowTheKnobTable), so what
    // reaches the engine's validate() from here is a cross-field rule or a
    // list: refused with the engine's reason next to the field.
    void invalidValuesAreRefusedWithTheEnginesReason_data()
    {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("reason");
        QTest::newRow("adaptive max_delay under min_delay")
            << "adaptive_delay"
            << "adaptive_delay.max_delay = 200µs is outside [500µs, 10s]";
        QTest::newRow("slo max_batch under min_batch") << "slo"
                                                       << "slo.max_batch = 4 is outside [8, 1024]";
        QTest::newRow("bucket_edges") << "bucket_edges"
                                      << "bucket_edges";
    }
    void invalidValuesAreRefusedWithTheEnginesReason()
    {
        QFETCH(QString, field);
        QFETCH(QString, reason);
        Fixture f;
        const BatchingConfig before = f.engine->config();
        KnobForm *form = f.panel.knobForm();
        if (field == "adaptive_delay") {
            form->editor<DurationSpinBox>("adaptive_delay.max_delay_us")->setValueUs(200);
        } else if (field == "slo") {
            form->editor<QSpinBox>("slo.min_batch")->setValue(8);
            form->editor<QSpinBox>("slo.max_batch")->setValue(4);
        } else {
            f.panel.bucketEdgesEditor()->model()->setData(f.panel.bucketEdgesEditor()->model()->index(4),
                                                          70000);
        }
        QTRY_VERIFY(!f.panel.errorFor(field).isEmpty());
        QVERIFY2(f.panel.errorFor(field).contains(reason), qPrintable(f.panel.errorFor(field)));
        QVERIFY(f.panel.dirty());
        QCOMPARE(f.engine->config(), before); // the config stays
        QCOMPARE(f.engine->snapshot().configVersion, f.startVersion);

        // Another edit while the bad value is there is refused too.
        f.panel.staticBatchSizeBox()->setValue(3);
        f.panel.applyNow();
        QCOMPARE(f.engine->config(), before);

        f.panel.revertToEngine(); // Esc
        QVERIFY(!f.panel.dirty());
        QVERIFY(f.panel.errorFor(field).isEmpty());
        QCOMPARE(f.panel.formConfig(), before);
    }

    void undoRevertsTheLastChangeAsOneStep()
    {
        Fixture f;
        const BatchingConfig before = f.engine->config();
        // Three fields inside one debounce: one change, one undo step.
        f.panel.maxBatchSizeBox()->setValue(64);
        f.panel.queueDelayBox()->setValueUs(1000);
        f.panel.policyBox()->setCurrentIndex(f.panel.policyBox()->findText("bucketed"));
        QTRY_COMPARE(f.engine->config().maxBatchSize, 64);
        QCOMPARE(f.undo.count(), 1);
        QCOMPARE(f.undo.undoText(),
                 QStringLiteral("policy dynamic→bucketed, max_batch_size 16→64, max_queue_delay 5ms→1ms"));

        f.undo.undo();
        QCOMPARE(f.engine->config(), before);
        QCOMPARE(f.panel.formConfig(), before);
        QCOMPARE(f.engine->snapshot().configHistory.back().origin, std::string("gui (undo)"));
        f.undo.redo();
        QCOMPARE(f.engine->config().maxBatchSize, 64);
        QCOMPARE(f.panel.formConfig(), f.engine->config());
    }

    // Undo once re-applied the whole config from before the change,
    // memory_batch_limit included, so the out-of-memory failures the memory
    // guard had stopped came back. Undo and redo touch only the fields
    // their change touched.
    void undoRestoresOnlyTheFieldsItsChangeTouched()
    {
        Fixture f;
        f.panel.maxBatchSizeBox()->setValue(64);
        f.panel.applyNow();
        QCOMPARE(f.engine->config().maxBatchSize, 64);
        QVERIFY(f.engine->update(ConfigPatch::lowerMemoryBatchLimit(8), "memory-guard"));
        f.undo.undo();
        QCOMPARE(f.engine->config().maxBatchSize, 16);
        QCOMPARE(f.engine->config().memoryBatchLimit, 8);
        QCOMPARE(f.panel.formConfig(), f.engine->config());
        f.undo.redo();
        QCOMPARE(f.engine->config().maxBatchSize, 64);
        QCOMPARE(f.engine->config().memoryBatchLimit, 8);
    }

    // The form once sent every field, so an edit waiting for its
    // debounce reverted whatever REST changed meanwhile.
    void anEditKeepsChangesMadeElsewhereMeanwhile()
    {
        Fixture f;
        f.panel.maxBatchSizeBox()->setValue(48);
        QVERIFY(f.panel.dirty());
        BatchingConfig rest = f.engine->config();
        rest.queueCapacity = 999;
        QVERIFY(f.engine->update(ConfigPatch::fields(rest, {"queue_capacity"}).value(), "rest"));
        f.panel.applyNow();
        QCOMPARE(f.engine->config().maxBatchSize, 48);
        QCOMPARE(f.engine->config().queueCapacity, 999);
        QCOMPARE(f.panel.queueCapacityBox()->value(), 999);
        QCOMPARE(f.undo.undoText(), QStringLiteral("max_batch_size 16→48"));
        f.undo.undo();
        QCOMPARE(f.engine->config().maxBatchSize, 16);
        QCOMPARE(f.engine->config().queueCapacity, 999);
    }

    void adaptiveOptionsChangeTheEngine()
    {
        Fixture f;
        AdaptiveOptions *adaptive = f.panel.adaptiveOptions();
        adaptive->sloGroup()->setChecked(true);
        adaptive->sloTargetBox()->setValueUs(20'000);
        QTRY_VERIFY(f.engine->config().slo.enabled);
        QCOMPARE(f.engine->config().slo.p99Target, Duration(20ms));
        adaptive->adaptiveDelayGroup()->setChecked(true);
        QTRY_VERIFY(f.engine->config().adaptiveDelay.enabled);
        adaptive->hybridSizesEdit()->selectAll();
        QTest::keyClicks(adaptive->hybridSizesEdit(), "4,8,64");
        QTRY_COMPARE(f.engine->config().hybrid.staticSizes, (std::vector<int>{4, 8, 64}));
    }

    void adaptiveValuesAreRefusedWithTheEnginesReason()
    {
        Fixture f;
        const BatchingConfig before = f.engine->config();
        AdaptiveOptions *adaptive = f.panel.adaptiveOptions();
        adaptive->hybridSizesEdit()->selectAll();
        QTest::keyClicks(adaptive->hybridSizesEdit(), "16,8");
        QTRY_VERIFY(!f.panel.errorFor("hybrid").isEmpty());
        QVERIFY2(f.panel.errorFor("hybrid").contains("hybrid.static_sizes must be strictly increasing"),
                 qPrintable(f.panel.errorFor("hybrid")));
        QCOMPARE(f.engine->config(), before);
    }

    void changesFromElsewhereShowUp()
    {
        Fixture f;
        BatchingConfig c = f.engine->config();
        c.maxBatchSize = 99;
        QVERIFY(f.engine->reconfigure(c, "rest").isOk());
        QTRY_COMPARE(f.panel.maxBatchSizeBox()->value(), 99);
        QVERIFY(!f.panel.dirty());
    }

    // The console's editors take range, step, unit, default
    // and tooltip from engine/config/knobs.h. Every knob of the table has exactly one
    // editor, and each editor's range and tooltip are the table's.
    void editorsFollowTheKnobTable()
    {
        Fixture f;
        std::map<QString, QWidget *> editors;
        for (QWidget *w : f.panel.findChildren<QWidget *>()) {
            const QString key = w->property(KnobForm::kKnobProperty).toString();
            if (key.isEmpty())
                continue;
            QVERIFY2(!editors.count(key), qPrintable("two editors for " + key));
            editors[key] = w;
        }
        const BatchingConfig defaults;
        for (const Knob &k : knobs()) {
            const QString key = QString::fromUtf8(k.key.data(), qsizetype(k.key.size()));
            QVERIFY2(editors.count(key), qPrintable("no editor for " + key));
            QWidget *w = editors[key];
            const QString tip = w->toolTip();
            // The tooltip: the table's doc line, range and default.
            QString doc = QString::fromUtf8(k.doc.data(), qsizetype(k.doc.size())).remove('`');
            QVERIFY2(tip.contains(doc.mid(1)), qPrintable(key + ": " + tip));
            QVERIFY2(tip.contains(QString::fromStdString(formatKnobRange(k)).remove('`')),
                     qPrintable(key + ": " + tip));
            QVERIFY2(tip.contains("Default: " + QString::fromStdString(formatKnobValue(k, defaults))),
                     qPrintable(key + ": " + tip));
            // The range, in the editor's units; an exclusive bound is one step in.
            const double scale = f.panel.knobForm()->scale(k.key);
            const double lo = k.lo / scale, hi = k.hi / scale;
            if (auto *box = qobject_cast<QSpinBox *>(w)) {
                QCOMPARE(k.type, KnobType::Int);
                QCOMPARE(box->minimum(), int(std::ceil(lo)) + (k.loKind == BoundKind::Exclusive ? 1 : 0));
                QCOMPARE(box->maximum(), int(std::floor(hi)) - (k.hiKind == BoundKind::Exclusive ? 1 : 0));
                QCOMPARE(box->singleStep(), k.step > 0 ? int(k.step / scale) : 1);
                if (scale == 1 && !k.unit.empty())
                    QCOMPARE(box->suffix(), " " + QString::fromUtf8(k.unit.data(), qsizetype(k.unit.size())));
            } else if (auto *box = qobject_cast<QDoubleSpinBox *>(w)) {
                QCOMPARE(k.type, KnobType::Double);
                const double ulp = std::pow(10.0, -box->decimals());
                QCOMPARE(box->minimum(), k.lo + (k.loKind == BoundKind::Exclusive ? ulp : 0));
                QCOMPARE(box->maximum(), k.hi - (k.hiKind == BoundKind::Exclusive ? ulp : 0));
                QCOMPARE(box->singleStep(), k.step > 0 ? k.step : 0.01);
            } else if (auto *box = qobject_cast<DurationSpinBox *>(w)) {
                QCOMPARE(k.type, KnobType::Duration);
                QCOMPARE(double(box->minimumUs()), k.lo);
                QCOMPARE(double(box->maximumUs()), k.hi);
            } else if (auto *box = qobject_cast<QComboBox *>(w)) {
                QCOMPARE(k.type, KnobType::Policy);
                QCOMPARE(box->count(), int(k.hi - k.lo) + 1);
            } else {
                QVERIFY2(k.type == KnobType::Bool || k.type == KnobType::IntList, qPrintable(key));
            }
        }
    }

    void editorsHoldTheTablesRange()
    {
        Fixture f;
        f.panel.maxBatchSizeBox()->setValue(5000);
        QCOMPARE(f.panel.maxBatchSizeBox()->value(), int(findKnob("max_batch_size")->hi));
        f.panel.instancesBox()->setValue(0);
        QCOMPARE(f.panel.instancesBox()->value(), int(findKnob("instances")->lo));
        f.panel.queueDelayBox()->setValueUs(20'000'000);
        QCOMPARE(double(f.panel.queueDelayBox()->valueUs()), findKnob("max_queue_delay_us")->hi);
        auto *aging = f.panel.knobForm()->editor<DurationSpinBox>("priority_aging_us");
        aging->setValueUs(0);
        QCOMPARE(double(aging->valueUs()), findKnob("priority_aging_us")->lo);
        QTRY_COMPARE(f.engine->config().maxBatchSize, 1024);
        QVERIFY(f.panel.errorFor("max_batch_size").isEmpty());
        QCOMPARE(f.engine->config().priorityAging, Duration(std::chrono::milliseconds(1)));
    }

    // A value the box cannot show exactly (sub-µs, bytes that are not whole
    // MiB) survives an apply of another field from the console.
    void valuesTheEditorsRoundSurviveAnApply()
    {
        Fixture f;
        BatchingConfig c = f.engine->config();
        c.slo.p99Target = std::chrono::nanoseconds(12'345'678);
        c.cache.maxBytes = (3 << 20) + 5;
        QVERIFY(f.engine->reconfigure(c, "rest").isOk());
        QTRY_COMPARE(f.panel.formConfig(), c);
        f.panel.maxBatchSizeBox()->setValue(40);
        f.panel.applyNow();
        QCOMPARE(f.engine->config().maxBatchSize, 40);
        QCOMPARE(f.engine->config().slo.p99Target, Duration(std::chrono::nanoseconds(12'345'678)));
        QCOMPARE(f.engine->config().cache.maxBytes, std::int64_t((3 << 20) + 5));
    }

    void nothingChangedAppliesNothing()
    {
        Fixture f;
        f.panel.maxBatchSizeBox()->setValue(17);
        f.panel.maxBatchSizeBox()->setValue(16); // back before the debounce fired
        f.panel.applyNow();
        QCOMPARE(f.engine->snapshot().configVersion, f.startVersion);
        QCOMPARE(f.undo.count(), 0);
    }

    // The goodput SLOs (knob table) have their own group,
    // and reach the engine.
    void goodputSlosChangeTheEngine()
    {
        Fixture f;
        auto *ttft = f.panel.knobForm()->editor<DurationSpinBox>("goodput.ttft_us");
        auto *tpot = f.panel.knobForm()->editor<DurationSpinBox>("goodput.tpot_us");
        QVERIFY(ttft && tpot && f.panel.knobForm()->editor<DurationSpinBox>("goodput.e2e_us"));
        auto *group = qobject_cast<QGroupBox *>(ttft->parentWidget());
        QVERIFY(group);
        QCOMPARE(group->title(), QStringLiteral("Goodput SLOs"));
        ttft->setValueUs(500'000);
        tpot->setValueUs(50'000);
        QTRY_COMPARE(f.engine->config().goodput.ttft, Duration(500ms));
        QCOMPARE(f.engine->config().goodput.tpot, Duration(50ms));
        QCOMPARE(f.engine->config().goodput.e2e, Duration::zero());
    }

    void continuousKnobsHaveTheirGroup()
    {
        Fixture f;
        auto *seqs = f.panel.knobForm()->editor<QSpinBox>("continuous.max_num_seqs");
        QVERIFY(seqs);
        auto *group = qobject_cast<QGroupBox *>(seqs->parentWidget());
        QVERIFY(group);
        QCOMPARE(group->title(), QStringLiteral("Continuous (generation)"));
        f.panel.policyBox()->setCurrentIndex(f.panel.policyBox()->findText(QStringLiteral("continuous")));
        QCOMPARE(group->title(), QStringLiteral("Continuous (generation) — in use"));
        seqs->setValue(7);
        QTRY_COMPARE(f.engine->config().continuous.maxNumSeqs, 7);
        QCOMPARE(f.engine->config().policy, PolicyKind::Continuous);
    }
};

QTEST_MAIN(TestControlPanel)
#include "test_control_panel.moc"
