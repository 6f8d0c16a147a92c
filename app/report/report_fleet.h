// The fleet sections of a session report:
//  - "Fleet": a simulated fleet session's replicas (engine/store/fleet_store.h
//    replica_figures): requests routed, completed, failed, busy time,
//    peak outstanding and KV, with the router from sessions.replay.fleet;
//  - "Capacity plan": the `batchpilot plan` results made from this session
//    or from the trace it replays, newest first: the SLO, the replicas per
//    window (and router), the hour-of-day schedule and the cost.
// Nothing (null / empty) when the session has neither.
#pragma once

#include "report_data.h"

#include <QString>

#include <nlohmann/json.hpp>

namespace bp::report {

nlohmann::json fleetJson(const ReportData &data);        // null without replicas
nlohmann::json capacityPlanJson(const ReportData &data); // null without plans
QString fleetHtml(const ReportData &data, const QString &tableOpen, const QString &tableClose);

} // namespace bp::report
