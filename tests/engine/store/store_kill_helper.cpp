// Helper for test_store_crash: logs synthetic batches into a trace store
// through a TraceSink until it is killed. After every committed transaction
// it prints "committed N" (N = rows committed so far) and flushes stdout, so
// the test knows what must survive the SIGKILL.
//
// usage: store_kill_helper DB_PATH
#include "engine/store/trace_sink.h"
#include "engine/store/trace_store.h"

#include <cstdio>
#include <thread>

using namespace bp;

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: store_kill_helper DB_PATH\n");
        return 2;
    }
    auto store = TraceStore::open(argv[1]);
    if (!store) {
        std::fprintf(stderr, "store_kill_helper: %s\n", store.status().toString().c_str());
        return 1;
    }
    SessionStart start;
    start.kind = "crash-test";
    auto session = (*store)->startSession(start);
    if (!session)
        return 1;
    TraceSinkOptions options;
    options.flushInterval = std::chrono::milliseconds(5);
    options.wakeRows = 512;
    options.onCommit = [](std::uint64_t rows) {
        std::printf("committed %llu\n", static_cast<unsigned long long>(rows));
        std::fflush(stdout);
    };
    const TimePoint epoch = SteadyClock::now();
    auto sink = TraceSink::create(argv[1], *session, epoch, options);
    if (!sink) {
        std::fprintf(stderr, "store_kill_helper: %s\n", sink.status().toString().c_str());
        return 1;
    }
    (*sink)->start();
    std::printf("session %lld\n", static_cast<long long>(*session));
    std::fflush(stdout);
    // Batches of 8 requests, forever (until SIGKILL).
    std::vector<RequestRecord> members(8);
    for (std::uint64_t batch = 1;; ++batch) {
        BatchRecord b;
        b.id = batch;
        b.size = int(members.size());
        b.dispatchedAt = SteadyClock::now();
        for (std::size_t i = 0; i < members.size(); ++i) {
            members[i].id = batch * 8 + i;
            members[i].batchId = batch;
            members[i].arrival = b.dispatchedAt;
            members[i].inputTokens = 16;
        }
        (*sink)->onBatchCompleted(b, members);
        if (batch % 64 == 0)
            std::this_thread::yield(); // a workload, not a busy loop that starves the writer
    }
}
