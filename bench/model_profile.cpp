#include "model_profile.h"

#include "engine/sim/calibration/backend_timing.h"
#include "engine/sim/calibration/statistics.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>
#include <thread>

namespace bp::bench {

std::vector<OptionHelp> modelOptions()
{
    return {
        {"model", "NAME|FILE.pt",
         "builtin:tiny-decoder (default), builtin:tiny-encoder, builtin:echo or a TorchScript file"},
        {"preset", "P", "size preset of the built-in models: test, small (default), medium, ..."},
        {"device", "D", "auto (default: CUDA when libtorch sees it), cpu, cuda, cuda:N"},
        {"threads", "N", "torch intra-op threads (default 0 = all cores)"},
        {"seed", "S", "seed of the built-in models' random weights (default 1234)"},
        {"dtype", "T", "auto (default: bfloat16 on CUDA, float32 on the CPU), float32, bfloat16, float16"},
        {"cuda-graphs", "on|off", "decode steps as CUDA graphs on a CUDA device (default on)"},
    };
}

ModelSpec modelSpecFromArgs(const Args &args, const std::string &defaultModel)
{
    ModelSpec spec;
    spec.name = args.str("model", defaultModel);
    spec.preset = args.str("preset", spec.preset);
    spec.device = args.str("device", spec.device);
    spec.threads = int(args.num("threads", 0));
    spec.seed = std::uint64_t(args.num("seed", double(spec.seed)));
    spec.dtype = args.str("dtype", spec.dtype);
    const std::string graphs = args.str("cuda-graphs", "on");
    if (graphs != "on" && graphs != "off")
        throw std::invalid_argument("--cuda-graphs expects on or off, got '" + graphs + "'");
    spec.cudaGraphs = graphs == "on";
    if (spec.threads < 0)
        throw std::invalid_argument("--threads must be >= 0 (0 = all cores)");
    return spec;
}

std::vector<int> parseIntList(const std::string &key, const std::vector<std::string> &items)
{
    std::vector<int> out;
    for (const auto &s : items) {
        std::size_t used = 0;
        int v = 0;
        try {
            v = std::stoi(s, &used);
        } catch (const std::exception &) {
            used = 0;
        }
        if (used != s.size() || v < 1)
            throw std::invalid_argument("--" + key + " expects positive integers, got '" + s + "'");
        out.push_back(v);
    }
    if (out.empty())
        throw std::invalid_argument("--" + key + " needs at least one value");
    return out;
}

Result<ProfileResult> profileBackend(Backend &backend, const ModelSpec &spec, const ProfileOptions &o,
                                     bool progress)
{
    const ModelInfo &info = backend.info();
    ProfileResult result;
    result.model = info.name;
    result.preset = spec.name.rfind("builtin:", 0) == 0 ? spec.preset : "";
    result.device = info.device;
    result.dtype = info.dtype;
    result.kvBytesPerToken = info.kvBytesPerToken;
    result.description = info.description;
    result.parameters = info.parameters;
    result.threads = spec.threads > 0 ? spec.threads : int(std::max(1u, std::thread::hardware_concurrency()));
    result.generative = info.generative;
    result.newTokens = info.generative ? o.newTokens : 0;

    TimingGrid grid;
    grid.batchSizes = o.batchSizes;
    grid.lengths = o.lengths;
    grid.newTokens = {result.newTokens};
    grid.warmup = o.warmup;
    grid.repeats = o.repeats;
    grid.seed = o.seed;
    grid.idleBefore = std::chrono::milliseconds(o.idleMs);
    auto timed = timeBackend(backend, grid, [&](const TimingProgress &t) {
        if (progress && t.cell)
            std::fprintf(stderr, "  batch %3d x length %4d: %9.2f ms\n", t.cell->batch, t.cell->length,
                         t.cell->medianWall() * 1e3);
    });
    if (!timed)
        return timed.status();
    for (int length : timed->skippedLengths)
        std::fprintf(stderr, "  skipping length %d: above the model's %d\n", length, info.maxSequenceLength);
    for (const TimedCell &c : timed->outOfRange)
        std::fprintf(stderr, "  skipping batch %d x length %d: %d new tokens pass the model's positions\n",
                     c.batch, c.length, c.newTokens);
    for (const TimedCell &t : timed->cells) {
        if (t.wall.empty())
            continue;
        ProfileCell c;
        c.batch = t.batch;
        c.length = t.length;
        c.p50Ms = t.medianWall() * 1e3;
        c.minMs = *std::min_element(t.wall.begin(), t.wall.end()) * 1e3;
        for (double v : t.wall)
            c.meanMs += v * 1e3 / double(t.wall.size());
        c.cpuMs = median(t.cpu) * 1e3;
        c.sequencesPerS = c.batch / (c.p50Ms / 1e3);
        c.tokensPerS = c.sequencesPerS * (info.generative ? result.newTokens : c.length);
        c.ttftMs = median(t.firstToken) * 1e3;
        c.tpotMs = median(t.perToken) * 1e3;
        c.decodeTokensPerS = c.tpotMs > 0 ? c.batch / (c.tpotMs / 1e3) : 0;
        result.cells.push_back(c);
    }
    result.notes = backend.notes();
    return result;
}

const ProfileCell *ceilingCell(const ProfileResult &p, int length)
{
    int chosen = -1;
    for (const auto &c : p.cells)
        if (c.length >= length && (chosen < 0 || c.length < chosen))
            chosen = c.length;
    if (chosen < 0)
        for (const auto &c : p.cells)
            chosen = std::max(chosen, c.length);
    const ProfileCell *best = nullptr;
    for (const auto &c : p.cells)
        if (c.length == chosen && (!best || ceilingValue(p, c) > ceilingValue(p, *best)))
            best = &c;
    return best;
}

double ceilingValue(const ProfileResult &p, const ProfileCell &c)
{
    return p.generative ? c.tokensPerS : c.sequencesPerS;
}

void printProfile(const ProfileResult &p)
{
    std::printf("model %s%s  device %s  dtype %s  threads %d  parameters %.2f M", p.model.c_str(),
                p.preset.empty() ? "" : (" (preset " + p.preset + ")").c_str(), p.device.c_str(),
                p.dtype.c_str(), p.threads, double(p.parameters) / 1e6);
    if (p.kvBytesPerToken > 0)
        std::printf("  KV %.1f KiB/token", double(p.kvBytesPerToken) / 1024.0);
    std::printf("\n");
    for (const std::string &note : p.notes)
        std::printf("%s\n", note.c_str());
    if (p.generative)
        std::printf("generation: %d new tokens per sequence; latency = prefill + %d decode steps\n",
                    p.newTokens, p.newTokens - 1);
    std::printf("\n");
    if (p.generative)
        std::printf("%6s %6s %10s %10s %10s %10s %10s %12s %14s\n", "length", "batch", "p50 ms", "cpu ms",
                    "seq/s", "tok/s", "ttft ms", "step ms", "decode tok/s");
    else
        std::printf("%6s %6s %10s %10s %10s %10s %12s\n", "length", "batch", "p50 ms", "min ms", "cpu ms",
                    "seq/s", "in tok/s");
    int last = -1;
    for (const auto &c : p.cells) {
        if (last != -1 && c.length != last)
            std::printf("\n");
        last = c.length;
        if (p.generative)
            std::printf("%6d %6d %10.2f %10.2f %10.1f %10.1f %10.2f %12.3f %14.1f\n", c.length, c.batch,
                        c.p50Ms, c.cpuMs, c.sequencesPerS, c.tokensPerS, c.ttftMs, c.tpotMs,
                        c.decodeTokensPerS);
        else
            std::printf("%6d %6d %10.2f %10.2f %10.2f %10.1f %12.0f\n", c.length, c.batch, c.p50Ms, c.minMs,
                        c.cpuMs, c.sequencesPerS, c.tokensPerS);
    }
    std::printf("\nceiling per length (the best throughput over batch sizes; speed-up vs batch 1):\n");
    std::map<int, std::pair<const ProfileCell *, const ProfileCell *>> byLength; // best, batch 1
    for (const auto &c : p.cells) {
        auto &[best, one] = byLength[c.length];
        if (!best || c.sequencesPerS > best->sequencesPerS)
            best = &c;
        if (c.batch == 1)
            one = &c;
    }
    for (const auto &[length, cells] : byLength) {
        const auto *best = cells.first, *one = cells.second;
        const double gain = one ? best->sequencesPerS / one->sequencesPerS : 0;
        if (p.generative) {
            double bestDecode = 0, oneDecode = one ? one->decodeTokensPerS : 0;
            for (const auto &c : p.cells)
                if (c.length == length)
                    bestDecode = std::max(bestDecode, c.decodeTokensPerS);
            std::printf(
                "  length %4d: %8.1f seq/s, %9.1f tok/s at batch %d (x%.1f); decode steps alone up to "
                "%.0f tok/s (x%.1f)\n",
                length, best->sequencesPerS, best->tokensPerS, best->batch, gain, bestDecode,
                oneDecode > 0 ? bestDecode / oneDecode : 0.0);
        } else {
            std::printf("  length %4d: %8.1f seq/s, %9.0f tok/s at batch %d (x%.2f vs batch 1)\n", length,
                        best->sequencesPerS, best->tokensPerS, best->batch, gain);
        }
    }
}

nlohmann::json toJson(const ProfileResult &p)
{
    nlohmann::json cells = nlohmann::json::array();
    for (const auto &c : p.cells)
        cells.push_back({{"batch", c.batch},
                         {"length", c.length},
                         {"p50_ms", c.p50Ms},
                         {"min_ms", c.minMs},
                         {"mean_ms", c.meanMs},
                         {"cpu_ms", c.cpuMs},
                         {"sequences_per_s", c.sequencesPerS},
                         {"tokens_per_s", c.tokensPerS},
                         {"ttft_ms", c.ttftMs},
                         {"tpot_ms", c.tpotMs},
                         {"decode_tokens_per_s", c.decodeTokensPerS}});
    return {{"stage", "profile"},
            {"model", p.model},
            {"preset", p.preset},
            {"device", p.device},
            {"dtype", p.dtype},
            {"kv_bytes_per_token", p.kvBytesPerToken},
            {"notes", p.notes},
            {"description", p.description},
            {"parameters", p.parameters},
            {"threads", p.threads},
            {"generative", p.generative},
            {"new_tokens", p.newTokens},
            {"cells", cells}};
}

Result<ProfileResult> profileFromJson(const nlohmann::json &j)
{
    try {
        ProfileResult p;
        p.model = j.at("model").get<std::string>();
        p.preset = j.value("preset", "");
        p.device = j.value("device", "");
        p.dtype = j.value("dtype", "float32");
        p.kvBytesPerToken = j.value("kv_bytes_per_token", std::int64_t(0));
        p.notes = j.value("notes", std::vector<std::string>{});
        p.description = j.value("description", "");
        p.parameters = j.value("parameters", std::int64_t(0));
        p.threads = j.value("threads", 0);
        p.generative = j.value("generative", false);
        p.newTokens = j.value("new_tokens", 0);
        for (const auto &c : j.at("cells")) {
            ProfileCell cell;
            cell.batch = c.at("batch").get<int>();
            cell.length = c.at("length").get<int>();
            cell.p50Ms = c.at("p50_ms").get<double>();
            cell.minMs = c.value("min_ms", cell.p50Ms);
            cell.meanMs = c.value("mean_ms", cell.p50Ms);
            cell.cpuMs = c.value("cpu_ms", 0.0);
            cell.sequencesPerS = c.at("sequences_per_s").get<double>();
            cell.tokensPerS = c.at("tokens_per_s").get<double>();
            cell.ttftMs = c.value("ttft_ms", 0.0);
            cell.tpotMs = c.value("tpot_ms", 0.0);
            cell.decodeTokensPerS = c.value("decode_tokens_per_s", 0.0);
            p.cells.push_back(cell);
        }
        if (p.cells.empty())
            return Status(StatusCode::InvalidArgument, "profile has no cells");
        return p;
    } catch (const nlohmann::json::exception &e) {
        return Status(StatusCode::InvalidArgument, std::string("not a profile: ") + e.what());
    }
}

Result<ProfileResult> loadProfileFile(const std::string &path)
{
    std::ifstream in(path);
    if (!in)
        return Status(StatusCode::NotFound, "cannot read ceiling file '" + path + "'");
    try {
        auto parsed = profileFromJson(nlohmann::json::parse(in));
        if (!parsed)
            return Status(parsed.status().code(), path + ": " + parsed.status().message());
        return parsed;
    } catch (const nlohmann::json::exception &e) {
        return Status(StatusCode::InvalidArgument, path + ": " + e.what());
    }
}

} // namespace bp::bench
