// The answer of one OpenAI request (openai_api.h): its identity, its
// choices, and for `stream` the server-sent-event stream as tokens arrive.
//
// A stream's head (200, text/event-stream, chunked) goes out with its first
// piece, so anything that fails before a token exists (admission, a full
// queue, a deadline) is still an ordinary HTTP error with its status code.
// Each token becomes one `data:` chunk for its choice (a chat stream opens
// each choice with a role delta, sent with its first token); tokens the
// backend hands over only with the completion are sent then, one chunk
// each. A choice ends with a chunk carrying its finish_reason; once every
// choice has ended, `stream_options.include_usage` adds a chunk with empty
// choices and the usage (every other chunk then carries "usage": null;
// without it the last finishing chunk carries the usage), then
// `data: [DONE]`. An error after the head is one `data:` event
// {"error": {...}} (the OpenAI error object) before `[DONE]`.
//
// Server thread only.
#pragma once

#include "openai_codec.h"

#include <QByteArray>

#include <cstdint>
#include <string>
#include <vector>

namespace bp::rest {

class OpenAiCall {
public:
    OpenAiCall() = default;
    // `request`: what was parsed (its prompts are submitted elsewhere).
    OpenAiCall(const OpenAiRequest &request, std::string id, std::int64_t created, std::string model);

    bool stream() const { return m_stream; }
    int choices() const { return int(m_choices.size()); }

    // Stream: the bytes to write for the next generated token of a choice
    // (the head first, then framed chunks).
    QByteArray tokenPiece(int choice, TokenId token);
    // Stream: a choice completed OK: chunks for tokens not reported one by
    // one, then its closing chunk.
    QByteArray choicePiece(int choice, const Response &response);
    // Stream, every choice closed: the usage chunk (include_usage), [DONE],
    // the end of the chunked body.
    QByteArray endPiece();
    // Stream, after the head: an error event, [DONE], the end of the body.
    QByteArray errorPiece(const Status &status);
    bool headSent() const { return m_headSent; }
    // The stream has ended (endPiece or errorPiece written).
    bool ended() const { return m_ended; }

    // Not streamed: the completion (or chat completion) object.
    nlohmann::json object(const std::vector<Response> &responses) const;

private:
    struct Choice {
        std::size_t promptTokens = 0;
        std::size_t tokensSent = 0;
        std::size_t generated = 0;
        bool roleSent = false;
        bool closed = false;
        TokenTextStream text;
    };
    QByteArray head();
    // One chunk for `choice`: text (or content) and, on its last chunk, the
    // finish reason; usage as the stream options want it.
    QByteArray event(int choice, const std::string &text, const std::string &finishReason = {});
    // A chat choice's opening {"role": "assistant"} delta, once.
    QByteArray roleEvent(int choice);
    QByteArray frame(const nlohmann::json &data) const;
    nlohmann::json usage(bool soFar) const;
    const TextTokenizer &tokenizer() const;

    OpenAiEndpoint m_endpoint = OpenAiEndpoint::Completions;
    std::string m_id; // "cmpl-7", "chatcmpl-8"
    std::int64_t m_created = 0;
    std::string m_model;
    int m_maxTokens = 0;
    bool m_stream = false;
    std::shared_ptr<const TextTokenizer> m_tokenizer; // null: the byte tokenizer
    bool m_includeUsage = false;
    bool m_continuousUsage = false;
    std::vector<Choice> m_choices;
    int m_closedChoices = 0;
    bool m_headSent = false;
    bool m_ended = false;
};

} // namespace bp::rest
