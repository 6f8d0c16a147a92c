// Where the bundled data lives: the sample trace and the example batching
// configs, in an installed tree (/usr/share/batchpilot, or PREFIX/share/
// batchpilot next to a relocated bin/) and in a build tree (the build
// directory's share/batchpilot, filled at configure time by
// cmake/packaging.cmake). docs/packaging.md lists the search order.
#pragma once

#include <QString>
#include <QStringList>

namespace bp::app {

// The file name of the bundled sample trace (Azure LLM inference trace
// 2023, conversation service; CC-BY 4.0, credit in traces/README).
inline constexpr const char *kSampleTraceFile = "traces/azure_llm_conv_2023.csv";

// The directories searched for `share/batchpilot` data, first match wins:
//   1. <directory of the executable>/../share/batchpilot (installed, or
//      the build tree's own copy for app/batchpilot)
//   2. each XDG data directory's batchpilot/ ($XDG_DATA_HOME,
//      $XDG_DATA_DIRS: /usr/local/share, /usr/share)
//   3. the build tree's share/batchpilot, fixed at configure time (tests
//      and other executables that do not sit in app/)
QStringList dataDirectories();

// The first existing, readable `relativePath` under dataDirectories(), or
// an empty string.
QString findDataFile(const QString &relativePath);

// findDataFile(kSampleTraceFile).
QString sampleTracePath();

// What was searched, for an error message: "looked in A, B and C".
QString dataSearchDescription(const QString &relativePath);

} // namespace bp::app
