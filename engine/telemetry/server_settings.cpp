#include "server_settings.h"

#include "target_metrics.h"

#include "engine/config/knobs.h"
#include "engine/core/batching_config.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace bp {

namespace {

// The config a BatchPilot server's gauges describe; knobs it does not
// export keep their defaults. Empty when the policy is not exported.
std::string batchPilotSettings(const prom::Exposition &e)
{
    BatchingConfig c;
    bool policy = false;
    for (const prom::Sample &s : e.samples) {
        if (s.name != "batchpilot_config_policy" || s.value != 1)
            continue;
        const auto it = s.labels.find("policy");
        if (it == s.labels.end())
            continue;
        if (auto kind = parsePolicy(it->second)) {
            c.policy = *kind;
            policy = true;
        }
    }
    if (!policy)
        return {};
    for (const Knob &k : knobs()) {
        if (k.type == KnobType::Policy)
            continue;
        const std::string name = knobGaugeName(k);
        if (k.type == KnobType::IntList) {
            std::map<int, int> items; // item index -> value
            for (const prom::Sample &s : e.samples) {
                const auto label = s.labels.find(std::string(k.itemLabel));
                if (s.name == name && label != s.labels.end())
                    items[std::atoi(label->second.c_str())] = int(std::lround(s.value));
            }
            if (!items.empty()) {
                std::vector<int> &out = k.itemsMut(c);
                out.clear();
                for (const auto &[index, value] : items)
                    out.push_back(value);
            }
            continue;
        }
        if (const auto v = e.sum(name); v && std::isfinite(*v))
            k.set(c, k.type == KnobType::Duration ? *v * 1e6 : *v);
    }
    return "batchpilot: " + describeConfig(c);
}

std::string vllmSettings(const prom::Exposition &e)
{
    for (const prom::Sample &s : e.samples) {
        if (s.name != "vllm:cache_config_info")
            continue;
        std::string out;
        for (const auto &[name, value] : s.labels) // std::map: sorted by name
            if (name != "engine" && name != "model_name")
                out += (out.empty() ? "" : " ") + name + "=" + value;
        return out.empty() ? std::string() : "vllm: " + out;
    }
    return {};
}

} // namespace

std::string scrapedServerSettings(const prom::Exposition &exposition)
{
    const std::string server = detectServer(exposition);
    if (server == "batchpilot")
        return batchPilotSettings(exposition);
    if (server == "vllm")
        return vllmSettings(exposition);
    return {};
}

std::string remoteConfigText(const std::string &scrapedSettings, const std::string &server)
{
    if (!scrapedSettings.empty())
        return scrapedSettings + " (scraped)";
    return server.empty() ? "server's own, not known" : server + ": server's own, not known";
}

} // namespace bp
