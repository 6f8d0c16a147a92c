// File → Export settings for…: one action per server, and each writes the
// engine's config in force (not the default one) in that server's syntax.
#include "gui_test_support.h"

#include "ui/export_settings_menu.h"

#include "app/engine_bridge.h"

#include <QSignalSpy>

using namespace bp;
using namespace bp::ui;

class TestExportSettings : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { test::isolateSettings(); }

    void writesTheConfigInForce()
    {
        BatchingConfig config;
        config.maxBatchSize = 24;
        config.maxQueueDelay = std::chrono::microseconds(3000);
        auto engine = test::makeEchoEngine(config);
        app::EngineBridge bridge(*engine);
        ExportSettingsMenu menu(bridge);
        QCOMPARE(menu.actions().size(), 7);
        QVERIFY(menu.actions()[0]->text().contains("Triton"));
        QVERIFY(menu.actions()[5]->text().contains("llama.cpp"));
        QVERIFY(ExportSettingsMenu::suggestedFileName(ServerFormat::Ollama).endsWith("ollama.env"));

        QTemporaryDir dir;
        QSignalSpy done(&menu, &ExportSettingsMenu::exported);
        const QString path = dir.filePath(ExportSettingsMenu::suggestedFileName(ServerFormat::Triton));
        QVERIFY(path.endsWith("config.pbtxt"));
        menu.exportTo(ServerFormat::Triton, path);
        QCOMPARE(done.size(), 1);
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(f.readAll());
        QVERIFY2(text.contains("max_batch_size: 24") && text.contains("max_queue_delay_microseconds: 3000"),
                 qPrintable(text));

        // llama-server's launch line from the engine's continuous knobs
        const QString llama = dir.filePath(ExportSettingsMenu::suggestedFileName(ServerFormat::LlamaCpp));
        menu.exportTo(ServerFormat::LlamaCpp, llama);
        QCOMPARE(done.size(), 2);
        QFile lf(llama);
        QVERIFY(lf.open(QIODevice::ReadOnly));
        QVERIFY(QString::fromUtf8(lf.readAll()).contains("llama-server"));

        QSignalSpy failed(&menu, &ExportSettingsMenu::exportFailed);
        menu.exportTo(ServerFormat::Vllm, dir.filePath("no/such/dir/x.sh"));
        QCOMPARE(failed.size(), 1);
        QVERIFY(failed[0][0].toString().contains("Cannot write"));
        engine->shutdown(ShutdownMode::Drain);
    }
};

QTEST_MAIN(TestExportSettings)
#include "test_export_settings.moc"
