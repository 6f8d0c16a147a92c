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
//  - OpenAI `/v1/chat/completions`, streaming (openai-chat): one user
//    message whose text stands for the prompt (chatText: one short word
//    per prompt token), max_completion_tokens, stream: true and
//    stream_options.include_usage. Token events are the chunks whose
//    `delta.content` carries text (the opening role delta is not one).
//  - A server of a known kind (ServerDialect, from `calibrate --server` or
//    the kind /metrics shows) gets what it needs beyond those fields: TGI
//    the completions prompt as text (its /v1/completions takes no token
//    ids), vLLM and SGLang "ignore_eos" (and vLLM "min_tokens") so that
//    every answer runs to max_tokens; llama-server "timings_per_token",
//    so each chunk says how many tokens it holds. The official OpenAI API and unknown
//    servers get the plain bodies (they refuse fields they do not know).
#pragma once

#include "engine/core/request.h"

#include <QByteArray>
#include <QString>

#include <optional>
#include <string>
#include <vector>

namespace bp::remote {

enum class Protocol { Oip, OpenAi, OpenAiChat };
std::optional<Protocol> parseProtocol(const QString &name); // "oip" | "openai" | "openai-chat"
QString protocolName(Protocol protocol);
// The names parseProtocol() takes, for help and error texts: "oip|openai|openai-chat".
QString protocolNames();
// The answer streams as server-sent events (both OpenAI protocols).
bool isStreaming(Protocol protocol);
// The route under the target's base path.
QByteArray routeFor(Protocol protocol, const QString &model);

// What the OpenAI bodies add for a server of a known kind.
struct ServerDialect {
    // /v1/completions' prompt as text (chatText), not token ids: TGI's
    // CompletionRequest takes a string or strings only (422 otherwise).
    bool textPrompt = false;
    // "ignore_eos": true, so the answer runs to max_tokens: an extra
    // sampling parameter of vLLM's and SGLang's completions and chat
    // requests (TGI's OpenAI routes have none).
    bool ignoreEos = false;
    // "min_tokens": max_tokens (vLLM's extra sampling parameter): no stop
    // before max_tokens, not even on a stop token ignore_eos leaves.
    bool minTokens = false;
    // "timings_per_token": true (llama-server): every chunk carries
    // timings.predicted_n, the tokens generated so far, so a chunk that
    // holds two tokens (a UTF-8 character split between them) reads as two
    // steps (SseReader::tokenCounts).
    bool tokenCounts = false;
    // llama-server's "id_slot": the slot this request takes (-1: the one
    // the server picks). The probe gives a round's streams slots 0, 1, ...
    // (ProbeRunOptions::pinSlots).
    int slot = -1;
    bool operator==(const ServerDialect &) const = default;
};
// The dialect of a server kind ("vllm", "tgi", "sglang", ...; empty or any
// other kind: none, the plain OpenAI bodies).
ServerDialect dialectFor(const std::string &server);
// What the dialect changes in `protocol`'s bodies, for a progress line;
// empty for nothing.
std::string describe(const ServerDialect &dialect, Protocol protocol);

// The request body for `request` in `protocol` (OIP ignores the dialect).
QByteArray requestBody(Protocol protocol, const Request &request, const QString &model,
                       const ServerDialect &dialect = {});

QByteArray oipInferBody(const Request &request);
QByteArray openAiCompletionBody(const Request &request, const QString &model,
                                const ServerDialect &dialect = {});
QByteArray openAiChatBody(const Request &request, const QString &model, const ServerDialect &dialect = {});
// The user message of openai-chat: one word per prompt token, a letter
// from the token id followed by a space ("k d q "). A remote server has its
// own tokenizer, and BatchPilot sends ids only where the protocol takes
// ids; on BPE tokenizers (GPT-2, Llama) a " x" word is about one token, so
// the prompt's length is close to the trace's, and distinct ids give
// distinct prompts (no accidental prefix-cache hits).
QByteArray chatText(const std::vector<TokenId> &tokens);

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
    // The tokens generated up to each token event, where every one said
    // (llama-server's timings.predicted_n: ServerDialect::tokenCounts);
    // else empty.
    std::vector<int> tokenCounts() const { return m_countsKnown ? m_counts : std::vector<int>{}; }
    bool done() const { return m_done; }             // saw data: [DONE]
    const QString &error() const { return m_error; } // an error event, or an unreadable one
    // usage when given, else the token events.
    int outputTokens() const { return m_usageTokens.value_or(m_tokenEvents); }

private:
    void event(const QByteArray &data, TimePoint at);

    QByteArray m_buffer;
    int m_tokenEvents = 0;
    std::optional<int> m_usageTokens;
    std::optional<TimePoint> m_first, m_last;
    std::vector<Duration> m_gaps;
    std::vector<int> m_counts;
    bool m_countsKnown = true;
    bool m_done = false;
    QString m_error;
};

} // namespace bp::remote
