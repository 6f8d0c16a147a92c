// The JSON form of a session report: every figure, machine-readable, in
// the units its key names (_ms, _s, _us, _rps). docs/reports.md lists the
// keys. "headline" is TraceStore::summary()'s toJson() with the extra
// figures added, so a tool reading it sees the same numbers as
// `batchpilot replay --json` and the console.
#pragma once

#include "report_data.h"

#include <nlohmann/json.hpp>

namespace bp::report {

// The report format's version, bumped when a key changes meaning or goes.
inline constexpr int kReportJsonVersion = 1;

nlohmann::json reportToJson(const ReportData &data);

} // namespace bp::report
