#include "export_settings_menu.h"

#include "app/engine_bridge.h"

#include <QDir>
#include <QFileDialog>
#include <QSaveFile>
#include <QSettings>

#include <iterator>

namespace bp::ui {

namespace {

struct Entry {
    ServerFormat format;
    const char *label;
    const char *file;
};

constexpr Entry kEntries[] = {
    {ServerFormat::Triton, QT_TRANSLATE_NOOP("ExportSettingsMenu", "&Triton (config.pbtxt)…"),
     "config.pbtxt"},
    {ServerFormat::Vllm, QT_TRANSLATE_NOOP("ExportSettingsMenu", "&vLLM (engine arguments)…"),
     "vllm-serve.sh"},
    {ServerFormat::Tgi, QT_TRANSLATE_NOOP("ExportSettingsMenu", "T&GI (launcher flags)…"), "tgi-launcher.sh"},
    {ServerFormat::TorchServe, QT_TRANSLATE_NOOP("ExportSettingsMenu", "Torch&Serve (model-config.yaml)…"),
     "model-config.yaml"},
    {ServerFormat::RayServe, QT_TRANSLATE_NOOP("ExportSettingsMenu", "&Ray Serve (@serve.batch)…"),
     "serve_batch.py"},
    {ServerFormat::LlamaCpp, QT_TRANSLATE_NOOP("ExportSettingsMenu", "&llama.cpp (llama-server flags)…"),
     "llama-server.sh"},
    {ServerFormat::Ollama, QT_TRANSLATE_NOOP("ExportSettingsMenu", "&Ollama (environment)…"), "ollama.env"},
};
// suggestedFileName() indexes the table by the format.
static_assert(std::size(kEntries) == std::size_t(ServerFormat::Ollama) + 1);

} // namespace

ExportSettingsMenu::ExportSettingsMenu(app::EngineBridge &bridge, QWidget *parent)
    : QMenu(tr("Export &settings for"), parent), m_bridge(bridge)
{
    for (const Entry &e : kEntries)
        addAction(tr(e.label), this, [this, f = e.format] { chooseAndExport(f); });
}

QString ExportSettingsMenu::suggestedFileName(ServerFormat format)
{
    return QString::fromLatin1(kEntries[std::size_t(format)].file);
}

void ExportSettingsMenu::chooseAndExport(ServerFormat format)
{
    QSettings settings;
    const QString dir = settings.value(QStringLiteral("export/lastDir"), QDir::homePath()).toString();
    const QString path = QFileDialog::getSaveFileName(parentWidget(), tr("Export settings"),
                                                      QDir(dir).filePath(suggestedFileName(format)));
    if (path.isEmpty())
        return;
    settings.setValue(QStringLiteral("export/lastDir"), QFileInfo(path).absolutePath());
    exportTo(format, path);
}

void ExportSettingsMenu::exportTo(ServerFormat format, const QString &path)
{
    const ExportedConfig out = exportConfig(m_bridge.engine().config(), format);
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) ||
        file.write(out.text.data(), qint64(out.text.size())) != qint64(out.text.size()) || !file.commit()) {
        emit exportFailed(tr("Cannot write %1: %2").arg(path, file.errorString()));
        return;
    }
    emit exported(path);
}

} // namespace bp::ui
