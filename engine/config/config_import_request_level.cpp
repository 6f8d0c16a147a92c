// import-config's readers of the request-level batchers: TorchServe's
// model-config.yaml and Ray Serve's decorators (config_import.h).
#include "config_import_detail.h"

#include <algorithm>
#include <cctype>

namespace bp::import_detail {

namespace {

// Up to `#` outside quotes, trailing spaces trimmed.
std::string uncommented(const std::string &line)
{
    char quote = 0;
    std::size_t end = line.size();
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quote) {
            if (c == quote)
                quote = 0;
        } else if (c == '"' || c == '\'') {
            quote = c;
        } else if (c == '#') {
            end = i;
            break;
        }
    }
    std::string out = line.substr(0, end);
    out.erase(out.find_last_not_of(" \t\r") + 1);
    return out;
}

std::string trimmed(std::string s)
{
    s.erase(0, s.find_first_not_of(" \t\r\n"));
    s.erase(s.find_last_not_of(" \t\r\n") + 1);
    if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
        s = s.substr(1, s.size() - 2);
    return s;
}

} // namespace

// TorchServe model-config.yaml (pytorch.org/serve/configuration.html,
// "model-config.yaml"): top-level `key: value` lines; nested maps (a
// handler's own section) are kept as "parent.key".
Result<ImportedConfig> importTorchServe(std::string_view text)
{
    ImportBuilder b(ServerFormat::TorchServe);
    b.knob("policy", double(int(PolicyKind::Dynamic)), 0, "TorchServe batches at the request level");
    std::string parent;
    long long minWorkers = -1, maxWorkers = -1;
    int workersLine = 0;
    std::size_t pos = 0;
    for (int line = 1; pos <= text.size(); ++line) {
        const std::size_t nl = std::min(text.find('\n', pos), text.size());
        const std::string raw(text.substr(pos, nl - pos));
        pos = nl + 1;
        const std::string l = uncommented(raw);
        if (l.find_first_not_of(" \t") == std::string::npos || l == "---")
            continue;
        const bool nested = l[0] == ' ' || l[0] == '\t';
        const auto colon = l.find(':');
        if (colon == std::string::npos)
            return Status(StatusCode::InvalidArgument,
                          at(line) + "expected 'key: value', got '" + trimmed(l) + "'");
        const std::string key = trimmed(l.substr(0, colon));
        const std::string value = trimmed(l.substr(colon + 1));
        if (key.empty())
            return Status(StatusCode::InvalidArgument, at(line) + "a key is missing before ':'");
        if (!nested)
            parent = value.empty() ? key : "";
        if (value.empty())
            continue; // a map follows
        if (nested && !parent.empty()) {
            b.setting(parent + "." + key, settingValue(value));
            continue;
        }
        if (key == "batchSize" || key == "maxBatchDelay" || key == "minWorkers" || key == "maxWorkers") {
            auto v = wholeNumber(value, line, key);
            if (!v)
                return v.status();
            b.setting(key, *v);
            if (key == "batchSize")
                b.knob("max_batch_size", double(*v), line, "batchSize " + value);
            else if (key == "maxBatchDelay")
                b.knob("max_queue_delay_us", double(*v) * 1e3, line, "maxBatchDelay " + value + " ms");
            else
                (key == "minWorkers" ? minWorkers : maxWorkers) = *v, workersLine = line;
            continue;
        }
        b.setting(key, settingValue(value));
    }
    if (maxWorkers > 0 || minWorkers > 0) {
        const long long n = std::max(minWorkers, maxWorkers);
        if (minWorkers > 0 && maxWorkers > 0 && minWorkers != maxWorkers)
            b.note("minWorkers " + std::to_string(minWorkers) + " and maxWorkers " +
                   std::to_string(maxWorkers) +
                   " differ: TorchServe scales between them; instances = the larger");
        b.knob("instances", double(n), workersLine, "workers " + std::to_string(n));
    }
    return b.take();
}

namespace {

struct Call {
    bool found = false;
    bool parens = false;
    int line = 0;
    std::vector<std::pair<std::string, std::string>> args; // keyword = value
    std::vector<int> lines;
};

// The keyword arguments of `@NAME(...)` (or a bare `@NAME`), which may span lines.
Result<Call> decorator(std::string_view text, std::string_view name)
{
    Call call;
    const std::string at1 = "@" + std::string(name);
    std::size_t p = 0;
    for (;;) {
        p = text.find(at1, p);
        if (p == std::string_view::npos)
            return call;
        const std::size_t after = p + at1.size();
        if (after >= text.size() ||
            !(std::isalnum(static_cast<unsigned char>(text[after])) || text[after] == '_'))
            break;
        p = after;
    }
    call.found = true;
    call.line = int(std::count(text.begin(), text.begin() + std::ptrdiff_t(p), '\n')) + 1;
    std::size_t i = p + at1.size();
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
        ++i;
    if (i >= text.size() || text[i] != '(')
        return call;
    call.parens = true;
    int depth = 0, line = call.line;
    std::string current;
    int currentLine = line;
    char quote = 0;
    auto flush = [&]() -> Status {
        const std::string arg = trimmed(current);
        current.clear();
        if (arg.empty())
            return Status::ok();
        const auto eq = arg.find('=');
        if (eq == std::string::npos)
            return Status(StatusCode::InvalidArgument, at(currentLine) + "@" + std::string(name) +
                                                           " takes keyword arguments, got '" + arg + "'");
        call.args.emplace_back(trimmed(arg.substr(0, eq)), trimmed(arg.substr(eq + 1)));
        call.lines.push_back(currentLine);
        return Status::ok();
    };
    for (; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\n')
            ++line;
        if (quote) {
            current += c;
            if (c == quote)
                quote = 0;
            continue;
        }
        if (c == '"' || c == '\'') {
            quote = c;
        } else if (c == '(' || c == '[' || c == '{') {
            if (depth++ == 0)
                continue;
        } else if (c == ')' || c == ']' || c == '}') {
            if (--depth == 0) {
                if (Status s = flush(); !s)
                    return s;
                return call;
            }
        } else if (c == ',' && depth == 1) {
            if (Status s = flush(); !s)
                return s;
            currentLine = line;
            continue;
        } else if (c == '#') {
            while (i + 1 < text.size() && text[i + 1] != '\n')
                ++i;
            continue;
        }
        if (current.find_first_not_of(" \t\r\n") == std::string::npos && c != ' ' && c != '\n')
            currentLine = line;
        current += c;
    }
    return Status(StatusCode::InvalidArgument,
                  at(call.line) + "the '(' of @" + std::string(name) + " is never closed");
}

} // namespace

// Ray Serve (docs.ray.io/en/latest/serve/advanced-guides/dyn-req-batch.html):
// @serve.deployment(num_replicas=..., max_queued_requests=...,
// max_ongoing_requests=...) and @serve.batch(max_batch_size=...,
// batch_wait_timeout_s=...). Without @serve.batch every request runs alone.
Result<ImportedConfig> importRayServe(std::string_view text)
{
    auto deployment = decorator(text, "serve.deployment");
    if (!deployment)
        return deployment.status();
    auto batch = decorator(text, "serve.batch");
    if (!batch)
        return batch.status();
    if (!deployment->found && !batch->found)
        return Status(StatusCode::InvalidArgument, "no @serve.deployment or @serve.batch found");
    ImportBuilder b(ServerFormat::RayServe);
    b.knob("policy", double(int(batch->found ? PolicyKind::Dynamic : PolicyKind::None)), 0,
           batch->found ? "@serve.batch" : "no @serve.batch");
    for (std::size_t i = 0; i < deployment->args.size(); ++i) {
        const auto &[key, value] = deployment->args[i];
        const int line = deployment->lines[i];
        b.setting("deployment." + key, settingValue(value));
        if (key == "num_replicas" && value != "\"auto\"" && value != "'auto'") {
            auto v = wholeNumber(value, line, "num_replicas");
            if (!v)
                return v.status();
            b.knob("instances", double(*v), line, "num_replicas=" + value);
        } else if (key == "max_queued_requests") {
            auto v = wholeNumber(value, line, key);
            if (!v)
                return v.status();
            if (*v < 0)
                b.note(at(line) + "max_queued_requests=" + value + ": unbounded; queue_capacity not set");
            else
                b.knob("queue_capacity", double(*v), line, "max_queued_requests=" + value);
        }
    }
    if (batch->found && !batch->parens)
        b.note(at(batch->line) + "@serve.batch without arguments: Ray's defaults apply (max_batch_size 10, "
                                 "batch_wait_timeout_s 0.01)");
    for (std::size_t i = 0; i < batch->args.size(); ++i) {
        const auto &[key, value] = batch->args[i];
        const int line = batch->lines[i];
        b.setting("batch." + key, settingValue(value));
        if (key == "max_batch_size") {
            auto v = wholeNumber(value, line, key);
            if (!v)
                return v.status();
            b.knob("max_batch_size", double(*v), line, "max_batch_size=" + value);
        } else if (key == "batch_wait_timeout_s") {
            auto v = realNumber(value, line, key);
            if (!v)
                return v.status();
            b.knob("max_queue_delay_us", *v * 1e6, line, "batch_wait_timeout_s=" + value);
        }
    }
    return b.take();
}

} // namespace bp::import_detail
