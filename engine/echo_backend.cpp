#include "backend.h"

namespace bp {

namespace {

class EchoBackend final : public Backend {
public:
    EchoBackend(int vocab, int maxLen)
    {
        m_info.name = "builtin:echo";
        m_info.vocabSize = vocab;
        m_info.maxSequenceLength = maxLen;
        m_info.generative = true;
        m_info.maxNewTokensLimit = maxLen;
        m_info.description = "no compute; returns the input tokens";
    }
    const ModelInfo &info() const override { return m_info; }
    Status run(const BatchInput &input, std::vector<SequenceResult> &out) override
    {
        for (std::size_t i = 0; i < input.requests.size(); ++i) {
            const Request &r = *input.requests[i];
            const auto n = r.maxNewTokens > 0 ? std::min<std::size_t>(std::size_t(r.maxNewTokens), r.tokens.size())
                                              : r.tokens.size();
            out[i].tokens.assign(r.tokens.begin(), r.tokens.begin() + std::ptrdiff_t(n));
        }
        return Status::ok();
    }

private:
    ModelInfo m_info;
};

} // namespace

std::shared_ptr<Backend> makeEchoBackend(int vocabSize, int maxSequenceLength)
{
    return std::make_shared<EchoBackend>(vocabSize, maxSequenceLength);
}

} // namespace bp
