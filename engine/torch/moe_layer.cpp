#include "moe_layer.h"
#include "cpu_blas.h"
#include "cpu_kernels.h"

namespace bp {

at::Tensor moeBlock(const at::Tensor &x, const MoeWeights &w, const MoeRouting &routing,
                    std::atomic<std::int64_t> *touched)
{
    const std::int64_t E = w.router.size(0), m = w.down.size(2), k = routing.topK;
    // Routing as Qwen3MoeTopKRouter: softmax in float32, top k, renormalised,
    // back to the logits' dtype.
    const at::Tensor routerLogits = bp::linear(x, w.router);
    const at::Tensor probs = at::softmax(routerLogits, -1, at::kFloat);
    auto [top, chosen] = at::topk(probs, k, -1);
    if (routing.normTopk)
        top = top / top.sum(-1, true);
    top = top.to(routerLogits.scalar_type());
    // (token, expert) pairs grouped by expert: a stable sort keeps each
    // expert's tokens in token order.
    const at::Tensor flatExpert = chosen.reshape({-1});
    const at::Tensor order = std::get<1>(at::sort(flatExpert, /*stable=*/true, 0, false));
    const at::Tensor tokenOf = at::floor_divide(order, k);
    const at::Tensor weightOf = top.reshape({-1}).index_select(0, order).unsqueeze(1);
    // Rows per expert: the one host read a step makes (the loop's bounds).
    const at::Tensor counts = at::bincount(flatExpert, {}, E).to(at::kCPU);
    const std::int64_t *count = counts.data_ptr<std::int64_t>();
    const at::Tensor rows = x.index_select(0, tokenOf);
    const bool cpu = cpuFused(x);
    std::vector<at::Tensor> outputs;
    std::int64_t start = 0, distinct = 0;
    for (std::int64_t e = 0; e < E; ++e) {
        const std::int64_t n = count[e];
        if (n == 0)
            continue;
        ++distinct;
        const at::Tensor gateUp = bp::linear(rows.narrow(0, start, n), w.gateUp[e]);
        const at::Tensor hidden =
            cpu ? swigluCpu(gateUp) : at::silu(gateUp.narrow(1, 0, m)) * gateUp.narrow(1, m, m);
        outputs.push_back(bp::linear(hidden, w.down[e]) * weightOf.narrow(0, start, n));
        start += n;
    }
    if (touched)
        touched->fetch_add(distinct, std::memory_order_relaxed);
    at::Tensor out = at::zeros_like(x);
    if (!outputs.empty())
        out.index_add_(0, tokenOf, at::cat(outputs, 0));
    return out;
}

} // namespace bp
