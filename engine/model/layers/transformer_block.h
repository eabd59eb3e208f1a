#pragma once
// The pre-norm transformer block over [N, T, width]:
//   h = x + attention(norm1(x)),  y = h + mlp(norm2(h))
// (GPT-2 and ViT's arrangement: the residual path itself is never normalised). Its parts are
// named "<block>.norm1", "<block>.attention", "<block>.norm2", "<block>.mlp" and compute in the
// block's type; the editor shows the block as one row that expands into them (parts()).
//
// In a model the block compiles into graph nodes (appendTo): x in the block's type (CastOp),
// norm1, attention, the first addition (AddOp), norm2, MLP and the second addition, so the
// residual paths are the graph's forks, whose gradients the graph sums.
#include "engine/model/graph/block_graph.h"
#include "engine/model/layers/attention.h"
#include "engine/model/layers/mlp.h"
#include "engine/model/layers/row_norm.h"

namespace mantissa {

struct TransformerSettings {
    std::int64_t width = 0, heads = 1, hidden = 0, tokens = 0;
    bool causal = false;
    RowNormKind norm = RowNormKind::LayerNorm;
    InternalPrecision softmax = InternalPrecision::Fp32, statistics = InternalPrecision::Fp32;
    float epsilon = 1e-5f, attentionDropout = 0;
};

class TransformerBlock final : public Layer {
public:
    explicit TransformerBlock(const TransformerSettings& s);

    LayerKind kind() const override { return LayerKind::Transformer; }
    Shape outputShape(const Shape& input) const override { return input; }
    std::vector<Sublayer> sublayers() override
    {
        return {{&m_norm1, "norm1"}, {&m_attention, "attention"}, {&m_norm2, "norm2"}, {&m_mlp, "mlp"}};
    }
    // In the order backward writes them: the MLP, norm2, attention, norm1.
    std::vector<Parameter*> parameters() override;
    void applyPrecision(const PrecisionPolicy& policy, const LayerDTypes& dtypes) override;
    std::size_t appendTo(Graph& graph, std::size_t input) override;
    // The block's own graph (block_graph.h), for running it outside a model's graph.
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;
    std::int64_t parameterCount() const override;
    // The parts' FLOPs and the two residual additions.
    std::int64_t flopsPerSample() const override;
    std::vector<const Layer*> parts() const override { return {&m_norm1, &m_attention, &m_norm2, &m_mlp}; }
    RowNorm& norm1() { return m_norm1; }
    Attention& attention() { return m_attention; }
    RowNorm& norm2() { return m_norm2; }
    Mlp& mlp() { return m_mlp; }

protected:
    bool partsAreGraphNodes() const override { return true; }

private:
    Shape m_input;         // per sample: [tokens, width]
    std::int64_t m_values; // per sample
    RowNorm m_norm1;
    Attention m_attention;
    RowNorm m_norm2;
    Mlp m_mlp;
    BlockGraph m_graph;
};

} // namespace mantissa
