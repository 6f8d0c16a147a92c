// Token ids for a trace's prefix structure, without Qt. A trace that carries
// prefix blocks (Mooncake's `hash_ids`: one id per `blockTokens` prompt
// tokens, position-aware, so an id stands for its whole prefix) is replayed
// with the SAME token ids for the same hash id: two requests that share
// leading hash ids share a leading run of token ids exactly, so a prefix
// cache in the embedded engine, the simulator or a remote server (vLLM's
// automatic prefix caching, SGLang's RadixAttention) sees the reuse the
// trace recorded. A block's ids are drawn from a generator seeded by the hash
// id alone (and the vocabulary), so they are the same in every replay,
// process and target. Tokens past the last block (and every token of a
// request without hash ids) are drawn from the caller's generator, as before.
//
// Multi-turn conversations: the next turn's prompt is the previous prompt,
// then the previous answer (the ids the engine or server returned when it
// returned them, else a deterministic stand-in of the answer's length), then
// the new user text (nextTurnPrompt).
#pragma once

#include "trace_csv.h"

#include "engine/core/request.h"

#include <random>
#include <vector>

namespace bp {

// The ids of one whole block (blockTokens of them) for `hashId`.
std::vector<TokenId> blockTokenIds(std::int64_t hashId, int blockTokens, int vocabSize);

// A prompt of `inputTokens` ids: block i of `blocks` fills tokens
// [i·blockTokens, (i+1)·blockTokens) (the last block may be cut short by
// the length); the rest comes from `rng`. `blockTokens` <= 0 or no blocks:
// every id from `rng`.
std::vector<TokenId> promptTokens(const PrefixBlocks &blocks, int blockTokens, int inputTokens, int vocabSize,
                                  std::mt19937_64 &rng);

// previous prompt + answer + new text. `answer` is what the target returned
// (the engine's generated ids); when it is empty (a remote server answers
// in text, a failed turn), a stand-in of `answerLength` ids seeded by
// `standInSeed` takes its place.
std::vector<TokenId> nextTurnPrompt(const std::vector<TokenId> &previousPrompt,
                                    const std::vector<TokenId> &answer, int answerLength,
                                    std::uint64_t standInSeed, const std::vector<TokenId> &newText,
                                    int vocabSize);

// How much of a workload's prompt tokens a prefix cache could serve with
// unbounded room: tokens in blocks seen before, over all prompt tokens. The
// Advisor and `batchpilot tune` show it before they search.
struct PrefixShare {
    std::uint64_t promptTokens = 0;
    std::uint64_t reusableTokens = 0;
    double share() const { return promptTokens ? double(reusableTokens) / double(promptTokens) : 0.0; }
};
// From hash ids: block i of a request covers min(blockTokens, input − i·blockTokens)
// tokens; `hashIds` empty or one list per row.
PrefixShare prefixShare(const std::vector<TraceRow> &rows, const std::vector<PrefixBlocks> &hashIds,
                        int blockTokens);
// From token runs: each request's whole blocks of `blockTokens` ids, chained
// (a block's key is its ids and its parent's key), counted as reusable when
// the key was seen in an earlier request.
PrefixShare prefixShareOfTokens(const std::vector<std::vector<TokenId>> &prompts, int blockTokens);

} // namespace bp
