#include "backend.h"
#include "kept_blocks.h"

#include <mutex>
#include <unordered_map>

namespace bp {

namespace {

// The fake language model behind builtin:echo's generation: the next token
// is a function of the whole sequence so far (a 64-bit running hash of every
// token fed, in order, so position is part of it). Like a real greedy decoder
// it depends on nothing else, so the same tokens come out whether a prompt is
// fed at once, in chunks, or again after a preemption (prompt + the tokens
// generated so far), and whether the sequence runs alone or beside others.
// With a vocabulary that covers them the tokens are the letters a-z, so text
// stays readable.
struct EchoSequence {
    std::uint64_t hash = 0x9e3779b97f4a7c15ULL;
    std::int64_t length = 0; // tokens fed so far (what a KV cache would hold)

    void feed(TokenId token)
    {
        std::uint64_t z = hash ^ (std::uint64_t(std::uint32_t(token)) + 0x9e3779b97f4a7c15ULL + (hash << 6));
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL; // splitmix64's finaliser
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        hash = z ^ (z >> 31);
        ++length;
    }
    TokenId next(int vocab) const
    {
        if (vocab > 'z')
            return TokenId('a' + int(hash % 26));
        return TokenId(hash % std::uint64_t(vocab));
    }
};

class EchoBackend final : public Backend, public StepModel {
public:
    EchoBackend(int vocab, int maxLen)
    {
        m_info.name = "builtin:echo";
        m_info.vocabSize = vocab;
        m_info.maxSequenceLength = maxLen;
        m_info.generative = true;
        m_info.maxNewTokensLimit = maxLen;
        m_info.description =
            "no compute: max_new_tokens 0 returns the input tokens, n > 0 generates n tokens from "
            "a hash of the sequence (a deterministic fake decoder; steps too)";
    }
    const ModelInfo &info() const override { return m_info; }

    // max_new_tokens 0: the input itself. n > 0: n tokens from the fake
    // decoder, the same ones step() gives for the same prompt.
    Status run(const BatchInput &input, std::vector<SequenceResult> &out) override
    {
        for (std::size_t i = 0; i < input.requests.size(); ++i) {
            const Request &r = *input.requests[i];
            if (r.maxNewTokens <= 0) {
                out[i].tokens = r.tokens;
                continue;
            }
            EchoSequence s;
            for (TokenId t : r.tokens)
                s.feed(t);
            out[i].tokens.clear();
            out[i].tokens.reserve(std::size_t(r.maxNewTokens));
            for (int n = 0; n < r.maxNewTokens; ++n) {
                const TokenId t = s.next(m_info.vocabSize);
                out[i].tokens.push_back(t);
                s.feed(t);
                if (r.onToken)
                    r.onToken(TokenEvent{r.id, t, n, SteadyClock::now()});
            }
        }
        return Status::ok();
    }

    StepModel *steps() override { return this; }

    Status step(const std::vector<StepItem> &items, std::vector<StepOutcome> &out) override
    {
        out.assign(items.size(), StepOutcome{});
        if (Status s = checkDistinctSequences(items); !s)
            return s;
        const std::int64_t limit = std::int64_t(m_info.maxSequenceLength) + m_info.maxNewTokensLimit;
        std::lock_guard lock(m_mutex);
        for (std::size_t i = 0; i < items.size(); ++i) {
            const StepItem &item = items[i];
            const auto it = m_sequences.find(item.sequence);
            EchoSequence s = it != m_sequences.end() ? it->second : EchoSequence{};
            if (it == m_sequences.end() && !item.prefix.empty()) {
                // Prefix caching: the state after the last kept block (the
                // hash of everything before it), as a decoder's KV cache.
                auto blocks = m_kept.chain(item.prefix);
                if (!blocks) {
                    out[i].status = blocks.status();
                    continue;
                }
                s = blocks->back();
            }
            if (Status bad = checkItem(item, s.length, limit); !bad) {
                out[i].status = std::move(bad);
                continue; // the sequence stays as it was (a new one is not started)
            }
            std::size_t publish = 0;
            for (TokenId t : item.tokens) {
                s.feed(t);
                while (publish < item.publish.size() &&
                       item.publish[publish].start + item.publish[publish].tokens <= s.length) {
                    if (item.publish[publish].start + item.publish[publish].tokens == s.length)
                        m_kept.keep(item.publish[publish].hash, s);
                    ++publish;
                }
            }
            if (item.sample)
                out[i].next = s.next(m_info.vocabSize);
            m_cached += s.length - (it != m_sequences.end() ? it->second.length : 0);
            m_sequences[item.sequence] = s;
        }
        return Status::ok();
    }

    void release(std::uint64_t sequence) override
    {
        std::lock_guard lock(m_mutex);
        if (const auto it = m_sequences.find(sequence); it != m_sequences.end()) {
            m_cached -= it->second.length;
            m_sequences.erase(it);
        }
    }

    std::int64_t cachedTokens() const override
    {
        std::lock_guard lock(m_mutex);
        return m_cached;
    }
    bool cachesPrefixes() const override { return true; }
    void dropBlocks(const std::vector<std::uint64_t> &hashes) override { m_kept.drop(hashes); }

private:
    Status checkItem(const StepItem &item, std::int64_t length, std::int64_t limit) const
    {
        if (item.tokens.empty())
            return Status(StatusCode::InvalidArgument, "a step item without tokens");
        for (TokenId t : item.tokens)
            if (t < 0 || t >= m_info.vocabSize)
                return Status(StatusCode::OutOfRange, "token " + std::to_string(t) +
                                                          " outside the vocabulary of " +
                                                          std::to_string(m_info.vocabSize));
        if (length + std::int64_t(item.tokens.size()) > limit)
            return Status(StatusCode::OutOfRange, "sequence of " + std::to_string(length) + " + " +
                                                      std::to_string(item.tokens.size()) +
                                                      " tokens exceeds " + std::to_string(limit));
        return Status::ok();
    }

    ModelInfo m_info;
    mutable std::mutex m_mutex; // guards the two below; a step is a few hash updates
    std::unordered_map<std::uint64_t, EchoSequence> m_sequences;
    std::int64_t m_cached = 0;
    KeptBlocks<EchoSequence> m_kept; // prefix caching: the state at each kept block's end
};

} // namespace

std::shared_ptr<Backend> makeEchoBackend(int vocabSize, int maxSequenceLength)
{
    return std::make_shared<EchoBackend>(vocabSize, maxSequenceLength);
}

} // namespace bp
