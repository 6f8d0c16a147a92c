// entry/console.h in a build without Qt Gui (BATCHPILOT_GUI=OFF, the
// headless build): Qt Core only. main() refuses the console and the
// commands that need Qt Gui before it would get here.
#include "console.h"

namespace bp::entry {

bool hasGui()
{
    return false;
}

std::unique_ptr<QCoreApplication> createApplication(AppKind, int &argc, char **argv)
{
    return std::make_unique<QCoreApplication>(argc, argv);
}

int runConsole(QCoreApplication &, const app::AppOptions &, app::EngineHostResult &host, rest::RestServer *,
               const QString &)
{
    host.engine->shutdown(ShutdownMode::Drain);
    return 2; // unreachable: main() refuses the console first
}

} // namespace bp::entry
