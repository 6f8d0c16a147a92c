#include "gemma3_config.h"
#include "hf_config.h"

#include <algorithm>

namespace bp {

namespace {

Status bad(const std::string &where, const std::string &what)
{
    return Status(StatusCode::InvalidArgument, where + ": " + what);
}

// One layer type's rope: its base and linear factor. Empty when supported.
std::string readRope(const nlohmann::json &rope, double &theta, double &factor)
{
    if (!rope.is_object())
        return {};
    theta = rope.value("rope_theta", theta);
    const std::string type = rope.value("rope_type", rope.value("type", std::string("default")));
    if (type == "linear")
        factor = rope.at("factor").get<double>();
    else if (type != "default")
        return "rope type " + type + " is not supported (default and linear are)";
    return {};
}

} // namespace

int Gemma3Shape::localLayers() const
{
    return int(std::count_if(layerWindows.begin(), layerWindows.end(), [](int w) { return w > 0; }));
}

Result<HfModelConfig> parseGemma3Config(const nlohmann::json &j, const std::string &where)
{
    HfModelConfig c;
    Gemma3Shape g;
    try {
        c.architecture = j.value("architectures", std::vector<std::string>{"Gemma3ForCausalLM"}).front();
        if (c.architecture == "Gemma3ForConditionalGeneration")
            return bad(where, "architecture " + c.architecture +
                                  " is not one BatchPilot runs: of Gemma 3 it runs the text model alone "
                                  "(Gemma3ForCausalLM), not the vision tower and its projector");
        if (c.architecture != "Gemma3ForCausalLM")
            return bad(where, "architecture " + c.architecture +
                                  " is not one BatchPilot runs (of Gemma 3, Gemma3ForCausalLM)");
        c.vocabSize = j.value("vocab_size", 262208);
        c.hiddenSize = j.at("hidden_size").get<int>();
        c.intermediateSize = j.at("intermediate_size").get<int>();
        c.layers = j.at("num_hidden_layers").get<int>();
        c.heads = j.value("num_attention_heads", 8);
        c.kvHeads = j.value("num_key_value_heads", 4);
        c.headDim = j.contains("head_dim") && !j["head_dim"].is_null() ? j["head_dim"].get<int>() : 256;
        c.maxPositions = j.value("max_position_embeddings", 131072);
        c.rmsEps = j.value("rms_norm_eps", 1e-6);
        c.tieEmbeddings = j.value("tie_word_embeddings", true);
        c.initializerRange = j.value("initializer_range", 0.02);
        c.torchDtype = j.value("torch_dtype", j.value("dtype", std::string()));
        const auto eos = j.value("eos_token_id", nlohmann::json(1));
        if (eos.is_number())
            c.eosTokenIds.push_back(eos.get<int>());
        else if (eos.is_array())
            c.eosTokenIds = eos.get<std::vector<int>>();

        if (const std::string act = j.value("hidden_activation", std::string("gelu_pytorch_tanh"));
            act != "gelu_pytorch_tanh")
            return bad(where, "hidden_activation " + act + " is not supported (gelu_pytorch_tanh is)");
        if (j.value("attention_bias", false))
            return bad(where, "attention_bias is not supported");
        if (j.contains("attn_logit_softcapping") && !j["attn_logit_softcapping"].is_null())
            return bad(where, "attn_logit_softcapping (Gemma 2's attention softcapping) is not supported");
        if (j.value("use_bidirectional_attention", false))
            return bad(where, "use_bidirectional_attention (an embedding model's) is not supported");
        g.queryPreAttnScalar = j.value("query_pre_attn_scalar", 256.0);
        if (j.contains("final_logit_softcapping") && !j["final_logit_softcapping"].is_null())
            g.finalLogitSoftcap = j["final_logit_softcapping"].get<double>();
        if (g.queryPreAttnScalar <= 0 || g.finalLogitSoftcap < 0)
            return bad(where,
                       "query_pre_attn_scalar must be positive and final_logit_softcapping not negative");

        // Which layers are local: layer_types, else every sliding_window_pattern-th layer is global.
        std::vector<bool> local(std::size_t(std::max(c.layers, 0)));
        if (j.contains("layer_types") && !j["layer_types"].is_null()) {
            const auto types = j["layer_types"].get<std::vector<std::string>>();
            if (int(types.size()) != c.layers)
                return bad(where, "layer_types names " + std::to_string(types.size()) + " layers, not " +
                                      std::to_string(c.layers));
            for (std::size_t l = 0; l < types.size(); ++l) {
                if (types[l] != "sliding_attention" && types[l] != "full_attention")
                    return bad(where, "layer type " + types[l] +
                                          " is not supported (sliding_attention and full_attention are)");
                local[l] = types[l] == "sliding_attention";
            }
        } else {
            const int pattern = j.value("sliding_window_pattern", 6);
            if (pattern < 1)
                return bad(where, "sliding_window_pattern must be positive");
            for (int l = 0; l < c.layers; ++l)
                local[std::size_t(l)] = (l + 1) % pattern != 0;
        }
        const auto window = j.value("sliding_window", nlohmann::json(4096));
        g.slidingWindow = window.is_number() ? window.get<int>() : 0;
        if (window.is_number() && g.slidingWindow < 1)
            return bad(where, "sliding_window must be positive");
        g.localTypes = local;
        for (bool isLocal : local)
            g.layerWindows.push_back(
                isLocal && g.slidingWindow > 0 && g.slidingWindow < c.maxPositions ? g.slidingWindow : 0);

        // Rope: transformers 5's rope_parameters per layer type, or the Hub's
        // rope_theta / rope_local_base_freq / rope_scaling (the global layers').
        g.globalRopeTheta = j.value("rope_theta", 1e6);
        g.localRopeTheta = j.value("rope_local_base_freq", 1e4);
        const auto params = j.value("rope_parameters", nlohmann::json());
        std::string problem;
        if (params.is_object() &&
            (params.contains("full_attention") || params.contains("sliding_attention"))) {
            problem = readRope(params.value("full_attention", nlohmann::json()), g.globalRopeTheta,
                               g.globalRopeFactor);
            if (problem.empty())
                problem = readRope(params.value("sliding_attention", nlohmann::json()), g.localRopeTheta,
                                   g.localRopeFactor);
        } else {
            problem = readRope(params.is_object() ? params : j.value("rope_scaling", nlohmann::json()),
                               g.globalRopeTheta, g.globalRopeFactor);
        }
        if (!problem.empty())
            return bad(where, problem);
        if (g.globalRopeFactor <= 0 || g.localRopeFactor <= 0)
            return bad(where, "a rope factor must be positive");
        c.ropeTheta = g.globalRopeTheta;
    } catch (const nlohmann::json::exception &e) {
        return bad(where, std::string("malformed: ") + e.what());
    }
    if (const std::string problem = c.shapeProblem(); !problem.empty())
        return bad(where, problem);
    c.gemma3 = std::move(g);
    return c;
}

} // namespace bp
