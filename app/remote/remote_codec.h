// What a remote replay puts on the wire and reads back, per protocol, as
// pure functions (tested without a server):
//  - OIP (KServe v2 `infer`): one request = one row, input_ids INT64
//    [1, L], and max_new_tokens as a request parameter when the replay
//    asks for generation. The answer's output_lengths (BatchPilot) or
//    output_ids shape gives the output tokens.
//  - OpenAI `/v1/completions`, streaming: the prompt as token ids,
//    max_tokens, stream: true. Server-sent events are read as they
//    arrive: every event that carries text is a token event (its arrival
//    time gives TTFT and the inter-token gaps), `usage.completion_tokens`
//    when the server sends it is the output count, `data: [DONE]` ends it.
#pragma once

#include "engine/request.h"

#include <QByteArray>
#include <QString>

#include <optional>
#include <vector>

namespace bp::remote {

enum class Protocol { Oip, OpenAi };
std::optional<Protocol> parseProtocol(const QString &name); // "oip" | "openai"
QString protocolName(Protocol protocol);

QByteArray oipInferBody(const Request &request);
QByteArray openAiCompletionBody(const Request &request, const QString &model);

// How an HTTP status reads as an engine status (what the store keeps).
// 2xx Ok; 400/422 InvalidArgument; 404 NotFound; 413 OutOfRange;
// 429 QueueFull; 503 Unavailable; 504/408 DeadlineExceeded; else Internal.
StatusCode statusForHttp(int httpStatus);

struct OipAnswer {
    int outputTokens = 0;
    QString error; // the body did not parse as an OIP answer
};
OipAnswer parseOipAnswer(const QByteArray &body);
// The "error" text of a JSON error body (OIP, OpenAI and BatchPilot all
// use {"error": "..."} or {"error": {"message": "..."}}); else the body's
// start.
QString errorText(const QByteArray &body);

// Reads an SSE stream piece by piece.
class SseReader {
public:
    void feed(const QByteArray &piece, TimePoint at);

    int tokenEvents() const { return m_tokenEvents; }
    std::optional<int> usageTokens() const { return m_usageTokens; }
    std::optional<TimePoint> firstToken() const { return m_first; }
    std::optional<TimePoint> lastToken() const { return m_last; }
    const std::vector<Duration> &gaps() const { return m_gaps; } // between token events
    bool done() const { return m_done; }                         // saw data: [DONE]
    const QString &error() const { return m_error; }             // an error event, or an unreadable one
    // usage when given, else the token events.
    int outputTokens() const { return m_usageTokens.value_or(m_tokenEvents); }

private:
    void event(const QByteArray &data, TimePoint at);

    QByteArray m_buffer;
    int m_tokenEvents = 0;
    std::optional<int> m_usageTokens;
    std::optional<TimePoint> m_first, m_last;
    std::vector<Duration> m_gaps;
    bool m_done = false;
    QString m_error;
};

} // namespace bp::remote
