// The GPU gauges of /metrics (batchpilot_gpu_*) and /v1/stats ("gpu"):
// NVML (app/nvml_sampler.h) sampled on the REST server's thread, once at
// start and then once a second on a timer. A scrape reads the latest
// sample: it never waits on NVML, NVML is never called per request, and
// nothing here touches the engine.
//
// Without NVML (no library, no NVIDIA GPU) there is no reading and the
// gauges are simply absent; a sample that fails later (a GPU gone) drops
// the reading the same way until one succeeds again. Nothing fails and
// nothing is logged per request: the one line about it is the start-up
// note (serve.h: startupNotes).
//
// Threading: the server thread only. The sampler is handed over before
// that thread starts (RestOptions::gpu); from then on only this object
// calls it.
#pragma once

#include "app/nvml_sampler.h"

#include <QObject>
#include <QTimer>

#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace bp::rest {

struct GpuReading {
    unsigned index = 0; // NVML's device index (the model's CUDA device; 0 for a CPU model)
    std::string name;   // NVML's device name ("NVIDIA H100 80GB HBM3")
    app::GpuSample sample;
};

// /v1/stats "gpu": index, name, utilization_ratio,
// memory_bandwidth_utilization_ratio (0..1, NVML's percentages / 100),
// memory_used_bytes, memory_total_bytes.
nlohmann::json toJson(const GpuReading &reading);

class GpuGauges : public QObject {
    Q_OBJECT
public:
    // Samples `sampler` now and then every `period`. A null or unavailable
    // sampler: no reading ever, and no timer.
    GpuGauges(std::shared_ptr<app::NvmlSampler> sampler, std::chrono::milliseconds period,
              QObject *parent = nullptr);

    // The last sample, or nullopt (no NVML, or the last sample failed).
    const std::optional<GpuReading> &latest() const { return m_latest; }

private:
    void sample();

    std::shared_ptr<app::NvmlSampler> m_sampler;
    QTimer m_timer;
    std::optional<GpuReading> m_latest;
};

} // namespace bp::rest
