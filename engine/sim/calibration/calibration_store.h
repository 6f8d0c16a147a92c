// Calibrations in the trace database (table `calibrations`, schema versions
// 5, 8 and 12; docs/schema.md). The functions open their own connection to the
// store's file (as the trace sink does), so the TraceStore class stays as
// it is; the store must have been opened (and so migrated) first.
// Thread-safe: every call uses its own connection.
#pragma once

#include "engine/sim/calibration/calibration.h"

#include <memory>
#include <optional>
#include <vector>

namespace bp {

class TraceStore;

// Stores `c` (its id is ignored) and returns the new id.
Result<std::int64_t> saveCalibration(const TraceStore &store, const Calibration &c);
// Newest first.
Result<std::vector<Calibration>> listCalibrations(const TraceStore &store);
// NotFound for an unknown id.
Result<Calibration> loadCalibration(const TraceStore &store, std::int64_t id);
// The newest calibration for this key (an empty preset, device or dtype, or
// no threads, matches any);
// NotFound when there is none.
Result<Calibration> latestCalibration(const TraceStore &store, const std::string &model,
                                      const std::string &preset, const std::string &device,
                                      std::optional<int> threads, const std::string &dtype = "");

// The newest calibration of `model` on the remote server at `url` (of
// kind `server`, or any when empty); NotFound says which calibrate to run.
Result<Calibration> latestRemoteCalibration(const TraceStore &store, const std::string &url,
                                            const std::string &model, const std::string &server);

// `ref` is a calibration id in the store or a JSON file (calibrationFromJson).
Result<Calibration> resolveCalibration(const TraceStore &store, const std::string &ref);

} // namespace bp
