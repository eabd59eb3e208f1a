#pragma once
// One of attention's two batched products, per head: the scores S = Q K^T / sqrt(dh) or the
// context O = P V. It is a GEMM site of its own ("<attention>.scores", "<attention>.context"),
// so that under precision.recipe.attention its inputs go through the run's recipe as a linear
// layer's do, each with its own delayed-scaling history: the left operand (Q or P) as the
// activation, the right one (K or V) as the weight but in the activation's format (it is an
// activation, blocked along K, never in a weight's 2D tiles), and the output's gradient as the
// gradient. Off (the default, as Transformer Engine keeps them in bf16 unless FP8 attention is
// enabled), it multiplies the compute type as it is. The attention layer runs it; the model
// never does on its own.
#include "engine/model/layer.h"

namespace mantissa {

// Where one operand of a strided-batched product lies: its tensor, the distance between its
// planes, how the product reads it (op), and where its K runs (for the recipe's blocks).
struct BatchedOperand {
    const Tensor& values;
    std::int64_t stride;
    Transpose op;
    KLayout layout;
};

class AttentionProduct final : public Layer {
public:
    // Both products reduce over the head dimension in one GEMM and the sequence in another.
    AttentionProduct(std::int64_t headDim, std::int64_t tokens) : m_headDim(headDim), m_tokens(tokens) {}

    LayerKind kind() const override { return LayerKind::Attention; }
    Shape outputShape(const Shape& input) const override { return input; }
    // Follows the recipe only where precision.recipe.attention says so.
    void applyPrecision(const PrecisionPolicy& policy, const LayerDTypes& dtypes) override;
    // A GEMM the recipe covers only under precision.recipe.attention.
    bool runsGemms() const override { return m_covered; }
    std::vector<std::pair<std::string, std::int64_t>> blockedWidths() const override
    {
        return {{"head dimension", m_headDim}, {"sequence length", m_tokens}};
    }
    std::vector<std::pair<std::string, std::int64_t>> tensorCoreExtents() const override { return blockedWidths(); }
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;

    // c_i = alpha * op(a_i) op(b_i) for each of `planes` planes (Backend::gemmStridedBatched),
    // each operand prepared for the GEMM of `gemm` as the role `roleA` / `roleB`.
    void multiply(PassState& pass, GemmPass gemm, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                  const BatchedOperand& a, GemmOperand roleA, const BatchedOperand& b, GemmOperand roleB, Tensor& c,
                  std::int64_t strideC, std::int64_t planes);

protected:
    bool weightOperandIsWeight() const override { return false; }

private:
    std::int64_t m_headDim, m_tokens;
    bool m_covered = false;
};

} // namespace mantissa
