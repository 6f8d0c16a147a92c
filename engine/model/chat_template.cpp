// The only file that includes minja: its header defines a global `json`
// alias and is compiled once here (as a SYSTEM include, so its warnings stay
// out of ours).
#include "chat_template.h"

#include <minja/minja.hpp>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

namespace bp {

struct ChatTemplate::Impl {
    std::shared_ptr<minja::TemplateNode> root;
};

ChatTemplate::ChatTemplate(std::string source, std::map<std::string, std::string> specials,
                           std::unique_ptr<Impl> impl)
    : m_source(std::move(source)), m_specials(std::move(specials)), m(std::move(impl))
{
}

ChatTemplate::~ChatTemplate() = default;

Result<std::shared_ptr<const ChatTemplate>>
ChatTemplate::parse(const std::string &source, std::map<std::string, std::string> specialTokens)
{
    auto impl = std::make_unique<Impl>();
    try {
        // transformers' environment: trim_blocks, lstrip_blocks, and Jinja's
        // default of dropping the template's final newline.
        impl->root = minja::Parser::parse(source, minja::Options{true, true, false});
    } catch (const std::exception &e) {
        return Status(StatusCode::InvalidArgument,
                      std::string("the chat template does not parse: ") + e.what());
    }
    return std::shared_ptr<const ChatTemplate>(
        new ChatTemplate(source, std::move(specialTokens), std::move(impl)));
}

Result<std::shared_ptr<const ChatTemplate>> ChatTemplate::load(const std::string &folder)
{
    const auto dir = std::filesystem::path(folder);
    std::string source;
    if (std::ifstream t(dir / "chat_template.jinja"); t)
        source.assign(std::istreambuf_iterator<char>(t), std::istreambuf_iterator<char>());
    nlohmann::json config;
    if (std::ifstream c(dir / "tokenizer_config.json"); c) {
        config = nlohmann::json::parse(c, nullptr, false);
        if (config.is_discarded() || !config.is_object())
            return Status(StatusCode::InvalidArgument,
                          (dir / "tokenizer_config.json").string() + ": not a JSON object");
    } else if (source.empty()) {
        return Status(StatusCode::NotFound, "there is no chat_template.jinja or tokenizer_config.json");
    }
    if (source.empty() && config.contains("chat_template")) {
        const nlohmann::json &t = config["chat_template"];
        if (t.is_string())
            source = t.get<std::string>();
        else if (t.is_array())
            for (const nlohmann::json &named : t)
                if (named.is_object() && named.value("name", std::string()) == "default")
                    source = named.value("template", std::string());
    }
    if (source.empty())
        return Status(StatusCode::NotFound,
                      "neither chat_template.jinja nor tokenizer_config.json has a chat template");
    // A special token is a string or an AddedToken object ({"content": ...}).
    std::map<std::string, std::string> specials;
    for (const char *name : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
        const nlohmann::json v = config.is_object() ? config.value(name, nlohmann::json()) : nlohmann::json();
        if (v.is_string())
            specials[name] = v.get<std::string>();
        else if (v.is_object() && v.contains("content") && v["content"].is_string())
            specials[name] = v["content"].get<std::string>();
    }
    return parse(source, std::move(specials));
}

Result<std::string> ChatTemplate::render(const std::vector<ChatMessage> &messages,
                                         bool addGenerationPrompt) const
{
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const ChatMessage &msg : messages)
        list.push_back({{"role", msg.role}, {"content", msg.content}});
    try {
        auto context = minja::Context::make(
            nlohmann::ordered_json({{"messages", list}, {"add_generation_prompt", addGenerationPrompt}}));
        for (const auto &[name, value] : m_specials)
            context->set(name, minja::Value(value));
        context->set("strftime_now", minja::Value::callable([](const std::shared_ptr<minja::Context> &,
                                                               minja::ArgumentsValue &args) {
                         args.expectArgs("strftime_now", {1, 1}, {0, 0});
                         const std::time_t now =
                             std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
                         std::tm local{};
                         localtime_r(&now, &local);
                         std::ostringstream out;
                         out << std::put_time(&local, args.args[0].get<std::string>().c_str());
                         return minja::Value(out.str());
                     }));
        return m->root->render(context);
    } catch (const std::exception &e) {
        return Status(StatusCode::InvalidArgument,
                      std::string("the chat template failed to render: ") + e.what());
    }
}

} // namespace bp
