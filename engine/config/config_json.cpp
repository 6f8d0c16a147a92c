#include "config_json.h"

#include "knobs.h"
#include "server_command.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace bp {

using nlohmann::json;

namespace {
// JSON paths of the knob table: "max_batch_size", "slo.p99_target_us". The
// nested objects are the groups before the dot.
std::pair<std::string_view, std::string_view> splitKey(std::string_view key)
{
    const auto dot = key.find('.');
    if (dot == std::string_view::npos)
        return {{}, key};
    return {key.substr(0, dot), key.substr(dot + 1)};
}

bool isGroup(std::string_view name)
{
    for (const Knob &k : knobs())
        if (splitKey(k.key).first == name)
            return true;
    return false;
}

json knobToJson(const Knob &k, const BatchingConfig &c)
{
    switch (k.type) {
    case KnobType::Policy: return std::string(policyName(PolicyKind(int(k.get(c)))));
    case KnobType::Bool: return k.get(c) != 0;
    case KnobType::Double: return k.get(c);
    case KnobType::Duration: return std::int64_t(std::trunc(k.get(c))); // whole µs, as duration_cast
    case KnobType::IntList: return k.items(c);
    case KnobType::Text: return k.text(c);
    case KnobType::Int: break;
    }
    return std::int64_t(std::llround(k.get(c)));
}

// A server model's knobs (vLLM, TGI, SGLang, Triton: the table's rows of its
// kind) under the server's own names: {"kind": "vllm", "max_num_seqs": 16, ...}.
json serverJson(const BatchingConfig &c)
{
    json s = {{"kind", std::string(serverKindName(c.server.kind))}};
    for (const Knob &k : serverKnobs(c.server.kind))
        s[std::string(k.name)] = knobToJson(k, c);
    return s;
}

} // namespace

json toJson(const BatchingConfig &c)
{
    json out = json::object();
    for (const Knob &k : knobs()) {
        const auto [group, leaf] = splitKey(k.key);
        (group.empty() ? out : out[std::string(group)])[std::string(leaf)] = knobToJson(k, c);
    }
    // A simulated server's scheduler model (a remote calibration's, the
    // tuner's server points): kept with the config, so a stored session or
    // candidate reads back as the server it simulated.
    if (c.server.kind != ServerKind::BatchPilot)
        out["server"] = serverJson(c);
    return out;
}

namespace {

Status typeError(const std::string &field, const char *expected, const json &value)
{
    return {StatusCode::InvalidArgument,
            "field '" + field + "' must be " + expected + ", got " + std::string(value.type_name())};
}

// Types and a sanity range are checked here; validate() judges the values.
Status readInt(const json &j, const std::string &field, long long lo, long long hi, long long &out)
{
    if (!j.is_number_integer())
        return typeError(field, "an integer", j);
    const long long v = j.get<long long>();
    if (v < lo || v > hi)
        return {StatusCode::InvalidArgument, "field '" + field + "' = " + std::to_string(v) +
                                                 " is outside [" + std::to_string(lo) + ", " +
                                                 std::to_string(hi) + "]"};
    out = v;
    return Status::ok();
}

constexpr long long kIntMax = 1'000'000'000;

// One knob's JSON value into `c`.
Status readKnob(const Knob &k, const json &value, const std::string &field, BatchingConfig &c)
{
    long long v = 0;
    switch (k.type) {
    case KnobType::Policy: {
        if (!value.is_string())
            return typeError(field, "a string", value);
        auto p = parsePolicy(value.get<std::string>());
        if (!p)
            return Status(StatusCode::InvalidArgument, "unknown policy '" + value.get<std::string>() +
                                                           "' (none, static, dynamic, bucketed, hybrid)");
        k.set(c, double(int(*p)));
        return Status::ok();
    }
    case KnobType::Bool:
        if (!value.is_boolean())
            return typeError(field, "a boolean", value);
        k.set(c, value.get<bool>() ? 1 : 0);
        return Status::ok();
    case KnobType::Double:
        if (!value.is_number())
            return typeError(field, "a number", value);
        k.set(c, value.get<double>());
        return Status::ok();
    case KnobType::Duration:
        if (Status s = readInt(value, field, -kIntMax * 1000, kIntMax * 1000, v); !s)
            return s;
        k.set(c, double(v));
        return Status::ok();
    case KnobType::Int: {
        // int fields, and byte counts wider than an int (cache.max_bytes)
        const long long bound = k.hi > double(kIntMax) ? (1LL << 62) : kIntMax;
        if (Status s = readInt(value, field, -bound, bound, v); !s)
            return s;
        k.set(c, double(v));
        return Status::ok();
    }
    case KnobType::IntList: {
        if (!value.is_array())
            return typeError(field, "an array of integers", value);
        std::vector<int> items;
        for (const auto &e : value) {
            if (Status s = readInt(e, field + "[]", -kIntMax, kIntMax, v); !s)
                return s;
            items.push_back(int(v));
        }
        k.itemsMut(c) = std::move(items);
        return Status::ok();
    }
    case KnobType::Text:
        if (!value.is_string())
            return typeError(field, "a string", value);
        k.setText(c, value.get<std::string>());
        return Status::ok();
    }
    return Status::ok();
}

// {"kind": "vllm", ...} (serverJson): the server model's knobs by the
// server's names (the table's rows of that kind), read as server_command.h
// reads a server's settings; an unknown name or a value of the wrong type
// (a string for schedule_policy, a boolean for enable_chunked_prefill, an
// array for preferred_batch_size, else a number) is an error naming it.
Status readServer(const json &j, BatchingConfig &c)
{
    if (!j.is_object())
        return typeError("server", "an object", j);
    const auto kindIt = j.find("kind");
    if (kindIt == j.end() || !kindIt->is_string())
        return Status(StatusCode::InvalidArgument,
                      "field 'server.kind' must name a server (vllm, tgi, sglang, "
                      "triton, llamacpp, batchpilot)");
    const std::optional<ServerKind> kind = parseServerKind(kindIt->get<std::string>());
    if (!kind)
        return Status(StatusCode::InvalidArgument,
                      "unknown server '" + kindIt->get<std::string>() +
                          "' in 'server.kind' (vllm, tgi, sglang, triton, llamacpp, batchpilot)");
    for (const auto &[key, value] : j.items()) {
        if (key == "kind")
            continue;
        const std::string field = "server." + key;
        const Knob *k = findServerKnob(*kind, key);
        if (!k)
            return Status(StatusCode::InvalidArgument,
                          "unknown config field '" + field + "' for server " + kindIt->get<std::string>());
        switch (k->type) {
        case KnobType::Bool:
            if (!value.is_boolean())
                return typeError(field, "a boolean", value);
            break;
        case KnobType::Text:
            if (!value.is_string())
                return typeError(field, "a string", value);
            break;
        case KnobType::IntList:
            if (!value.is_array())
                return typeError(field, "an array of integers", value);
            for (const auto &v : value)
                if (!v.is_number_integer())
                    return typeError(field + "[]", "an integer", v);
            break;
        default:
            if (!value.is_number())
                return typeError(field, "a number", value);
        }
    }
    BatchingConfig base = c;
    base.server = {};
    if (*kind == ServerKind::Triton) {
        // Its settings' names are config.pbtxt's (server_command.h); here its
        // one knob by the table's name, the batch size and delay BatchPilot's.
        base.server.kind = ServerKind::Triton;
        for (const Knob &k : serverKnobs(ServerKind::Triton))
            if (const auto it = j.find(std::string(k.name)); it != j.end())
                k.itemsMut(base) = it->get<std::vector<int>>();
        c = std::move(base);
        return Status::ok();
    }
    c = serverConfigFromSettings(*kind, j, std::nullopt, base);
    return Status::ok();
}

// Reads the fields of `j` (nested under `group` when given) into `c` and
// names each in `names` (ConfigPatch's names: "slo.p99_target_us").
Status readFields(const json &j, BatchingConfig &c, std::vector<std::string> &names,
                  const std::string &group = {})
{
    if (!j.is_object())
        return group.empty() ? Status(StatusCode::InvalidArgument, "config must be a JSON object")
                             : typeError(group, "an object", j);
    for (const auto &[key, value] : j.items()) {
        const std::string field = group.empty() ? key : group + "." + key;
        if (const Knob *k = findKnob(field)) {
            if (Status s = readKnob(*k, value, field, c); !s)
                return s;
            names.push_back(field);
        } else if (group.empty() && isGroup(key)) {
            if (Status s = readFields(value, c, names, key); !s)
                return s;
        } else if (group.empty() && key == "server") {
            if (Status s = readServer(value, c); !s)
                return s;
            names.push_back("server");
        } else {
            return Status(StatusCode::InvalidArgument, "unknown config field '" + field + "'");
        }
    }
    return Status::ok();
}

} // namespace

Result<BatchingConfig> configFromJson(const json &j, const BatchingConfig &base)
{
    BatchingConfig c = base;
    std::vector<std::string> names;
    if (Status s = readFields(j, c, names); !s)
        return s;
    if (Status s = validate(c); !s)
        return s;
    return c;
}

Result<ConfigPatch> patchFromJson(const json &j)
{
    BatchingConfig values;
    std::vector<std::string> names;
    if (Status s = readFields(j, values, names); !s)
        return s;
    if (std::find(names.begin(), names.end(), "server") != names.end())
        return Status(StatusCode::InvalidArgument,
                      "field 'server' (a vLLM, TGI, SGLang or Triton scheduler model) is for simulations "
                      "(replay --simulate, tune, --config of a simulation); a running engine batches with "
                      "its own policies");
    return ConfigPatch::fields(values, names);
}

Result<BatchingConfig> loadConfigFile(const std::string &path, const BatchingConfig &base)
{
    std::ifstream in(path);
    if (!in)
        return Status(StatusCode::NotFound, "cannot read config file '" + path + "'");
    std::stringstream buffer;
    buffer << in.rdbuf();
    json j = json::parse(buffer.str(), nullptr, false);
    if (j.is_discarded())
        return Status(StatusCode::InvalidArgument, "config file '" + path + "' is not valid JSON");
    auto result = configFromJson(j, base);
    if (!result)
        return Status(result.status().code(), "config file '" + path + "': " + result.status().message());
    return result;
}

} // namespace bp
