// Shared by the readers of config_import.cpp and config_import_triton.cpp:
// the builder that records settings and sets knobs, and strict numbers.
#pragma once

#include "config_import.h"

#include <string>
#include <string_view>
#include <vector>

namespace bp::import_detail {

// "line 7: " (nothing for line 0: JSON has no lines to name).
std::string at(int line);

// A whole number / a real number, or InvalidArgument
// "line N: WHAT takes a whole number, not 'x'".
Result<long long> wholeNumber(std::string_view text, int line, std::string_view what);
Result<double> realNumber(std::string_view text, int line, std::string_view what);
// "true"/"false" (any case, also 1/0), or InvalidArgument.
Result<bool> boolean(std::string_view text, int line, std::string_view what);

// A number, true/false, or the text itself, for `settings`.
nlohmann::json settingValue(std::string_view text);

class ImportBuilder {
public:
    explicit ImportBuilder(ServerFormat format) { m_out.format = format; }

    void setting(const std::string &name, nlohmann::json value) { m_out.settings[name] = std::move(value); }
    // Sets knob `key` to `value` (its unit: µs for durations, 0/1 for
    // bools, the policy's index); a value outside the knob's range is noted
    // ("line 4: max_batch_size = 2048: ... outside [1, 1024]; not set").
    void knob(std::string_view key, double value, int line, std::string_view from);
    void knobList(std::string_view key, std::vector<int> values, int line, std::string_view from);
    void note(std::string text) { m_out.notes.push_back(std::move(text)); }
    const BatchingConfig &config() const { return m_out.config; }
    const nlohmann::json &settings() const { return m_out.settings; }
    ImportedConfig take() { return std::move(m_out); }

private:
    void record(std::string_view key);
    ImportedConfig m_out;
};

// A shell word and the line it starts on.
struct Word {
    std::string text;
    int line = 0;
};

// Shell words: quotes ('...' literal, "..." with \" \\ \$ escapes), a
// backslash escapes the next character (a backslash-newline joins lines),
// `#` at a word's start comments out the rest of the line, `;` separates.
// InvalidArgument "line N: the quote " is never closed".
Result<std::vector<Word>> shellWords(std::string_view s);

// The readers, one per syntax (config_import_flags.cpp, config_import_triton.cpp).
Result<ImportedConfig> importCommandLine(std::string_view text, ServerFormat format); // vllm, tgi
Result<ImportedConfig> importTorchServe(std::string_view text);
Result<ImportedConfig> importRayServe(std::string_view text);
Result<ImportedConfig> importTritonText(std::string_view text); // config.pbtxt, or its JSON
// A llama-server command line and/or Ollama's environment
// (config_import_llamacpp.cpp); `format` names which the result says it is.
Result<ImportedConfig> importLlamaCpp(std::string_view text, ServerFormat format);

} // namespace bp::import_detail
