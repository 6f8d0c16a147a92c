#include "engine/sim/calibration/cost_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

namespace bp {

namespace {

using Terms = std::array<double, CostModel::kTerms>;

double clampSeconds(double s)
{
    return std::isfinite(s) ? std::max(0.0, s) : 0.0;
}

// The value at quantile u of a distribution given by n sorted samples, each
// standing for 1/n of it at the middle of its share (sample i at quantile
// (i + 0.5) / n, Hazen's rule), interpolated between them and flat beyond
// the first and the last: a uniform u then draws the samples' distribution
// without stretching the last share out to the single worst measurement.
double sortedAt(const std::vector<double> &r, double u)
{
    const double x = std::clamp(std::clamp(u, 0.0, 1.0) * double(r.size()) - 0.5, 0.0, double(r.size() - 1));
    const std::size_t i = std::min(std::size_t(x), r.size() - 1);
    const double f = x - double(i);
    return i + 1 < r.size() ? r[i] + f * (r[i + 1] - r[i]) : r[i];
}

} // namespace

std::vector<double> sampleQuantiles(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    const std::size_t k = CostModel::kResidualSamples;
    if (values.size() <= k)
        return values;
    // the middle of each of k equal shares (Hazen), as sortedAt reads them
    std::vector<double> out(k);
    for (std::size_t i = 0; i < k; ++i)
        out[i] = values[std::size_t((double(i) + 0.5) / double(k) * double(values.size()))];
    return out;
}

std::vector<double> sampleShareMeans(std::vector<double> values, std::size_t k)
{
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    if (n <= k || k == 0)
        return values;
    std::vector<double> out(k);
    for (std::size_t i = 0; i < k; ++i) {
        const std::size_t from = i * n / k, to = (i + 1) * n / k;
        out[i] =
            std::accumulate(values.begin() + std::ptrdiff_t(from), values.begin() + std::ptrdiff_t(to), 0.0) /
            double(to - from);
    }
    return out;
}

void StepShape::add(std::int64_t cached, std::int64_t fed, std::int64_t attendsTo)
{
    if (fed <= 0)
        return;
    const std::int64_t kv = attendsTo < 0 ? cached + fed : attendsTo;
    if (fed == 1 && cached > 0) {
        ++decodes;
        decodeContext += kv;
    } else {
        ++prefills;
        prefillTokens += fed;
        prefillAttention += fed * kv;
    }
}

Terms CostModel::withKnee(Terms terms, double knee)
{
    const std::size_t i = std::size_t(kIterationStart);
    terms[i + 4] = terms[i] > 0 && knee > 0 ? std::max(0.0, terms[i + 2] - knee * terms[i]) : 0.0;
    return terms;
}

double CostModel::predict(const Terms &terms) const
{
    const Terms t = withKnee(terms, kneeTokens);
    return clampSeconds(std::inner_product(t.begin(), t.end(), coef.begin(), 0.0));
}

Terms CostModel::passTerms(int batch, int paddedLength)
{
    const double b = batch, L = paddedLength;
    return {1, b, b * L, b * L * L, 0, 0, 0};
}

Terms CostModel::stepTerms(int batch, int context)
{
    const double b = batch;
    return {0, 0, 0, 0, 1, b, b * double(context)};
}

double CostModel::expectedActiveExperts(double tokens, int experts, int perToken)
{
    if (experts <= 0 || perToken <= 0 || tokens <= 0)
        return 0;
    const double E = experts, k = std::min(perToken, experts);
    return E * (1 - std::pow(1 - k / E, tokens));
}

Terms CostModel::iterationTerms(const StepShape &shape, int experts, int perToken)
{
    Terms t{};
    const std::size_t i = std::size_t(kIterationStart);
    t[i] = 1;
    t[i + 1] = shape.items();
    t[i + 2] = double(shape.tokens());
    t[i + 3] = double(shape.attention());
    t[i + 5] = shape.prefills > 0 ? 1 : 0;
    t[i + 6] = expectedActiveExperts(double(shape.tokens()), experts, perToken);
    t[i + 7] = double(shape.decodeContext);
    t[i + 8] = double(shape.copiedCells);
    return t;
}

bool CostModel::hasIterationTerms() const
{
    return std::any_of(coef.begin() + kIterationStart, coef.end(), [](double c) { return c > 0; });
}

double CostModel::iterationSeconds(const StepShape &shape) const
{
    if (shape.items() == 0)
        return 0;
    if (hasIterationTerms())
        return predict(iterationTerms(shape, experts, expertsPerToken));
    // From the request-level terms: the decodes as one decode step, the
    // prompt chunks as one pass (their attention is what b·L² counts).
    double s = 0;
    if (shape.decodes > 0)
        s += coef[4] + coef[5] * shape.decodes + coef[6] * double(shape.decodeContext);
    if (shape.prefills > 0)
        s += coef[0] + coef[1] * shape.prefills + coef[2] * double(shape.prefillTokens) +
             coef[3] * double(shape.prefillAttention);
    return clampSeconds(s);
}

double CostModel::residualAt(double u, bool iteration) const
{
    const std::vector<double> &r = iteration ? iterationResiduals : residuals;
    return r.empty() ? 1 : sortedAt(r, u);
}

double CostModel::latenessAt(double u) const
{
    return dispatchLateness.empty() ? 0 : sortedAt(dispatchLateness, u);
}

double CostModel::meanLateness() const
{
    return dispatchLateness.empty() ? 0
                                    : std::accumulate(dispatchLateness.begin(), dispatchLateness.end(), 0.0) /
                                          double(dispatchLateness.size());
}

double CostModel::slowdownAt(int units) const
{
    if (units < 2 || concurrency.empty())
        return 1;
    return concurrency[std::min(std::size_t(units - 2), concurrency.size() - 1)];
}

double CostModel::meanResidual(bool iteration) const
{
    const std::vector<double> &r = iteration ? iterationResiduals : residuals;
    return r.empty() ? 1 : std::accumulate(r.begin(), r.end(), 0.0) / double(r.size());
}

Terms CostModel::batchTerms(bool generative, int batch, int paddedLength, std::span<const int> wants)
{
    Terms t = passTerms(batch, paddedLength);
    if (!generative || wants.empty())
        return t;
    std::vector<int> sorted(wants.begin(), wants.end());
    for (int &w : sorted)
        w = std::max(1, w);
    std::sort(sorted.begin(), sorted.end());
    // Decode step k (k = 1 .. max want − 1) runs the rows whose want > k at
    // context L + k; between two consecutive wants the row count is constant,
    // so each stretch is summed in closed form.
    const double L = paddedLength;
    std::size_t idx = 0;
    double running = double(sorted.size());
    long prev = 0; // steps charged so far: k = 1 .. prev
    while (idx < sorted.size()) {
        const long w = sorted[idx];
        const long from = prev + 1, to = w - 1;
        if (to >= from) {
            const double n = double(to - from + 1);
            t[4] += n;
            t[5] += n * running;
            t[6] += running * (n * L + double(from + to) * n / 2);
            prev = to;
        }
        while (idx < sorted.size() && sorted[idx] == w) {
            ++idx;
            running -= 1;
        }
    }
    return t;
}

double CostModel::passSeconds(int batch, int paddedLength) const
{
    return predict(passTerms(batch, paddedLength));
}

double CostModel::stepSeconds(int batch, int context) const
{
    return predict(stepTerms(batch, context));
}

CostModel::BatchCost CostModel::batchCost(int batch, int paddedLength, std::span<const int> wants) const
{
    BatchCost c;
    const double pass = passSeconds(batch, paddedLength);
    c.run = fromSeconds(generative ? predict(batchTerms(true, batch, paddedLength, wants)) : pass);
    if (!generative)
        return c;
    c.firstToken = fromSeconds(pass);
    // Each member's last token: the steps k = 1 .. want − 1, summed per
    // stretch of constant running rows (as batchTerms counts them).
    std::vector<std::pair<int, std::size_t>> order; // (want, member)
    for (std::size_t i = 0; i < wants.size(); ++i)
        order.emplace_back(std::max(1, wants[i]), i);
    std::sort(order.begin(), order.end());
    c.lastToken.resize(wants.size());
    const double L = paddedLength;
    double t = pass, running = double(order.size());
    long prev = 0;
    for (std::size_t idx = 0; idx < order.size();) {
        const long w = order[idx].first;
        const long from = prev + 1, to = w - 1;
        if (to >= from) {
            const double n = double(to - from + 1);
            t += n * (coef[4] + coef[5] * running) + coef[6] * running * (n * L + double(from + to) * n / 2);
            prev = to;
        }
        for (; idx < order.size() && order[idx].first == w; ++idx, running -= 1)
            c.lastToken[order[idx].second] = fromSeconds(clampSeconds(t));
    }
    return c;
}

nlohmann::json toJson(const CostModel &m)
{
    nlohmann::json j = {
        {"generative", m.generative},
        {"pass", {m.coef[0], m.coef[1], m.coef[2], m.coef[3]}},
        {"step", {m.coef[4], m.coef[5], m.coef[6]}},
        {"iteration",
         {m.coef[7], m.coef[8], m.coef[9], m.coef[10], m.coef[11], m.coef[12], m.coef[13], m.coef[14],
          m.coef[15]}},
        {"iteration_knee_tokens", m.kneeTokens},
        {"overhead_s", m.overheadS},
        {"step_overhead_s", m.stepOverheadS},
        {"attention_on_kv_view", m.attentionOnKvView},
        {"residuals", m.residuals},
        {"iteration_residuals", m.iterationResiduals},
        {"concurrency_slowdown", m.concurrency},
        {"dispatch_lateness_s", m.dispatchLateness},
        {"form",
         "pass(b,L) = p0 + p1*b + p2*b*L + p3*b*L^2; step(b,c) = d0 + d1*b + d2*b*c; "
         "iteration(n,T,A,E,X,D) = s0 + s1*n + s2*T + s3*A + s4*max(0,T-K) + s5*E + s6*X + s7*D + s8*C "
         "(seconds; "
         "K = iteration_knee_tokens, E = 1 for a step with prompt tokens, X = active experts per MoE layer "
         "= experts*(1-(1-experts_per_token/experts)^T), 0 for a dense model, D = the decodes' context, "
         "C = KV cells the server copies out of its cache: llama-server's idle-slot save); "
         "residuals = measured/predicted"}};
    if (m.experts > 0) {
        nlohmann::json measured = nlohmann::json::array();
        for (const auto &a : m.activeExperts)
            measured.push_back({{"tokens", a.tokens}, {"measured", a.measured}, {"expected", a.expected}});
        j["moe"] = {
            {"experts", m.experts}, {"experts_per_token", m.expertsPerToken}, {"active_experts", measured}};
    }
    return j;
}

nlohmann::json toJson(const FitError &e)
{
    return {{"observations", e.observations},
            {"median_rel", e.medianRel},
            {"rms_rel", e.rmsRel},
            {"max_rel", e.maxRel}};
}

Result<CostModel> costModelFromJson(const nlohmann::json &j)
{
    try {
        CostModel m;
        m.generative = j.value("generative", false);
        const auto &pass = j.at("pass");
        const auto &step = j.at("step");
        if (!pass.is_array() || pass.size() != CostModel::kPassTerms || !step.is_array() ||
            step.size() != CostModel::kStepTerms)
            return Status(StatusCode::InvalidArgument,
                          "cost model: 'pass' needs 4 and 'step' 3 coefficients");
        for (std::size_t i = 0; i < std::size_t(CostModel::kPassTerms); ++i)
            m.coef[i] = pass[i].get<double>();
        for (std::size_t i = 0; i < std::size_t(CostModel::kStepTerms); ++i)
            m.coef[std::size_t(CostModel::kPassTerms) + i] = step[i].get<double>();
        if (j.contains("iteration")) { // absent before continuous was simulated
            // 4 coefficients before the knee and the eager step were
            // terms, 6 before the active experts, 7 before the decodes'
            // context, 8 before the copied cells
            const auto &iteration = j.at("iteration");
            if (!iteration.is_array() ||
                (iteration.size() != CostModel::kIterationTerms && iteration.size() != 8 &&
                 iteration.size() != 7 && iteration.size() != 6 && iteration.size() != 4))
                return Status(StatusCode::InvalidArgument,
                              "cost model: 'iteration' needs 9 (or 8, 7, 6, 4) coefficients");
            for (std::size_t i = 0; i < iteration.size(); ++i)
                m.coef[std::size_t(CostModel::kIterationStart) + i] = iteration[i].get<double>();
            m.kneeTokens = j.value("iteration_knee_tokens", 0.0);
            if (!std::isfinite(m.kneeTokens) || m.kneeTokens < 0)
                return Status(StatusCode::InvalidArgument, "cost model: iteration_knee_tokens must be >= 0");
        }
        if (j.contains("moe")) {
            const auto &moe = j.at("moe");
            m.experts = moe.at("experts").get<int>();
            m.expertsPerToken = moe.at("experts_per_token").get<int>();
            if (m.experts < 1 || m.expertsPerToken < 1 || m.expertsPerToken > m.experts)
                return Status(StatusCode::InvalidArgument,
                              "cost model: moe needs experts >= 1 and 1 <= experts_per_token <= experts");
            for (const auto &a : moe.value("active_experts", nlohmann::json::array()))
                m.activeExperts.push_back({a.at("tokens").get<double>(), a.at("measured").get<double>(),
                                           a.at("expected").get<double>()});
        }
        m.overheadS = j.value("overhead_s", 0.0);
        m.stepOverheadS = j.value("step_overhead_s", 0.0);           // absent before it was measured
        m.attentionOnKvView = j.value("attention_on_kv_view", true); // absent before it was chosen
        m.residuals = j.value("residuals", std::vector<double>{});
        m.iterationResiduals = j.value("iteration_residuals", std::vector<double>{});
        m.concurrency = j.value("concurrency_slowdown", std::vector<double>{});
        m.dispatchLateness = j.value("dispatch_lateness_s", std::vector<double>{});
        if (m.dispatchLateness.size() > CostModel::kResidualSamples ||
            !std::is_sorted(m.dispatchLateness.begin(), m.dispatchLateness.end()) ||
            std::any_of(m.dispatchLateness.begin(), m.dispatchLateness.end(),
                        [](double v) { return !std::isfinite(v) || v < 0; }))
            return Status(StatusCode::InvalidArgument,
                          "cost model: dispatch_lateness_s must be at most 101 sorted, finite values >= 0");
        for (double v : m.concurrency)
            if (!std::isfinite(v) || v < 1)
                return Status(StatusCode::InvalidArgument,
                              "cost model: concurrency_slowdown values must be >= 1");
        for (const auto *r : {&m.residuals, &m.iterationResiduals})
            if (!std::is_sorted(r->begin(), r->end()) ||
                std::any_of(r->begin(), r->end(), [](double v) { return !std::isfinite(v) || v <= 0; }))
                return Status(StatusCode::InvalidArgument,
                              "cost model: residuals must be positive, finite and sorted");
        for (double c : m.coef)
            if (!std::isfinite(c) || c < 0)
                return Status(StatusCode::InvalidArgument,
                              "cost model: coefficients must be finite and >= 0");
        if (!std::isfinite(m.overheadS) || m.overheadS < 0)
            return Status(StatusCode::InvalidArgument, "cost model: overhead_s must be finite and >= 0");
        if (!std::isfinite(m.stepOverheadS) || m.stepOverheadS < 0)
            return Status(StatusCode::InvalidArgument, "cost model: step_overhead_s must be finite and >= 0");
        return m;
    } catch (const nlohmann::json::exception &e) {
        return Status(StatusCode::InvalidArgument, std::string("not a cost model: ") + e.what());
    }
}

FitError fitErrorFromJson(const nlohmann::json &j)
{
    FitError e;
    if (!j.is_object())
        return e;
    e.observations = j.value("observations", std::size_t(0));
    e.medianRel = j.value("median_rel", 0.0);
    e.rmsRel = j.value("rms_rel", 0.0);
    e.maxRel = j.value("max_rel", 0.0);
    return e;
}

} // namespace bp
