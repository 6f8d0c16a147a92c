#include "infer_call.h"

#include "v1_codec.h"

#include <algorithm>
#include <cstdio>

namespace bp::rest {

bool InferCall::deliver(int row, Response &&response)
{
    const auto i = std::size_t(row);
    Q_ASSERT(i < responses.size() && !answered[i]);
    responses[i] = std::move(response);
    answered[i] = true;
    return --outstanding == 0;
}

HttpReply InferCall::withServerTiming(HttpReply reply, SteadyTime now) const
{
    using Ms = std::chrono::duration<double, std::milli>;
    double engineMs = 0;
    for (std::size_t i = 0; i < answered.size(); ++i)
        if (answered[i])
            engineMs = std::max(engineMs, Ms(responses[i].timing.total).count());
    const SteadyTime admitted = submitted == SteadyTime{} ? now : submitted;
    char text[128];
    std::snprintf(text, sizeof text, "admit;dur=%.3f, engine;dur=%.3f, total;dur=%.3f",
                  Ms(admitted - received).count(), engineMs, Ms(now - received).count());
    return std::move(reply.withHeader("Server-Timing", text));
}

HttpReply InferCall::reply(SteadyTime now) const
{
    return withServerTiming(formatted(), now);
}

HttpReply InferCall::formatted() const
{
    for (int i = 0; i < rows; ++i) {
        if (i == refusedRow)
            return kind == Kind::Oip && rows > 1 ? errorReply(Status(refusal.code(), "row " + std::to_string(i) + ": " +
                                                                                         refusal.message()))
                                                 : errorReply(refusal);
        const Status &s = responses[std::size_t(i)].status;
        if (!s.isOk())
            return kind == Kind::Oip && rows > 1 ? errorReply(Status(s.code(), "row " + std::to_string(i) + ": " +
                                                                                   s.message()))
                                                 : errorReply(s);
    }
    if (kind == Kind::V1)
        return jsonReply(v1ResponseJson(responses.front(), modelName));
    if (kind == Kind::Completion)
        return jsonReply(completion.object(responses.front()));
    return jsonReply(oipInferResponse(modelName, oip, responses));
}

} // namespace bp::rest
