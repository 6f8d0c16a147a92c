#include "remote_exchange.h"

namespace bp::remote {

ExchangeBuilder::ExchangeBuilder(const RemoteOptions &options)
    : m_protocol(options.protocol), m_model(options.model), m_dialect(dialectFor(options.server)),
      m_timeout(options.timeout)
{
    m_headers = {{"Content-Type", "application/json"},
                 {"Accept", isStreaming(m_protocol) ? QByteArray("text/event-stream")
                                                    : QByteArray("application/json")}};
    if (!options.token.isEmpty())
        m_headers.append({"Authorization", "Bearer " + options.token.toUtf8()});
}

HttpExchange ExchangeBuilder::build(const QByteArray &route, const std::shared_ptr<InFlightRequest> &f) const
{
    HttpExchange ex;
    ex.method = "POST";
    ex.path = route;
    ex.headers = m_headers;
    ex.timeout = m_timeout;
    ex.body = requestBody(m_protocol, f->p.request, m_model, m_dialect);
    if (isStreaming(m_protocol)) {
        ex.onBodyPiece = [f](const QByteArray &piece, TimePoint at) {
            if (f->errorBody.size() < 4096)
                f->errorBody += piece.left(4096);
            f->sse.feed(piece, at);
        };
    }
    return ex;
}

} // namespace bp::remote
