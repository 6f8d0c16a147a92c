// import-config's reader of llama.cpp's settings: a llama-server command
// line (common/arg.cpp) and Ollama's environment (config_import.h). The
// flags are the knob table's server.llamacpp rows (Knob::flag, shortFlag);
// a row that stands for one of BatchPilot's knobs (Knob::ours) sets it too.
#include "config_import_detail.h"
#include "knobs.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace bp::import_detail {

namespace {

// "--parallel", "-np", and for a Bool its "--no-" / "-no-" forms.
const Knob *rowFor(std::string_view word, bool &negated)
{
    for (const Knob &k : serverKnobs(ServerKind::LlamaCpp)) {
        if (k.flag.empty())
            continue;
        for (const std::string_view prefix : {"--", "-"}) {
            const std::string_view name = prefix == "--" ? k.flag : k.shortFlag;
            if (name.empty() || word.substr(0, prefix.size()) != prefix)
                continue;
            const std::string_view rest = word.substr(prefix.size());
            if (rest == name) {
                negated = false;
                return &k;
            }
            if (k.type == KnobType::Bool && rest.substr(0, 3) == "no-" && rest.substr(3) == name) {
                negated = true;
                return &k;
            }
        }
    }
    return nullptr;
}

bool isFlag(const std::string &w)
{
    if (w.size() < 2 || w[0] != '-')
        return false;
    return !(std::isdigit(static_cast<unsigned char>(w[1])) || w[1] == '.'); // "-1" is a value
}

std::string settingName(std::string_view flag)
{
    std::string s(flag.substr(flag.find_first_not_of('-')));
    std::replace(s.begin(), s.end(), '-', '_');
    return s;
}

// Sets a row's server knob and the BatchPilot knob it stands for.
void setRow(ImportBuilder &b, const Knob &k, double v, int line, const std::string &from)
{
    b.setting(std::string(k.name),
              k.type == KnobType::Bool ? nlohmann::json(v != 0) : nlohmann::json(static_cast<long long>(v)));
    b.knob(k.key, v, line, from);
    if (!k.ours.empty())
        b.knob(k.ours, v, line, from);
}

constexpr std::string_view kOllamaSlots = "OLLAMA_NUM_PARALLEL", kOllamaContext = "OLLAMA_CONTEXT_LENGTH",
                           kOllamaQueue = "OLLAMA_MAX_QUEUE";

// What a read has seen so far, for the defaults and notes at its end.
struct ReadState {
    const Knob &slotsRow = *findKnob("server.llamacpp.n_parallel");
    const Knob &ctxRow = *findKnob("server.llamacpp.n_ctx");
    const Knob &unifiedRow = *findKnob("server.llamacpp.kv_unified");
    bool sawSlots = false, sawUnified = false, sawAny = false;
    int slotsLine = 0;
    std::optional<long long> ollamaContext;
    int ollamaContextLine = 0;
    std::vector<std::string> kept; // flags read but not modelled
};

// Ollama: NAME=VALUE, also behind `export`, systemd's Environment= or
// docker's -e. False when `t` is no OLLAMA_ assignment.
Result<bool> readOllama(ImportBuilder &b, ReadState &st, const std::string &t, int line)
{
    const auto pos = t.find("OLLAMA_");
    if (pos == std::string::npos || t.find('=', pos) == std::string::npos)
        return false;
    const std::string assign = t.substr(pos);
    const std::string name = assign.substr(0, assign.find('='));
    const std::string value = assign.substr(assign.find('=') + 1);
    st.sawAny = true;
    if (name != kOllamaSlots && name != kOllamaContext && name != kOllamaQueue) {
        b.setting(name, settingValue(value));
        return true;
    }
    auto v = wholeNumber(value, line, name);
    if (!v)
        return v.status();
    b.setting(name, *v);
    if (name == kOllamaSlots) {
        setRow(b, st.slotsRow, double(*v), line, name + "=" + value);
        st.sawSlots = true, st.slotsLine = line;
    } else if (name == kOllamaContext) {
        st.ollamaContext = *v, st.ollamaContextLine = line;
    }
    return true;
}

// A numeric flag's value where llama-server gives it a meaning of its own.
// True when handled.
bool specialValue(ImportBuilder &b, ReadState &st, const Knob &k, const std::string &flag,
                  const std::string &value, long long v, int line)
{
    if (&k == &st.slotsRow && v < 0) {
        // -np -1: the server's auto, 4 slots sharing one KV cache.
        b.setting("n_parallel", v);
        b.note(at(line) + flag + " " + value +
               ": auto, which llama-server runs as 4 slots with a unified KV cache");
        setRow(b, st.slotsRow, 4, line, flag + " " + value);
        setRow(b, st.unifiedRow, 1, line, flag + " " + value);
        st.sawSlots = st.sawUnified = true, st.slotsLine = line;
        return true;
    }
    if (&k == &st.ctxRow && v == 0) {
        b.setting(std::string(k.name), 0);
        b.note(at(line) + flag +
               " 0: the model's training context, which only the server knows; n_ctx not set "
               "(GET /props publishes it)");
        return true;
    }
    return false;
}

// The flag at w[i] (and its value, advancing i past it).
Status readFlag(ImportBuilder &b, ReadState &st, const std::vector<Word> &w, std::size_t &i)
{
    const int line = w[i].line;
    st.sawAny = true;
    std::string flag = w[i].text, value;
    bool hasValue = false;
    if (const auto eq = flag.find('='); eq != std::string::npos)
        value = flag.substr(eq + 1), flag.resize(eq), hasValue = true;
    bool negated = false;
    const Knob *k = rowFor(flag, negated);
    const bool nextIsValue = i + 1 < w.size() && !isFlag(w[i + 1].text);
    if (!k) { // kept, not modelled: its value is the next word unless that is a flag
        if (!hasValue && nextIsValue)
            value = w[++i].text, hasValue = true;
        b.setting(settingName(flag), hasValue ? settingValue(value) : nlohmann::json(true));
        st.kept.push_back(flag);
        return Status::ok();
    }
    if (k->type == KnobType::Bool) {
        setRow(b, *k, negated ? 0 : 1, line, flag);
        st.sawUnified = true;
        return Status::ok();
    }
    if (!hasValue) {
        if (!nextIsValue)
            return Status(StatusCode::InvalidArgument, at(line) + flag + " needs a value");
        value = w[++i].text;
    }
    auto v = wholeNumber(value, line, flag);
    if (!v)
        return v.status();
    if (specialValue(b, st, *k, flag, value, *v, line))
        return Status::ok();
    setRow(b, *k, double(*v), line, flag + " " + value);
    if (k == &st.slotsRow)
        st.sawSlots = true, st.slotsLine = line;
    return Status::ok();
}

// Ollama's defaults and its per-request contexts.
void finishOllama(ImportBuilder &b, const ReadState &st)
{
    if (!st.sawSlots) {
        setRow(b, st.slotsRow, 1, 0, "OLLAMA_NUM_PARALLEL's default");
        b.note("OLLAMA_NUM_PARALLEL not set: Ollama's default, 1, taken (older releases chose 4 or 1 "
               "by free memory)");
    }
    // Ollama gives each parallel request its own context: the runner's
    // cache is OLLAMA_CONTEXT_LENGTH × OLLAMA_NUM_PARALLEL, not shared.
    setRow(b, st.unifiedRow, 0, 0, "Ollama");
    if (st.ollamaContext) {
        const long long n = b.config().server.llamacpp.nParallel;
        setRow(b, st.ctxRow, double(*st.ollamaContext * n), st.ollamaContextLine,
               "OLLAMA_CONTEXT_LENGTH=" + std::to_string(*st.ollamaContext) + " x OLLAMA_NUM_PARALLEL");
        b.note(
            "n_ctx = OLLAMA_CONTEXT_LENGTH x OLLAMA_NUM_PARALLEL = " + std::to_string(*st.ollamaContext * n) +
            ": each request gets OLLAMA_CONTEXT_LENGTH tokens of its own (kv_unified false)");
    }
    if (b.settings().contains(std::string(kOllamaQueue)))
        b.note(std::string(kOllamaQueue) +
               " read but not modelled: it bounds the requests Ollama has not yet handed to a runner, "
               "and the model's deferred queue is llama-server's, which has no bound");
}

} // namespace

Result<ImportedConfig> importLlamaCpp(std::string_view text, ServerFormat format)
{
    auto words = shellWords(text);
    if (!words)
        return words.status();
    ImportBuilder b(format);
    b.knob("policy", double(int(PolicyKind::Continuous)), 0,
           "llama-server batches at the iteration level (policy continuous)");
    b.knob("continuous.chunked_prefill", 1, 0,
           "llama-server continues a prompt that does not fit n_batch in the next turn");
    ReadState st;
    const std::vector<Word> &w = *words;
    for (std::size_t i = 0; i < w.size(); ++i) {
        auto ollama = readOllama(b, st, w[i].text, w[i].line);
        if (!ollama)
            return ollama.status();
        if (*ollama || !isFlag(w[i].text))
            continue;
        if (Status s = readFlag(b, st, w, i); !s)
            return s;
    }
    if (!st.sawAny)
        return Status(StatusCode::InvalidArgument, "no llama-server flags or OLLAMA_ variables found");
    if (format == ServerFormat::Ollama || st.ollamaContext) {
        finishOllama(b, st);
    } else if (st.sawSlots && !st.sawUnified) {
        // llama-server: an explicit -np without -kvu gives each slot n_ctx / n_parallel.
        setRow(b, st.unifiedRow, 0, st.slotsLine, "--parallel without --kv-unified");
        b.note(at(st.slotsLine) + "--parallel " + std::to_string(b.config().server.llamacpp.nParallel) +
               " without --kv-unified: each slot has its own n_ctx / n_parallel of the cache");
    }
    if (!st.kept.empty()) {
        std::string list;
        for (const std::string &f : st.kept)
            list += (list.empty() ? "" : ", ") + f;
        b.note("kept as settings, not modelled: " + list);
    }
    ImportedConfig out = b.take();
    out.config.server.kind = ServerKind::LlamaCpp;
    return out;
}

} // namespace bp::import_detail
