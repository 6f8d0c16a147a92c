#include "config_import.h"

#include "config_import_detail.h"
#include "knobs.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <regex>

namespace bp {

namespace import_detail {

std::string at(int line)
{
    return line > 0 ? "line " + std::to_string(line) + ": " : "";
}

Result<double> realNumber(std::string_view text, int line, std::string_view what)
{
    double v = 0;
    const char *end = text.data() + text.size();
    const char *first = text.data();
    if (!text.empty() && text.front() == '+')
        ++first;
    const auto [p, ec] = std::from_chars(first, end, v);
    if (text.empty() || ec != std::errc() || p != end || !std::isfinite(v))
        return Status(StatusCode::InvalidArgument,
                      at(line) + std::string(what) + " takes a number, not '" + std::string(text) + "'");
    return v;
}

Result<long long> wholeNumber(std::string_view text, int line, std::string_view what)
{
    auto v = realNumber(text, line, what);
    if (!v || *v != std::floor(*v) || std::abs(*v) > 9e15)
        return Status(StatusCode::InvalidArgument, at(line) + std::string(what) +
                                                       " takes a whole number, not '" + std::string(text) +
                                                       "'");
    return static_cast<long long>(*v);
}

Result<bool> boolean(std::string_view text, int line, std::string_view what)
{
    std::string t(text);
    std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (t == "true" || t == "1")
        return true;
    if (t == "false" || t == "0")
        return false;
    return Status(StatusCode::InvalidArgument,
                  at(line) + std::string(what) + " takes true or false, not '" + std::string(text) + "'");
}

nlohmann::json settingValue(std::string_view text)
{
    if (auto b = boolean(text, 0, ""))
        if (text != "0" && text != "1")
            return *b;
    if (auto v = realNumber(text, 0, ""))
        return *v == std::floor(*v) && std::abs(*v) < 9e15 ? nlohmann::json(static_cast<long long>(*v))
                                                           : nlohmann::json(*v);
    return std::string(text);
}

void ImportBuilder::record(std::string_view key)
{
    auto &keys = m_out.knobs;
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
        keys.emplace_back(key);
}

void ImportBuilder::knob(std::string_view key, double value, int line, std::string_view from)
{
    const Knob *k = findKnob(key);
    if (!k || !k->set)
        return;
    BatchingConfig trial = m_out.config;
    k->set(trial, value);
    if (Status s = checkKnob(*k, trial); !s) {
        note(at(line) + std::string(from) + ": " + s.message() + "; " + std::string(key) + " not set");
        return;
    }
    m_out.config = trial;
    record(key);
}

void ImportBuilder::knobList(std::string_view key, std::vector<int> values, int line, std::string_view from)
{
    const Knob *k = findKnob(key);
    if (!k || !k->itemsMut)
        return;
    BatchingConfig trial = m_out.config;
    k->itemsMut(trial) = std::move(values);
    if (Status s = checkKnob(*k, trial); !s) {
        note(at(line) + std::string(from) + ": " + s.message() + "; " + std::string(key) + " not set");
        return;
    }
    m_out.config = trial;
    record(key);
}

} // namespace import_detail

using namespace import_detail;

std::optional<ServerFormat> detectServerFormat(std::string_view t)
{
    const std::string text(t);
    // Ollama's variables first: its export's comments name llama.cpp.
    if (std::regex_search(text, std::regex(R"((^|[\s"'])OLLAMA_[A-Z_]+=)")))
        return ServerFormat::Ollama;
    if (std::regex_search(text, std::regex(R"((^|[\s/])llama-server\b)")))
        return ServerFormat::LlamaCpp;
    if (std::regex_search(text, std::regex(R"(\bvllm(\s+serve\b|\.entrypoints))")))
        return ServerFormat::Vllm;
    if (text.find("text-generation-launcher") != std::string::npos)
        return ServerFormat::Tgi;
    if (text.find("@serve.") != std::string::npos)
        return ServerFormat::RayServe;
    if (std::regex_search(text,
                          std::regex(R"((^|\n)\s*(batchSize|maxBatchDelay|minWorkers|maxWorkers)\s*:)")))
        return ServerFormat::TorchServe;
    if (std::regex_search(text,
                          std::regex(R"("?\b(max_batch_size|dynamic_batching|instance_group)\b"?\s*[:{\[])")))
        return ServerFormat::Triton;
    return std::nullopt;
}

Result<ImportedConfig> importConfig(std::string_view text, ServerFormat format)
{
    switch (format) {
    case ServerFormat::Triton: return importTritonText(text);
    case ServerFormat::Vllm:
    case ServerFormat::Tgi: return importCommandLine(text, format);
    case ServerFormat::TorchServe: return importTorchServe(text);
    case ServerFormat::RayServe: return importRayServe(text);
    case ServerFormat::LlamaCpp:
    case ServerFormat::Ollama: return importLlamaCpp(text, format);
    }
    return Status(StatusCode::InvalidArgument, "unknown format");
}

nlohmann::json settingFromText(std::string_view text)
{
    return settingValue(text);
}

nlohmann::json knobValues(const BatchingConfig &config, const std::vector<std::string> &keys)
{
    nlohmann::json out = nlohmann::json::object();
    for (const std::string &key : keys) {
        const Knob *k = findKnob(key);
        if (!k)
            continue;
        switch (k->type) {
        case KnobType::IntList: out[key] = k->items(config); break;
        case KnobType::Policy: out[key] = std::string(policyName(PolicyKind(int(k->get(config))))); break;
        case KnobType::Bool: out[key] = k->get(config) != 0; break;
        case KnobType::Int: out[key] = static_cast<long long>(std::llround(k->get(config))); break;
        case KnobType::Text: out[key] = k->text(config); break;
        default: out[key] = k->get(config); break;
        }
    }
    return out;
}

Result<BatchingConfig> applyKnobValues(const nlohmann::json &values, BatchingConfig c)
{
    if (!values.is_object())
        return Status(StatusCode::InvalidArgument, "knob values must be an object");
    for (const auto &[key, v] : values.items()) {
        const Knob *k = findKnob(key);
        if (!k)
            return Status(StatusCode::InvalidArgument, "'" + key + "' is not a knob");
        if (k->type == KnobType::IntList) {
            if (!v.is_array() ||
                !std::all_of(v.begin(), v.end(), [](const auto &e) { return e.is_number_integer(); }))
                return Status(StatusCode::InvalidArgument, key + " takes a list of whole numbers");
            k->itemsMut(c) = v.get<std::vector<int>>();
        } else if (k->type == KnobType::Policy) {
            const auto p = v.is_string() ? parsePolicy(v.get<std::string>()) : std::nullopt;
            if (!p)
                return Status(StatusCode::InvalidArgument, key + " takes a policy name");
            k->set(c, double(int(*p)));
        } else if (k->type == KnobType::Text) {
            if (!v.is_string())
                return Status(StatusCode::InvalidArgument, key + " takes a name");
            k->setText(c, v.get<std::string>());
        } else if (v.is_boolean()) {
            k->set(c, v.get<bool>() ? 1 : 0);
        } else if (v.is_number()) {
            k->set(c, v.get<double>());
        } else {
            return Status(StatusCode::InvalidArgument, key + " takes a number");
        }
        if (Status s = checkKnob(*k, c); !s)
            return s;
    }
    return c;
}

} // namespace bp
