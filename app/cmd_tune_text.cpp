// The text of `batchpilot tune`: the table rows of candidates, the
// measured figures of a verification session and the predicted-vs-measured
// table (cmd_tune_text.h).
#include "cmd_tune_text.h"

#include "engine/sim/tune/tune_verify.h"

#include <cmath>

namespace bp::app {

// The measured figures of a recorded session (the verification replay).
Result<TuneFigures> measuredFigures(const TraceStore &store, std::int64_t sessionId, std::size_t requests,
                                    const TuneSlo &slo)
{
    auto rows = store.requests(sessionId);
    if (!rows)
        return rows.status();
    std::vector<TuneSample> samples;
    samples.reserve(rows->size());
    for (const StoredRequest &r : *rows)
        samples.push_back(tuneSampleOf(r));
    TuneFigures f = figuresOf(samples, requests, slo);
    auto batches = store.batches(sessionId);
    if (!batches)
        return batches.status();
    std::size_t members = 0;
    for (const StoredBatch &b : *batches)
        members += std::size_t(b.size);
    f.meanBatch = batches->empty() ? 0 : double(members) / double(batches->size());
    return f;
}

} // namespace bp::app
