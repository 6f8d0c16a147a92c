// The writer the export formats share (config_export.cpp: the helpers and
// the public entry points; config_export_servers.cpp: one writer per server).
// Internal to engine/config.
#pragma once

#include "config_export.h"
#include "knobs.h"

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace bp::exporting {

// Collects the output and which knobs it used.
class Writer {
public:
    Writer(const BatchingConfig &c) : c(c) {}

    const BatchingConfig &c;
    std::string body;
    std::set<std::string, std::less<>> used;
    std::map<std::string, std::string, std::less<>> hints; // key -> why there is no equivalent

    void line(const std::string &s) { body += s + "\n"; }
    // Marks knobs as represented by the line(s) just written.
    void use(std::initializer_list<std::string_view> keys)
    {
        for (std::string_view k : keys)
            if (findKnob(k))
                used.emplace(k);
    }
    void hint(std::string_view key, std::string text) { hints[std::string(key)] = std::move(text); }
    std::string value(std::string_view key) const
    {
        const Knob *k = findKnob(key);
        return k ? formatKnobValue(*k, c) : "?";
    }
};

// How a format writes the batch: Triton tells the policy by its syntax
// (tritonPolicy), the others write one batch size for a request-level
// batcher that reads back as policy dynamic.
enum class BatchSyntax { Triton, SizeOnly };

std::string num(double v);
std::string exactNum(double v);
std::string joinInts(const std::vector<int> &v, const char *sep);
// The batch size the config produces at most, whatever its policy.
int largestBatch(const BatchingConfig &c);
std::string batchSource(const BatchingConfig &c);
PolicyKind writtenPolicy(const BatchingConfig &c, BatchSyntax syntax);
void useBatchKnobs(Writer &w, BatchSyntax syntax);
void delayHints(Writer &w, std::string_view server);

// One writer per server format (config_export_servers.cpp).
void triton(Writer &w);
void vllm(Writer &w);
void tgi(Writer &w);
void torchserve(Writer &w);
void rayServe(Writer &w);
void llamacpp(Writer &w); // config_export_llamacpp.cpp: llama-server flags
void ollama(Writer &w);   // and Ollama's environment

} // namespace bp::exporting
