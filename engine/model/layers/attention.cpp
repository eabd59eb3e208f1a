#include "engine/model/layers/attention.h"

#include "engine/util/check.h"

#include <cmath>

namespace mantissa {

namespace {

struct AttentionContext final : LayerContext {
    std::unique_ptr<LayerContext> query, key, value, output;
    Tensor q, k, v; // [N, H, T, dh], compute type
    Tensor probs;   // [N H, T, T] before dropout, compute type
    Tensor dropped; // what P V read: probs after dropout (probs itself without it)
    Tensor mask;    // dropout mask, undefined without dropout
    std::int64_t tokens = 0;
};

// FNV-1a of the layer name, so that each attention layer draws its own dropout mask (as the
// dropout layer does).
std::uint64_t nameHash(const std::string& name)
{
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : name)
        h = (h ^ c) * 0x100000001b3ull;
    return h;
}

} // namespace

Attention::Attention(std::int64_t width, std::int64_t heads, std::int64_t tokens, bool causal,
                     InternalPrecision softmax, float dropout, bool bias)
    : m_width(width), m_heads(heads), m_headDim(width / heads), m_tokens(tokens), m_causal(causal), m_softmax(softmax),
      m_dropout(dropout), m_query(width, width, bias, "", true, tokens), m_key(width, width, bias, "", true, tokens),
      m_value(width, width, bias, "", true, tokens), m_output(width, width, bias, "", true, tokens),
      m_scores(width / heads, tokens), m_context(width / heads, tokens)
{
    MANTISSA_ASSERT(heads > 0 && width % heads == 0);
}

std::vector<Parameter*> Attention::parameters()
{
    std::vector<Parameter*> all;
    for (Linear* projection : {&m_output, &m_value, &m_key, &m_query})
        for (Parameter* p : projection->parameters())
            all.push_back(p);
    return all;
}

ForwardResult Attention::forward(PassState& pass, const Tensor& x)
{
    Backend& be = pass.backend;
    const std::int64_t batch = x.shape()[0], tokens = x.shape()[1];
    const std::int64_t planes = batch * m_heads;
    auto context = std::make_unique<AttentionContext>();
    context->tokens = tokens;
    // Each projection gives [N, T, H, dh]; the heads move out of the token axis.
    // The three projections read the same x (and keep it for their weight gradients): widened
    // once where the backend would widen it for each, unless a recipe quantises their inputs.
    const bool plainProjections = !m_query.quantisesGemms() && !m_key.quantisesGemms() && !m_value.quantisesGemms();
    const Tensor input = plainProjections ? be.widenedForGemms(x) : x;
    auto project = [&](Linear& projection, std::unique_ptr<LayerContext>& saved) {
        ForwardResult out = projection.forward(pass, input);
        saved = std::move(out.context);
        Tensor heads = be.empty({batch, m_heads, tokens, m_headDim}, computeType());
        be.swapAxes(out.output, heads, batch, tokens, m_heads, m_headDim);
        return heads;
    };
    const Tensor q = project(m_query, context->query);
    const Tensor k = project(m_key, context->key);
    const Tensor v = project(m_value, context->value);

    const float scale = 1.0f / std::sqrt(static_cast<float>(m_headDim));
    const std::int64_t headStride = tokens * m_headDim, planeStride = tokens * tokens;
    const KLayout headRows = KLayout::rows(planes * tokens, m_headDim);
    const AttentionScoreTypes types = scoreTypes();
    Tensor scores = be.empty({planes, tokens, tokens}, types.scores);
    m_scores.multiply(pass, GemmPass::Forward, tokens, tokens, m_headDim, scale,
                      {q, headStride, Transpose::No, headRows}, GemmOperand::Activation,
                      {k, headStride, Transpose::Yes, headRows}, GemmOperand::Weight, scores, planeStride, planes);
    if (pass.tap)
        pass.tap->insideForward(pass.layerIndex, name() + ".scores", scores);
    Tensor probs = be.empty(scores.shape(), types.probabilities);
    be.softmaxForward(scores, probs, tokens, tokens, m_causal, types.scores);
    Tensor dropped = probs;
    if (pass.training && m_dropout > 0.0f) {
        dropped = be.empty(probs.shape(), types.probabilities);
        context->mask = be.empty(probs.shape(), DType::F32);
        be.dropoutForward(probs, dropped, context->mask, m_dropout, pass.seed ^ nameHash(name()), pass.step);
    }
    Tensor heads = be.empty({batch, m_heads, tokens, m_headDim}, computeType());
    m_context.multiply(pass, GemmPass::Forward, tokens, m_headDim, tokens, 1.0f,
                       {dropped, planeStride, Transpose::No, KLayout::rows(planes * tokens, tokens)},
                       GemmOperand::Activation,
                       {v, headStride, Transpose::No, KLayout::along(planes, tokens, m_headDim)}, GemmOperand::Weight,
                       heads, headStride, planes);
    Tensor merged = be.empty({batch, tokens, m_width}, computeType());
    be.swapAxes(heads, merged, batch, m_heads, tokens, m_headDim);
    ForwardResult out = m_output.forward(pass, merged);
    context->output = std::move(out.context);
    if (pass.training) {
        context->q = q;
        context->k = k;
        context->v = v;
        context->probs = probs;
        context->dropped = dropped;
    }
    return {out.output, std::move(context)};
}

Tensor Attention::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    auto& saved = static_cast<AttentionContext&>(*context);
    MANTISSA_ASSERT(saved.q.defined()); // backward follows a training forward
    Backend& be = pass.backend;
    const bool inputGradNeeded = pass.inputGradNeeded;
    const std::int64_t batch = dy.shape()[0], tokens = saved.tokens;
    const std::int64_t planes = batch * m_heads;
    const std::int64_t headStride = tokens * m_headDim, planeStride = tokens * tokens;

    pass.inputGradNeeded = true;
    const Tensor dMerged = m_output.backward(pass, dy, saved.output.get());
    // dO and dS each feed two GEMMs: widened once where the backend's GEMMs would widen them
    // for each (Backend::widenedForGemms). The 16-bit tensor is dropped as soon as it is
    // widened: only the copy is read after.
    const Tensor dHeads = [&] {
        Tensor stored = be.empty({batch, m_heads, tokens, m_headDim}, computeType());
        be.swapAxes(dMerged, stored, batch, tokens, m_heads, m_headDim);
        return be.widenedForGemms(stored);
    }();

    // dP' = dO V^T and dV = P'^T dO, where P' is P after dropout. K runs along the head
    // dimension in the first, along the queries in the second.
    const KLayout headRows = KLayout::rows(planes * tokens, m_headDim);
    const KLayout alongQueries = KLayout::along(planes, tokens, m_headDim);
    const AttentionScoreTypes types = scoreTypes();
    Tensor dDropped = be.empty({planes, tokens, tokens}, types.probabilitiesGradient);
    m_context.multiply(pass, GemmPass::DataGrad, tokens, tokens, m_headDim, 1.0f,
                       {dHeads, headStride, Transpose::No, headRows}, GemmOperand::Gradient,
                       {saved.v, headStride, Transpose::Yes, headRows}, GemmOperand::Weight, dDropped, planeStride,
                       planes);
    Tensor dv = be.empty({batch, m_heads, tokens, m_headDim}, computeType());
    m_context.multiply(pass, GemmPass::WeightGrad, tokens, m_headDim, tokens, 1.0f,
                       {saved.dropped, planeStride, Transpose::Yes, KLayout::along(planes, tokens, tokens)},
                       GemmOperand::Activation, {dHeads, headStride, Transpose::No, alongQueries},
                       GemmOperand::Gradient, dv, headStride, planes);
    Tensor dProbs = dDropped;
    if (saved.mask.defined()) {
        dProbs = be.empty(dDropped.shape(), types.probabilitiesGradient);
        be.dropoutBackward(dDropped, saved.mask, dProbs);
    }
    // The softmax's fp32 result is rounded straight into dS's type (the same one rounding as a cast).
    const Tensor dS = [&] {
        Tensor stored = be.empty(dProbs.shape(), types.scoresGradient);
        be.softmaxBackward(saved.probs, dProbs, stored, tokens);
        return be.widenedForGemms(stored);
    }();
    const float scale = 1.0f / std::sqrt(static_cast<float>(m_headDim));
    // dQ = dS K / sqrt(dh) (K along the keys) and dK = dS^T Q / sqrt(dh) (K along the queries).
    Tensor dq = be.empty({batch, m_heads, tokens, m_headDim}, computeType());
    m_scores.multiply(pass, GemmPass::DataGrad, tokens, m_headDim, tokens, scale,
                      {dS, planeStride, Transpose::No, KLayout::rows(planes * tokens, tokens)}, GemmOperand::Gradient,
                      {saved.k, headStride, Transpose::No, alongQueries}, GemmOperand::Weight, dq, headStride, planes);
    Tensor dk = be.empty({batch, m_heads, tokens, m_headDim}, computeType());
    m_scores.multiply(pass, GemmPass::WeightGrad, tokens, m_headDim, tokens, scale,
                      {dS, planeStride, Transpose::Yes, KLayout::along(planes, tokens, tokens)}, GemmOperand::Gradient,
                      {saved.q, headStride, Transpose::No, alongQueries}, GemmOperand::Activation, dk, headStride,
                      planes);

    // Each projection's dx; their sum is the layer's (formed only when it is needed).
    auto projectBack = [&](Linear& projection, const Tensor& dHeadsOf, LayerContext* saved) {
        Tensor dTokens = be.empty({batch, tokens, m_width}, computeType());
        be.swapAxes(dHeadsOf, dTokens, batch, m_heads, tokens, m_headDim);
        return projection.backward(pass, dTokens, saved);
    };
    pass.inputGradNeeded = inputGradNeeded;
    const Tensor dxV = projectBack(m_value, dv, saved.value.get());
    const Tensor dxK = projectBack(m_key, dk, saved.key.get());
    const Tensor dxQ = projectBack(m_query, dq, saved.query.get());
    if (!inputGradNeeded)
        return {};
    Tensor dx = be.empty(dxQ.shape(), computeType());
    be.add(dxQ, dxK, dx);
    be.add(dx, dxV, dx);
    return dx;
}

std::int64_t Attention::parameterCount() const
{
    return m_query.parameterCount() + m_key.parameterCount() + m_value.parameterCount() + m_output.parameterCount();
}

std::int64_t Attention::flopsPerSample() const
{
    return m_query.flopsPerSample() + m_key.flopsPerSample() + m_value.flopsPerSample() + m_output.flopsPerSample() +
           4 * m_tokens * m_tokens * m_width;
}

} // namespace mantissa
