// A trace database with known sessions, built through the real parts: an
// Engine on a fake clock (manual scheduling), a SessionRecorder (TraceSink +
// metric samples) and a virtual-clock Replayer. Deterministic: the same
// records every run.
//
//   live:   6 s of traffic, one arrival every 5 ms with lengths 1..50, a
//           third of them generating 1..3 tokens; every 97th has a 1 ms
//           deadline (some expire: timeouts), every 250th is too long for
//           the model (rejected at submit); a sample every second; the
//           config changes at 3 s (max_batch_size 8 -> 16, delay 2 -> 8 ms);
//           goodput SLO: TTFT <= 5 ms, TPOT <= 1 ms.
//   replay: that session replayed on the virtual clock with max_batch_size 4.
#pragma once

#include "engine/store/trace_store.h"

#include <QTemporaryDir>

#include <memory>

namespace bp::test {

struct ReportFixture {
    QTemporaryDir dir;
    std::shared_ptr<TraceStore> store;
    std::int64_t live = 0;
    std::int64_t replay = 0;
    std::size_t submitted = 0; // live requests handed to submit()
    QString error;             // why building failed; empty when it worked

    QString dbPath() const { return dir.filePath(QStringLiteral("report.sqlite")); }
};

// Builds the database in a fresh temporary directory.
std::unique_ptr<ReportFixture> buildReportFixture();

} // namespace bp::test
