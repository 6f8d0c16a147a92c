// Helpers shared by the model tests: building batches, running them through
// a Backend, and comparing float outputs. Torch-free.
#pragma once

#include "engine/model/backend.h"
#include "engine/model/model_registry.h"

#include <QtTest>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace bp::testing {

inline std::vector<TokenId> randomTokens(std::mt19937 &rng, int length, int vocab = 256)
{
    std::uniform_int_distribution<TokenId> dist(0, vocab - 1);
    std::vector<TokenId> t(static_cast<std::size_t>(length));
    for (auto &id : t)
        id = dist(rng);
    return t;
}

inline Request makeRequest(std::vector<TokenId> tokens, int maxNewTokens = 0)
{
    Request r;
    r.tokens = std::move(tokens);
    r.maxNewTokens = maxNewTokens;
    return r;
}

// Runs `requests` as one batch padded to `paddedLength` (0 = the longest).
inline std::vector<SequenceResult> runBatch(Backend &backend, const std::vector<Request> &requests,
                                            int paddedLength = 0, Status *statusOut = nullptr)
{
    BatchInput input;
    for (const auto &r : requests) {
        input.requests.push_back(&r);
        paddedLength = std::max(paddedLength, int(r.tokens.size()));
    }
    input.paddedLength = paddedLength;
    std::vector<SequenceResult> out(requests.size());
    Status s = backend.run(input, out);
    if (statusOut)
        *statusOut = s;
    else if (!s)
        qWarning("batch failed: %s", s.toString().c_str());
    return out;
}

// Largest |a-b| / (1 + |b|) over two equally long vectors; +inf when the
// sizes differ, NaNs count as +inf.
inline double maxRelativeDifference(const std::vector<float> &a, const std::vector<float> &b)
{
    if (a.size() != b.size())
        return INFINITY;
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = std::fabs(double(a[i]) - double(b[i])) / (1.0 + std::fabs(double(b[i])));
        if (!(d == d))
            return INFINITY;
        worst = std::max(worst, d);
    }
    return worst;
}

inline std::shared_ptr<Backend> createOrFail(const ModelSpec &spec)
{
    auto created = createBackend(spec);
    if (!created) {
        qWarning("createBackend(%s) failed: %s", spec.name.c_str(), created.status().toString().c_str());
        return nullptr;
    }
    return std::move(created.value());
}

inline ModelSpec testSpec(const std::string &name)
{
    ModelSpec spec;
    spec.name = name;
    spec.preset = "test";
    spec.device = "cpu";
    spec.threads = 1;
    spec.seed = 7;
    return spec;
}

} // namespace bp::testing
