// The tuner's search space (tuner.h says what it searches and how): the
// points of the coarse grid, the configs they stand for and the pattern
// search's neighbours. Internal to the tuner (tuner.cpp).
#pragma once

#include "engine/sim/tune/tuner.h"

#include <optional>
#include <vector>

namespace bp::tuning {

// A point of the search space; makeConfig() turns it into a BatchingConfig.
struct Point {
    PolicyKind policy = PolicyKind::Dynamic;
    bool adaptive = false;
    int size = 16;    // max batch / static size / continuous max_num_seqs
    Duration delay{}; // queue delay (adaptive: its max delay)
    int instances = 1;
    int buckets = 0;  // bucketed: the advisor's bucket count
    int tokens = 512; // continuous: max_num_batched_tokens
    // A server model's point (tune_space_servers.cpp): its kind, and the
    // knobs the fields above do not name (what each field means per server
    // is listed there).
    ServerKind server = ServerKind::BatchPilot;
    double ratio = 0;  // tgi waiting_served_ratio, sglang schedule_conservativeness
    bool flag = false; // vllm enable_chunked_prefill, triton preferred sizes {b/2, b}
    // continuous: prefix_cache.block_tokens with the cache on; 0 = the cache off.
    int prefixBlock = 0;
};

// The search space of a server model (o.base.server.kind is not BatchPilot):
// that server's knobs under their own meaning, one instance (the server's
// replicas are not a scheduler knob).
std::vector<Point> serverGrid(const TuneOptions &o, int longest);
std::optional<BatchingConfig> serverConfig(const TuneOptions &o, const Point &p);

struct Space {
    const TuneOptions &o;
    int longest = 1; // static's padded length
    int median = 1;  // hybrid's max static length

    explicit Space(const TuneOptions &options);
    // The config of a point; nullopt when it is not one (one bucket, or
    // outside the knob table's ranges).
    std::optional<BatchingConfig> makeConfig(const Point &p) const;
    // The coarse grid, every instance count.
    std::vector<Point> grid() const;
    // Policy continuous: the prefix cache block sizes searched, ascending
    // (16, 32, 64 and the trace's own block size when it has prefix blocks).
    std::vector<int> prefixBlocks() const;
};

// The pattern search's step sizes.
struct Steps {
    int size = 1;
    double delay = 0.5; // relative
    bool atMinimum() const { return size <= 1 && delay <= 0.0625 + 1e-9; }
    void halve()
    {
        size = std::max(1, size / 2);
        delay = std::max(0.0625, delay / 2);
    }
};

// The points one step away from `p`.
// `prefixBlocks`: Space::prefixBlocks() (continuous: the cache toggles, and
// its block size moves to the next smaller or larger one).
std::vector<Point> neighbours(const Point &p, const Steps &s, int maxInstances,
                              const std::vector<int> &prefixBlocks = {});
std::vector<Point> serverNeighbours(const Point &p, const Steps &s);

} // namespace bp::tuning
