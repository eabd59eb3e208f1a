#include "engine/model/layers/patch_embedding.h"

namespace mantissa {

PatchEmbedding::PatchEmbedding(const Shape& input, std::int64_t width, std::int64_t patch, bool bias, std::string init)
    : m_width(width), m_tokens((input[1] / patch) * (input[2] / patch)),
      m_projection(input, width, patch, patch, 0, bias, std::move(init), true)
{}

ForwardResult PatchEmbedding::forward(PassState& pass, const Tensor& x)
{
    ForwardResult projected = m_projection.forward(pass, x); // [N, width, H/p, W/p]
    const std::int64_t batch = x.shape()[0];
    Tensor tokens = pass.backend.empty({batch, m_tokens, m_width}, computeType());
    pass.backend.swapAxes(projected.output, tokens, batch, m_width, m_tokens, 1);
    return {tokens, std::move(projected.context)};
}

Tensor PatchEmbedding::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    const std::int64_t batch = dy.shape()[0];
    Tensor dProjected = pass.backend.empty(m_projection.outputShape({batch, 0, 0, 0}), computeType());
    pass.backend.swapAxes(dy, dProjected, batch, m_tokens, m_width, 1);
    return m_projection.backward(pass, dProjected, context);
}

} // namespace mantissa
