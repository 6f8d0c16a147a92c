// The batching knobs. One struct, shared by the GUI, REST (`/v1/config`),
// the CLI (`--config FILE.json`) and replay. Every field has a documented
// default and valid range; validate() explains the first violation.
// docs/configuration.md lists the same table for operators.
#pragma once

#include "clock.h"
#include "status.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bp {

enum class PolicyKind {
    None,      // batch of one: the baseline every gain is measured against
    Static,    // wait for exactly static_batch_size requests, fixed padded length
    Dynamic,   // dispatch at max_batch_size or after max_queue_delay; pad to longest
    Bucketed,  // dynamic per length bucket ("grouped padding"); most overdue bucket first
};
std::string_view policyName(PolicyKind kind);
std::optional<PolicyKind> parsePolicy(std::string_view name);

struct BatchingConfig {
    PolicyKind policy = PolicyKind::Dynamic;

    // dynamic / bucketed: largest batch, in requests.          range [1, 1024]
    int maxBatchSize = 16;
    // dynamic / bucketed: how long the oldest request may wait for company.
    //                                                          range [0, 10 s]
    Duration maxQueueDelay = std::chrono::milliseconds(5);

    // static: the batch size N the policy waits for.           range [1, 1024]
    int staticBatchSize = 8;
    // static: every batch is padded to this length.            range [1, 65536]
    // Longer requests are rejected at submit under `static`; requests queued
    // before a switch to `static` are padded to their own length instead.
    int staticPaddedLength = 128;
    // static: on shutdown, may a partial batch run (true) or fail (false)?
    bool staticFlushOnDrain = true;

    // bucketed: ascending upper edges (inclusive) of the length buckets.
    // Lengths above the last edge go to an overflow bucket.
    // 1..32 edges, each in [1, 65536], strictly increasing.
    std::vector<int> bucketEdges = {64, 128, 256, 512, 1024};

    // admission queue depth (all buckets together).             range [1, 1'000'000]
    int queueCapacity = 4096;
    // executor threads = model instances running batches.      range [1, 16]
    int instances = 1;

    bool operator==(const BatchingConfig &) const = default;

    // Number of queues the policy keeps: edges+1 for `bucketed`, else 1.
    int queueCount() const;
    // Queue index for a sequence of `length` tokens under this config.
    int bucketFor(int length) const;
};

// OK, or InvalidArgument naming the field, the value and the range.
Status validate(const BatchingConfig &config);

// Human-readable difference for config markers and logs, e.g.
// "max_batch_size 16→32, max_queue_delay 5ms→2ms". Empty when equal.
std::string describeChange(const BatchingConfig &before, const BatchingConfig &after);

// "250µs", "5ms", "1.5s"
std::string formatDuration(Duration d);

} // namespace bp
