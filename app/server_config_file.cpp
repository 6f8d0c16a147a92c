// --server-config FILE (calibrate --target, tune --target): a server's
// settings from the syntax export-config writes, or a BatchPilot config JSON.
#include "server_config_file.h"

#include "engine/config/config_import.h"
#include "engine/sim/calibration/llamacpp_settings.h"

#include <QFile>

namespace bp::app {

// --server-config FILE: the syntax export-config writes, or a BatchPilot
// config JSON.
Result<ServerSettings> settingsFromFile(const QString &path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return Status(StatusCode::NotFound,
                      "cannot read '" + path.toStdString() + "': " + f.errorString().toStdString());
    const std::string text = f.readAll().toStdString();
    const std::string source = "file " + path.toStdString();
    if (looksLikeLlamaCppCommand(text)) {
        auto s = llamacppSettingsFromCommand(text, source);
        if (!s)
            return Status(s.status().code(), path.toStdString() + ": " + s.status().message());
        return s;
    }
    if (const auto format = detectServerFormat(text)) {
        auto imported = importConfig(text, *format);
        if (!imported)
            return Status(imported.status().code(), path.toStdString() + ": " + imported.status().message());
        return settingsFromImport(*imported, source);
    }
    const auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_object()) {
        auto s = batchpilotSettings(j, nullptr);
        if (s)
            s->source = source;
        return s;
    }
    return Status(StatusCode::InvalidArgument,
                  path.toStdString() + ": not a vllm serve, text-generation-launcher or llama-server "
                                       "command, an Ollama environment, a Triton config.pbtxt, or a "
                                       "BatchPilot config JSON");
}

} // namespace bp::app
