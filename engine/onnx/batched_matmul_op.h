#pragma once
// ONNX's MatMul of two computed values, C = A B over the last two axes with the axes before them
// as planes ([planes, m, k] x [planes, k, n]): attention's scores Q K^T and its context P V, as
// PyTorch exports them. It is a GEMM site of the model (BatchedProduct, named by the node), and
// follows the run's recipe as the engine's own attention products do: under
// precision.recipe.attention its operands are quantised (the left one as the activation, the
// right one in the activation's format, the output's gradient as the gradient), otherwise it
// multiplies in the compute type with an fp32 sum.
#include "engine/model/graph/graph_op.h"

namespace mantissa::onnx_import {

class BatchedProduct final : public Layer {
public:
    BatchedProduct(std::int64_t m, std::int64_t n, std::int64_t k) : m_m(m), m_n(n), m_k(k) {}

    LayerKind kind() const override { return LayerKind::Attention; }
    Shape outputShape(const Shape& input) const override { return input; }
    void applyPrecision(const PrecisionPolicy& policy, const LayerDTypes& dtypes) override;
    bool runsGemms() const override { return m_covered; }
    // The K of the forward (k), of the left operand's gradient (n) and of the right one's (m).
    std::vector<std::pair<std::string, std::int64_t>> blockedWidths() const override
    {
        return {{"inner dimension", m_k}, {"columns", m_n}, {"rows", m_m}};
    }
    std::vector<std::pair<std::string, std::int64_t>> tensorCoreExtents() const override { return blockedWidths(); }
    std::int64_t flopsPerSample() const override { return 0; } // counted per plane by the op's node
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;

    // c_p = op(a_p) op(b_p) for `planes` planes, each operand prepared for `gemm` in its role.
    void multiply(PassState& pass, GemmPass gemm, Transpose ta, Transpose tb, std::int64_t m, std::int64_t n,
                  std::int64_t k, float alpha, const Tensor& a, std::int64_t strideA, const KLayout& layoutA,
                  GemmOperand roleA, const Tensor& b, std::int64_t strideB, const KLayout& layoutB, GemmOperand roleB,
                  Tensor& c, std::int64_t planes);

protected:
    bool weightOperandIsWeight() const override { return false; }

private:
    std::int64_t m_m, m_n, m_k;
    bool m_covered = false;
};

// The dtypes a batched product writes C in, takes C's gradient in and writes A's gradient in:
// the compute type, but for attention's (attention_scores.h) S = Q K^T, written as the scores
// (and its gradient dS taken as the softmax gives it), and O = P V, whose dP is written as dP.
struct ProductTypes {
    DType output, outputGradient, leftGradient;
};

class BatchedMatMulOp final : public GraphOp {
public:
    // Per sample: `planes` products of [m, k] by [k, n], times `alpha` (a Mul of the product by
    // a scalar that the compilation folded: attention_pattern.h); `output` is C's per-sample shape.
    BatchedMatMulOp(BatchedProduct& product, std::int64_t planes, std::int64_t m, std::int64_t n, std::int64_t k,
                    Shape output, float alpha, ProductTypes types)
        : m_product(product), m_planes(planes), m_m(m), m_n(n), m_k(k), m_output(std::move(output)), m_alpha(alpha),
          m_types(types)
    {}

    std::string name() const override { return m_product.name(); }
    DType computeType() const override { return m_product.computeType(); }
    DType outputType(std::size_t) const override { return m_types.output; }
    DType outputGradientType(std::size_t) const override { return m_types.outputGradient; }
    std::optional<DType> inputType(std::size_t) const override { return m_product.computeType(); }
    std::vector<Shape> outputShapes(const std::vector<Shape>& inputs) const override;
    OpForward forward(PassState& pass, const std::vector<Tensor>& inputs) override;
    std::vector<Tensor> backward(PassState& pass, const std::vector<Tensor>& outputGradients, LayerContext* context,
                                 const std::vector<bool>& inputGradNeeded) override;
    Layer* layer() override { return &m_product; }

private:
    BatchedProduct& m_product;
    std::int64_t m_planes, m_m, m_n, m_k;
    Shape m_output;
    float m_alpha;
    ProductTypes m_types;
};

} // namespace mantissa::onnx_import
