#include "engine/model/layers/attention_product.h"

#include "engine/util/check.h"

namespace mantissa {

void AttentionProduct::applyPrecision(const PrecisionPolicy& policy, const LayerDTypes& dtypes)
{
    // Attention's products follow the layer's inputs' recipe where precision.recipe.attention says so.
    m_covered = quantisesAttention(dtypes.gemmRecipes.activation, policy.recipeOptions());
    LayerDTypes own = dtypes;
    if (!m_covered)
        own.gemmRecipes = {};
    Layer::applyPrecision(policy, own);
}

ForwardResult AttentionProduct::forward(PassState&, const Tensor&)
{
    assertionFailed("an attention product runs inside its attention layer", __FILE__, __LINE__);
}

Tensor AttentionProduct::backward(PassState&, const Tensor&, LayerContext*)
{
    assertionFailed("an attention product runs inside its attention layer", __FILE__, __LINE__);
}

void AttentionProduct::multiply(PassState& pass, GemmPass gemm, std::int64_t m, std::int64_t n, std::int64_t k,
                                float alpha, const BatchedOperand& a, GemmOperand roleA, const BatchedOperand& b,
                                GemmOperand roleB, Tensor& c, std::int64_t strideC, std::int64_t planes)
{
    const GemmOperandValues qa = gemmInput(pass, a.values, gemm, roleA, a.layout);
    const GemmOperandValues qb = gemmInput(pass, b.values, gemm, roleB, b.layout);
    // Per-tensor FP8 elements: the fp32 sum is multiplied by both decode scales, as alpha is.
    pass.backend.gemmStridedBatched(a.op, b.op, m, n, k, alpha * qa.scale * qb.scale, qa.values, a.stride, qb.values,
                                    b.stride, 0.0f, c, strideC, planes);
}

} // namespace mantissa
