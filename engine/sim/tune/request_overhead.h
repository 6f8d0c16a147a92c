// A remote server's per-request path outside its steps — HTTP, tokenisation,
// the first token's delivery — as its calibration fitted it (the per-request
// term, RemoteCalibration::requestOverheadS). The simulator charges a request
// only the steps it rides in; `tune` and `replay --simulate` both add this
// path to each request's total and to its time to first token (when it has
// one), so that a simulated session and a tune figure of the same settings
// agree. Zero for the embedded engine's calibrations.
#pragma once

#include "engine/core/records.h"
#include "engine/sim/calibration/calibration.h"

namespace bp {

Duration requestOverheadOf(const Calibration &calibration);

// A request record as the client sees it: `overhead` added to its total and
// to its time to first token (when it produced one).
void addRequestOverhead(RequestRecord &record, Duration overhead);

// Forwards every record to `inner`, each completed request with the overhead
// added; failures, cache answers and config changes unchanged.
class RequestOverheadObserver final : public EngineObserver {
public:
    RequestOverheadObserver(EngineObserver *inner, Duration overhead);
    void onBatchCompleted(const BatchRecord &batch, std::span<const RequestRecord> requests) override;
    void onRequestFailed(const RequestRecord &record) override;
    void onRequestServedFromCache(const RequestRecord &record) override;
    void onConfigChanged(const ConfigChange &change) override;

private:
    EngineObserver *m_inner;
    Duration m_overhead;
    std::vector<RequestRecord> m_shifted; // reused between batches (one simulator thread)
};

} // namespace bp
