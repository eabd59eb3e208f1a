#pragma once
// Fully connected layer: y = x W^T + b over the last axis, x [N, in] or [N, tokens, in]
// (every token through the same weights), W [out, in]. The GEMMs take inputs in the compute
// type and accumulate in fp32 (tensor-core semantics).
#include "engine/model/layer.h"

namespace mantissa {

class Linear final : public Layer {
public:
    // `init`: "" (He-normal, or Xavier when `xavier`), "normal:STD" or "uniform:A".
    // `tokens` is the per-sample row count: 1 for a feature vector, T for [T, in].
    Linear(std::int64_t inFeatures, std::int64_t outFeatures, bool bias, std::string init, bool xavier,
           std::int64_t tokens = 1);

    LayerKind kind() const override { return LayerKind::Linear; }
    Shape outputShape(const Shape& input) const override;
    void createParameters(Backend& backend, DType masterType, std::uint64_t seed) override;
    // Without a tied table: the weight, then the bias. A tied head lists only its bias: the
    // table belongs to the token embedding, which lists it once.
    std::vector<Parameter*> parameters() override;
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;
    std::int64_t parameterCount() const override
    {
        return (m_sharesTable ? 0 : m_in * m_out) + (m_hasBias ? m_out : 0);
    }
    std::int64_t flopsPerSample() const override { return 2 * m_tokens * m_in * m_out; }
    std::vector<std::pair<std::string, std::int64_t>> tensorCoreExtents() const override
    {
        return {{"in features", m_in}, {"out features", m_out}};
    }
    bool runsGemms() const override { return true; }
    std::vector<std::pair<std::string, std::int64_t>> blockedWidths() const override { return tensorCoreExtents(); }

    // Weight tying ("tied": true): computes with `table` ([out, in], the token embedding's)
    // instead of a weight of its own, and writes its gradient there first; the embedding's
    // backward, which runs after, adds its own. Call before createParameters.
    void tieWeight(Parameter* table) { m_tied = table; }
    // Set by the factory for "tied": true, so that the parameter count leaves out the table
    // (counted once, by the embedding) before the model ties it.
    void setSharesTable(bool shares) { m_sharesTable = shares; }
    // Set by a ReLU's wrapper (ActivatedLayer): the output is max(0, x W^T + b), the ReLU fused
    // into the product's epilogue where the backend can (gemmRowBias), with the bits of a ReLU
    // layer after it.
    void setReluAfter(bool relu) { m_reluAfter = relu; }
    // What an exporter needs to write the layer (engine/onnx/export_layer_list.cpp).
    bool hasBias() const { return m_hasBias; }
    bool sharesTable() const { return m_sharesTable || m_tied; }
    std::int64_t tokens() const { return m_tokens; }
    std::int64_t inFeatures() const { return m_in; }
    std::int64_t outFeatures() const { return m_out; }

protected:
    // dW = dy^T x is all the rotated inputs feed (the bias gradient sums the unquantised dy).
    bool weightGradientMayRotate() const override { return true; }
    // Its GEMMs are whole matrix products, so fp8-block's scales apply per K-chunk.
    bool gemmTakesBlockScales() const override { return true; }

private:
    Parameter& weight() { return m_tied ? *m_tied : m_weight; }

    std::int64_t m_in, m_out, m_tokens;
    bool m_hasBias;
    std::string m_init;
    bool m_xavier;
    Parameter m_weight, m_bias;
    Parameter* m_tied = nullptr;
    bool m_sharesTable = false;
    bool m_reluAfter = false;
};

} // namespace mantissa
