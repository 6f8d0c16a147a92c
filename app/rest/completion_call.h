// The part of an inference call that is an OpenAI completion
// (POST /v1/completions, openai_codec.h): its identity, and for `stream`
// the state of the server-sent-event answer as tokens arrive.
//
// A stream's head (200, text/event-stream, chunked) goes out with its first
// piece, so anything that fails before a token exists (admission, a full
// queue, a deadline) is still an ordinary HTTP error with its status code.
// Tokens reported by the engine one by one (Request::onToken) each become
// one `data:` chunk; tokens the backend only hands over with the completion
// are sent then, one chunk each. The last chunk carries finish_reason and
// usage, then `data: [DONE]`. An error after the head is one `data:` event
// {"error": {...}} before `[DONE]`.
//
// Server thread only.
#pragma once

#include "openai_codec.h"

#include <QByteArray>

#include <atomic>
#include <memory>

namespace bp::rest {

struct CompletionCall {
    std::string id;           // "cmpl-7"
    std::int64_t created = 0; // Unix seconds
    std::string model;
    bool stream = false;
    int maxTokens = 0;
    std::size_t promptTokens = 0;
    // Set when the client goes away; the engine then stops the request.
    std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);

    // Stream: the bytes to write for the next generated token (the head
    // first, then one framed chunk).
    QByteArray tokenPiece(TokenId token);
    // Stream: the bytes that end it after `response` completed OK: chunks for
    // tokens not reported one by one, the closing chunk, [DONE], the end of
    // the chunked body.
    QByteArray finishPiece(const Response &response);
    // Stream, after the head: an error event, [DONE], the end of the body.
    QByteArray errorPiece(const Status &status);
    bool headSent() const { return m_headSent; }
    std::size_t tokensSent() const { return m_tokensSent; }

    // Not streamed: the completion object.
    nlohmann::json object(const Response &response) const;

private:
    QByteArray head();
    QByteArray event(const std::string &text, const std::string &finishReason = {},
                     std::size_t completionTokens = 0);

    bool m_headSent = false;
    std::size_t m_tokensSent = 0;
    TokenTextStream m_text;
};

} // namespace bp::rest
