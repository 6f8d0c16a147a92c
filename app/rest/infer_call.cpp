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

int InferCall::firstFailedRow() const
{
    // A row cancelled because a sibling failed (OpenAI prompts) must not
    // hide the sibling's reason: a failure other than `cancelled` first.
    int cancelled = -1;
    for (int i = 0; i < rows; ++i) {
        const Status &s = rowStatus(i);
        if (i == refusedRow || (!s.isOk() && s.code() != StatusCode::Cancelled))
            return i;
        if (!s.isOk() && cancelled < 0)
            cancelled = i;
    }
    return cancelled;
}

const Status &InferCall::rowStatus(int row) const
{
    return row == refusedRow ? refusal : responses[std::size_t(row)].status;
}

HttpReply InferCall::formatted() const
{
    if (const int failed = firstFailedRow(); failed >= 0) {
        const Status &s = rowStatus(failed);
        if (rows == 1 || kind == Kind::V1)
            return errorReply(s);
        // Which row (OIP) or prompt (OpenAI) it was.
        const std::string where = kind == Kind::Oip ? "row " + std::to_string(failed) + ": "
                                                    : "prompt[" + std::to_string(failed) + "]: ";
        return errorReply(Status(s.code(), where + s.message()));
    }
    if (kind == Kind::V1)
        return jsonReply(
            v1ResponseJson(responses.front(), modelName, tokenizer ? *tokenizer : ByteTokenizer::instance()));
    if (kind == Kind::OpenAi)
        return jsonReply(openAi.object(responses));
    return jsonReply(oipInferResponse(modelName, oip, responses));
}

} // namespace bp::rest
