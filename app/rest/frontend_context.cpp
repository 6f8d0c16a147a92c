#include "frontend_context.h"

#include "engine/core/nvtx.h"

namespace bp::rest {

FrontendContext::FrontendContext(Engine &engine_, RestOptions options_, QString version_)
    : engine(engine_), options(std::move(options_)), version(std::move(version_))
{
}

void FrontendContext::send(const ReplyTicket &ticket, HttpReply reply)
{
    ++responsesByCode[int(reply.status)];
    const nvtx::Range range(nvtx::Category::Rest,
                            [&] { return "write " + std::to_string(int(reply.status)); });
    ticket.send(std::move(reply));
}

} // namespace bp::rest
