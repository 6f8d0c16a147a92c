// What a paged decoder's two paths share: the KV pool, the runner (and its
// CUDA graphs), and greedy generation of a whole batch on them.
//
//  - Backend::run (request-level policies): generate() gives every request
//    of the batch its blocks up front (prompt + max_new_tokens - 1 slots: the
//    last token is never fed back), prefills all prompts in steps of at most
//    kPrefillTokens tokens, then runs one decode step per further token over
//    the members still generating — finished ones leave at once, and no
//    sequence is padded to another's length (BatchInput::paddedLength does
//    not cost a decoder anything).
//  - StepModel (policy `continuous`): PagedStepModel (trunk_steps.h) keeps
//    live sequences between steps.
//
// The pool is sized by prepare() (Backend::prepareKv, called when an engine
// starts on the model) or, when a path runs before that, from the defaults.
// On CUDA at kv_cache_tokens 0 it is sized after a warm-up of the largest
// step (kPrefillTokens) and the graph captures, both run on a provisional
// pool: kv_memory_fraction of free memory less what they took. A different request
// re-creates the pool (and recaptures the graphs) only while no block is in
// use; otherwise it is refused (Unavailable), and the pool in use stays.
//
// Thread-safe: generate() may run concurrently with itself and with steps
// (disjoint sequences); prepare() takes an exclusive lock against both.
//
// Internal to engine/torch/ (includes ATen).
#pragma once

#include "engine/model/backend.h"
#include "kv_pool.h"
#include "paged_runner.h"

#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

namespace bp {

struct PagedGeneration {
    Status status;
    std::vector<TokenId> tokens;
    std::vector<std::vector<float>> logits; // [step][vocab], when asked for
    Duration firstTokenAfter{};
    Duration lastTokenAfter{};
};

class PagedDecoder {
public:
    static constexpr std::int64_t kPrefillTokens = 8192;

    // `trunk` must outlive this object. `cudaGraphs`: capture decode graphs
    // on CUDA when the pool is made.
    PagedDecoder(std::string name, const PagedTrunk &trunk, const KvPoolShape &shape, int maxPositions,
                 const at::Device &device, bool cudaGraphs);

    Status prepare(const KvPoolRequest &request);
    // A shared hold on the pool and runner, made with the defaults if
    // prepare() was not called; `status` says why there is none (the lock
    // is then not owned). pool() and runner() are valid while it is held.
    std::shared_lock<std::shared_mutex> acquire(Status &status);
    KvPool &pool() { return *m_pool; }
    PagedRunner &runner() { return *m_runner; }
    bool ready() const { return m_pool != nullptr; }

    // Greedy generation of a batch (the request-level path), with `wants[i]`
    // new tokens for `prompts[i]` (valid: non-empty, fitting the positions).
    // ResourceExhausted when the pool cannot hold the batch. Request::onToken
    // is called for every token when `requests` is given.
    Status generate(const std::vector<const std::vector<TokenId> *> &prompts, const std::vector<int> &wants,
                    const std::vector<const Request *> &requests, bool keepLogits,
                    std::vector<PagedGeneration> &out);

    // Token slots of the pool's blocks in use (0 before the pool exists).
    std::int64_t usedTokens() const;
    // Log lines: the pool, the graphs (empty before the pool exists).
    std::vector<std::string> notes() const;
    const KvPoolShape &shape() const { return m_shape; }

private:
    // What the largest step and the graph captures take on the device,
    // measured on a provisional pool (CUDA; kv_cache_tokens 0).
    struct StepMemory {
        std::int64_t stepTokens = 0;
        std::int64_t activations = 0; // the step's peak beyond what was held
        std::int64_t graphs = 0;      // what the captures reserved
    };
    Result<StepMemory> measureStepMemory(const KvPoolRequest &request);
    Status makeLocked(const KvPoolRequest &request);

    std::string m_name;
    const PagedTrunk &m_trunk;
    KvPoolShape m_shape;
    int m_maxPositions;
    at::Device m_device;
    bool m_cudaGraphs;
    mutable std::shared_mutex m_mutex; // exclusive: (re)making the pool; shared: using it
    std::unique_ptr<KvPool> m_pool;
    std::unique_ptr<PagedRunner> m_runner;
    std::string m_graphNote;
};

} // namespace bp
