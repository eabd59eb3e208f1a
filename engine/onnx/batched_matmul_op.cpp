#include "engine/onnx/batched_matmul_op.h"

#include "engine/util/check.h"

namespace mantissa::onnx_import {

namespace {

struct ProductContext final : LayerContext {
    Tensor a, b;
};

} // namespace

void BatchedProduct::applyPrecision(const PrecisionPolicy& policy, const LayerDTypes& dtypes)
{
    m_covered = quantisesAttention(dtypes.gemmRecipes.activation, policy.recipeOptions());
    LayerDTypes own = dtypes;
    if (!m_covered)
        own.gemmRecipes = {};
    Layer::applyPrecision(policy, own);
}

ForwardResult BatchedProduct::forward(PassState&, const Tensor&)
{
    assertionFailed("a batched product runs inside its MatMul op", __FILE__, __LINE__);
}

Tensor BatchedProduct::backward(PassState&, const Tensor&, LayerContext*)
{
    assertionFailed("a batched product runs inside its MatMul op", __FILE__, __LINE__);
}

void BatchedProduct::multiply(PassState& pass, GemmPass gemm, Transpose ta, Transpose tb, std::int64_t m,
                              std::int64_t n, std::int64_t k, float alpha, const Tensor& a, std::int64_t strideA,
                              const KLayout& layoutA, GemmOperand roleA, const Tensor& b, std::int64_t strideB,
                              const KLayout& layoutB, GemmOperand roleB, Tensor& c, std::int64_t planes)
{
    const GemmOperandValues qa = gemmInput(pass, a, gemm, roleA, layoutA);
    const GemmOperandValues qb = gemmInput(pass, b, gemm, roleB, layoutB);
    // alpha first, as the engine's attention products multiply it (attention_product.cpp).
    pass.backend.gemmStridedBatched(ta, tb, m, n, k, alpha * qa.scale * qb.scale, qa.values, strideA, qb.values,
                                    strideB, 0.0f, c, m * n, planes);
}

std::vector<Shape> BatchedMatMulOp::outputShapes(const std::vector<Shape>& inputs) const
{
    MANTISSA_ASSERT(inputs.size() == 2);
    std::vector<std::int64_t> dims{inputs[0][0]};
    dims.insert(dims.end(), m_output.dims().begin(), m_output.dims().end());
    return {Shape(dims)};
}

OpForward BatchedMatMulOp::forward(PassState& pass, const std::vector<Tensor>& inputs)
{
    const Tensor& a = inputs.at(0);
    const Tensor& b = inputs.at(1);
    const std::int64_t batch = a.shape()[0];
    const std::int64_t planes = batch * m_planes;
    Tensor c = pass.backend.empty(outputShapes({a.shape(), b.shape()})[0], m_types.output);
    m_product.multiply(pass, GemmPass::Forward, Transpose::No, Transpose::No, m_m, m_n, m_k, m_alpha, a, m_m * m_k,
                       KLayout::rows(planes * m_m, m_k), GemmOperand::Activation, b, m_k * m_n,
                       KLayout::along(planes, m_k, m_n), GemmOperand::Weight, c, planes);
    OpForward result;
    result.outputs.push_back(c);
    if (pass.training) {
        auto context = std::make_unique<ProductContext>();
        context->a = a;
        context->b = b;
        result.context = std::move(context);
    }
    return result;
}

std::vector<Tensor> BatchedMatMulOp::backward(PassState& pass, const std::vector<Tensor>& outputGradients,
                                              LayerContext* context, const std::vector<bool>& inputGradNeeded)
{
    auto& saved = static_cast<ProductContext&>(*context);
    const Tensor& dc = outputGradients.at(0);
    const std::int64_t planes = dc.shape()[0] * m_planes;
    std::vector<Tensor> gradients(2);
    if (inputGradNeeded.at(0)) { // dA = dC B^T, K = n
        gradients[0] = pass.backend.empty(saved.a.shape(), m_types.leftGradient);
        m_product.multiply(pass, GemmPass::DataGrad, Transpose::No, Transpose::Yes, m_m, m_k, m_n, m_alpha, dc,
                           m_m * m_n, KLayout::rows(planes * m_m, m_n), GemmOperand::Gradient, saved.b, m_k * m_n,
                           KLayout::rows(planes * m_k, m_n), GemmOperand::Weight, gradients[0], planes);
    }
    if (inputGradNeeded.at(1)) { // dB = A^T dC, K = m
        gradients[1] = pass.backend.empty(saved.b.shape(), computeType());
        m_product.multiply(pass, GemmPass::WeightGrad, Transpose::Yes, Transpose::No, m_k, m_n, m_m, m_alpha, saved.a,
                           m_m * m_k, KLayout::along(planes, m_m, m_k), GemmOperand::Activation, dc, m_m * m_n,
                           KLayout::along(planes, m_m, m_n), GemmOperand::Gradient, gradients[1], planes);
    }
    return gradients;
}

} // namespace mantissa::onnx_import
