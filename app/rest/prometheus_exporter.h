// /metrics: the engine snapshot (and the HTTP layer's own counters) in the
// Prometheus text exposition format 0.0.4, every name prefixed
// `batchpilot_`. Pure: a value in, text out; `promtool check metrics`
// accepts the result (tests/integration/test_rest_prometheus.cpp).
//
// Families (docs/rest.md has the full table):
//   batchpilot_requests_total{status}            counter, every final engine status
//   batchpilot_request_duration_seconds          histogram, arrival -> completion
//   batchpilot_queue_wait_seconds                histogram, arrival -> dispatch
//   batchpilot_compute_seconds                   histogram, per request (its batch's run)
//   batchpilot_batch_size                        histogram, requests per batch
//   batchpilot_queue_depth, batchpilot_padding_efficiency_ratio,
//   batchpilot_utilization_ratio, batchpilot_config_* (live knobs),
//   batchpilot_trace_dropped_rows_total, batchpilot_http_responses_total{code},
//   batchpilot_gpu_* {gpu, name} (NVML, only when there is a reading), ...
#pragma once

#include "gpu_gauges.h"

#include "engine/metrics/snapshot.h"

#include <cstdint>
#include <map>
#include <string>

namespace bp::rest {

struct HttpFigures {
    std::map<int, std::uint64_t> responsesByCode; // every HTTP answer produced, by status code
    std::uint64_t callsInFlight = 0;              // HTTP requests waiting for the engine
    std::uint64_t connections = 0;                // open client connections
    std::uint64_t waiting = 0;                    // waiting for room in the admission queue
};

struct ExporterInput {
    const Snapshot *snapshot = nullptr;
    HttpFigures http;
    std::uint64_t droppedTraceRows = 0; // 0 without a trace sink
    bool traceSinkAttached = false;
    std::string version;
    // NVML's latest sample (gpu_gauges.h); null: no NVML, and the
    // batchpilot_gpu_* families are left out altogether.
    const GpuReading *gpu = nullptr;
};

std::string renderPrometheus(const ExporterInput &input);

// "text/plain; version=0.0.4; charset=utf-8"
const char *prometheusContentType();

} // namespace bp::rest
