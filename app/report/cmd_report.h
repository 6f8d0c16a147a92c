// `batchpilot report SESSION -o FILE.html|FILE.pdf|FILE.json`: writes a
// session's report; the format follows the extension. SESSION is an id
// (`batchpilot sessions`) or `last` (the newest session). Honours --db.
// Exit codes: 0 written, 1 failed (no database, unknown session,
// unwritable path), 2 bad usage (missing or unknown extension, bad id).
#pragma once

#include "app/app_options.h"

namespace bp::app {

int runReport(const AppOptions &options);

} // namespace bp::app
