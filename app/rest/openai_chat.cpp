#include "openai_chat.h"

#include "v1_codec.h"

#include "engine/core/tokenizer.h"

#include <algorithm>
#include <optional>

namespace bp::rest {

using nlohmann::json;

namespace {
Status invalid(std::string message)
{
    return {StatusCode::InvalidArgument, std::move(message)};
}

bool knownRole(const std::string &role)
{
    return role == "system" || role == "developer" || role == "user" || role == "assistant" || role == "tool";
}

// A message's content: a string, text parts joined with "\n", or null ("").
Result<std::string> messageContent(const json &content, const std::string &where)
{
    if (content.is_null())
        return std::string();
    if (content.is_string())
        return content.get<std::string>();
    if (!content.is_array())
        return invalid(where + ".content must be a string or an array of text parts, got " +
                       content.type_name());
    std::string text;
    for (std::size_t j = 0; j < content.size(); ++j) {
        const json &part = content[j];
        const std::string at = where + ".content[" + std::to_string(j) + "]";
        if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
            return invalid(at + " must be an object with a \"type\"");
        const std::string type = part["type"].get<std::string>();
        if (type != "text")
            return invalid(at + " has type '" + type + "': only text parts are supported");
        if (!part.contains("text") || !part["text"].is_string())
            return invalid(at + " needs a string \"text\"");
        if (j > 0)
            text += '\n';
        text += part["text"].get<std::string>();
    }
    return text;
}

Result<std::vector<std::pair<std::string, std::string>>> parseMessages(const json &value)
{
    if (!value.is_array())
        return invalid(std::string("field 'messages' must be an array of messages, got ") +
                       value.type_name());
    if (value.empty())
        return invalid("field 'messages' is empty: give at least one message");
    std::vector<std::pair<std::string, std::string>> out;
    for (std::size_t i = 0; i < value.size(); ++i) {
        const json &m = value[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!m.is_object())
            return invalid(where + " must be an object with \"role\" and \"content\", got " + m.type_name());
        std::string role;
        std::string content;
        bool haveContent = false;
        for (const auto &[key, v] : m.items()) {
            if (key == "role") {
                if (!v.is_string() || !knownRole(v.get<std::string>()))
                    return invalid(where + ".role must be system, developer, user, assistant or tool, got " +
                                   v.dump());
                role = v.get<std::string>();
            } else if (key == "content") {
                auto text = messageContent(v, where);
                if (!text)
                    return text.status();
                content = std::move(*text);
                haveContent = true;
            } else if (key == "tool_calls") {
                if (!v.is_null() && !(v.is_array() && v.empty()))
                    return invalid(where + ".tool_calls: tool calls are not supported");
            } else if (key != "name" && key != "tool_call_id" && key != "refusal") {
                return invalid(where + " has unknown field '" + key + "' (role, content, name)");
            }
        }
        if (role.empty())
            return invalid(where + ".role is required");
        if (!haveContent && role != "assistant")
            return invalid(where + ".content is required");
        out.emplace_back(std::move(role), std::move(content));
    }
    return out;
}
} // namespace

std::string chatPrompt(const std::vector<std::pair<std::string, std::string>> &messages)
{
    std::vector<ChatMessage> chat;
    for (const auto &[role, content] : messages)
        chat.push_back({role, content});
    return ByteTokenizer::instance().chatPrompt(chat).value(); // the byte layout always renders
}

Result<OpenAiRequest> parseChatRequest(std::string_view body, const ModelInfo &model)
{
    auto parsed = parseJsonObject(body);
    if (!parsed)
        return parsed.status();
    OpenAiRequest out;
    out.endpoint = OpenAiEndpoint::Chat;
    std::optional<long long> maxTokens, maxCompletionTokens;
    bool haveMessages = false;
    for (const auto &[key, value] : parsed->items()) {
        if (key == "messages") {
            auto messages = parseMessages(value);
            if (!messages)
                return messages.status();
            // The model's chat template (a Hugging Face model's own, rendered
            // by the Jinja engine; the built-ins' plain layout). No template,
            // or one that fails to render (raise_exception included), is a
            // 400 with the engine's message.
            const TextTokenizer &tokenizer = tokenizerOf(model);
            std::vector<ChatMessage> chat;
            for (auto &[role, content] : *messages)
                chat.push_back({std::move(role), std::move(content)});
            auto prompt = tokenizer.chatPrompt(chat);
            if (!prompt)
                return invalid(prompt.status().message());
            Request r;
            r.tokens = tokenizer.encode(*prompt, !tokenizer.chatPromptHasSpecials());
            out.prompts.push_back(std::move(r));
            haveMessages = true;
        } else if (key == "max_tokens" || key == "max_completion_tokens") {
            long long n = -1;
            if (Status s = parseMaxTokens(key, value, n); !s)
                return s;
            if (!value.is_null())
                (key == "max_tokens" ? maxTokens : maxCompletionTokens) = n;
        } else if (key == "tools" || key == "functions") {
            if (!value.is_null() && !(value.is_array() && value.empty()))
                return invalid("field '" + key +
                               "' is not supported: BatchPilot renders the chat template without tools and "
                               "the model answers with text only");
        } else if (key == "tool_choice" || key == "function_call") {
            if (!value.is_null() && value != "none" && value != "auto")
                return invalid("field '" + key +
                               "' must be \"none\", \"auto\" or null: tools are not supported");
        } else if (key == "response_format") {
            if (!value.is_null() && !(value.is_object() && value.value("type", "") == "text"))
                return invalid("field 'response_format' is not supported beyond {\"type\": \"text\"}: "
                               "BatchPilot does not constrain the answer to JSON or a schema");
        } else {
            bool handled = false;
            if (Status s = parseCommonField(key, value, model, out, handled); !s)
                return s;
            if (!handled)
                return invalid(
                    "unknown field '" + key +
                    "' (messages, max_completion_tokens, max_tokens, stream, stream_options, model; "
                    "docs/rest.md lists the fields accepted and ignored)");
        }
    }
    if (!haveMessages)
        return invalid("field 'messages' is required (an array of {\"role\", \"content\"})");
    const long long promptLength = (long long)out.prompts.front().tokens.size();
    // Unset: what is left of the model's sequence after the prompt (at
    // least 1, so a prompt that is too long is refused for its length).
    const long long left = std::max<long long>(1, model.maxSequenceLength - promptLength);
    const long long fallback = std::min<long long>(left, std::max(1, model.maxNewTokensLimit));
    const long long wanted = maxCompletionTokens.value_or(maxTokens.value_or(fallback));
    const char *field = maxCompletionTokens ? "max_completion_tokens" : "max_tokens";
    if (Status s = finishRequest(out, wanted, model, field); !s)
        return s;
    return out;
}

} // namespace bp::rest
