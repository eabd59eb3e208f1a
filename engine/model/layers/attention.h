#pragma once
// Multi-head scaled dot-product self-attention over x [N, T, width], causal or not:
//   Q, K, V = x Wq^T + bq, ...      (linear layers: GEMMs under the precision policy)
//   S = Q_h K_h^T / sqrt(dh)         per head, as one strided-batched GEMM
//   P = softmax(S) (causal mask), dropout on P while training
//   O = P V_h, heads concatenated, y = O Wo^T + bo
// The two batched products are sublayers of their own ("scores", "context",
// attention_product.h), which quantise their inputs under precision.recipe.attention.
// "softmax" ("fp32", the default, or "compute") chooses the dtypes S, P and their gradients are
// held in: attention_scores.h states that rule (scores beyond 65504 become inf in fp16 under
// "compute" and their rows NaN, as in PyTorch issues 119131 and 60939).
#include "engine/model/layers/attention_product.h"
#include "engine/model/layers/attention_scores.h"
#include "engine/model/layers/linear.h"

namespace mantissa {

class Attention final : public Layer {
public:
    // `tokens` is the model's sequence length (for FLOPs; a forward takes T from its input).
    Attention(std::int64_t width, std::int64_t heads, std::int64_t tokens, bool causal, InternalPrecision softmax,
              float dropout, bool bias);

    LayerKind kind() const override { return LayerKind::Attention; }
    Shape outputShape(const Shape& input) const override { return input; }
    std::vector<Sublayer> sublayers() override
    {
        return {{&m_query, "query"},   {&m_key, "key", true},   {&m_value, "value", true},
                {&m_scores, "scores"}, {&m_context, "context"}, {&m_output, "output"}};
    }
    // In the order backward writes them: the output projection, then V, K, Q.
    std::vector<Parameter*> parameters() override;
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;
    std::int64_t parameterCount() const override;
    // The four projections (8 T width^2) and the quadratic term: S and P V, 2 T^2 width each.
    // A causal mask skips half of S's values, but the GEMMs compute them all.
    std::int64_t flopsPerSample() const override;

    std::int64_t width() const { return m_width; }
    std::int64_t heads() const { return m_heads; }
    Linear& query() { return m_query; }
    Linear& key() { return m_key; }
    Linear& value() { return m_value; }
    Linear& output() { return m_output; }
    bool causal() const { return m_causal; }
    float dropout() const { return m_dropout; }

    // The dtypes S, P, dP and dS are held in for this layer's compute type (attention_scores.h).
    AttentionScoreTypes scoreTypes() const { return attentionScoreTypes(m_softmax, computeType()); }

private:
    std::int64_t m_width, m_heads, m_headDim, m_tokens;
    bool m_causal;
    InternalPrecision m_softmax;
    float m_dropout;
    Linear m_query, m_key, m_value, m_output;
    AttentionProduct m_scores, m_context; // S = Q K^T / sqrt(dh), O = P V
};

} // namespace mantissa
