// The "Recommendation" section of a session report: the results of
// `batchpilot tune` (engine/store/tuning_store.h) that this session verified
// (it is the real-clock replay of a recommendation) or was the source of (it
// was tuned). For each, newest first: what was searched (SLO, objective,
// configs, calibration), the recommended config with its capacity, and its
// predicted figures beside the measured ones of the verification replay.
// Nothing (null / empty) when the session was never tuned.
#pragma once

#include "report_data.h"

#include <QString>

#include <nlohmann/json.hpp>

namespace bp::report {

// null when the session has no tuning results.
nlohmann::json recommendationJson(const ReportData &data);
// HTML (a heading, a paragraph and a table per tuning), empty when none.
// `tableOpen` / `tableClose`: the flavour's table markup.
QString recommendationHtml(const ReportData &data, const QString &tableOpen, const QString &tableClose);

} // namespace bp::report
