#include "infer_call.h"

#include "v1_codec.h"

namespace bp::rest {

bool InferCall::deliver(int row, Response &&response)
{
    const auto i = std::size_t(row);
    Q_ASSERT(i < responses.size() && !answered[i]);
    responses[i] = std::move(response);
    answered[i] = true;
    return --outstanding == 0;
}

HttpReply InferCall::reply() const
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
    return jsonReply(oipInferResponse(modelName, oip, responses));
}

} // namespace bp::rest
