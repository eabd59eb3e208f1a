#include "engine/model/layers/mlp.h"

namespace mantissa {

namespace {
struct MlpContext final : LayerContext {
    std::unique_ptr<LayerContext> up, down;
};
} // namespace

Mlp::Mlp(std::int64_t width, std::int64_t hidden, std::int64_t tokens, bool bias)
    : m_width(width), m_hidden(hidden),
      m_up(std::make_unique<Linear>(width, hidden, bias, "", false, tokens), Activation::Gelu),
      // Xavier for the projection back: it feeds a residual sum, not an activation.
      m_down(hidden, width, bias, "", true, tokens)
{}

std::vector<Parameter*> Mlp::parameters()
{
    std::vector<Parameter*> all = m_down.parameters();
    for (Parameter* p : m_up.parameters())
        all.push_back(p);
    return all;
}

ForwardResult Mlp::forward(PassState& pass, const Tensor& x)
{
    auto context = std::make_unique<MlpContext>();
    ForwardResult up = m_up.forward(pass, x);
    context->up = std::move(up.context);
    ForwardResult down = m_down.forward(pass, up.output);
    context->down = std::move(down.context);
    return {down.output, std::move(context)};
}

Tensor Mlp::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    auto& saved = static_cast<MlpContext&>(*context);
    const bool inputGradNeeded = pass.inputGradNeeded;
    pass.inputGradNeeded = true;
    const Tensor dHidden = m_down.backward(pass, dy, saved.down.get());
    pass.inputGradNeeded = inputGradNeeded;
    return m_up.backward(pass, dHidden, saved.up.get());
}

} // namespace mantissa
