#include "engine/model/layers/dropout.h"

namespace mantissa {

namespace {
struct DropoutContext final : LayerContext {
    Tensor mask; // undefined when the pass kept every value
};

// FNV-1a of the layer name, so that each dropout layer draws its own mask.
std::uint64_t nameHash(const std::string& name)
{
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : name)
        h = (h ^ c) * 0x100000001b3ull;
    return h;
}
} // namespace

ForwardResult Dropout::forward(PassState& pass, const Tensor& x)
{
    auto context = std::make_unique<DropoutContext>();
    if (!pass.training || m_rate == 0.0f)
        return {x, std::move(context)};
    Tensor y = pass.backend.empty(x.shape(), computeType());
    context->mask = pass.backend.empty(x.shape(), DType::F32);
    pass.backend.dropoutForward(x, y, context->mask, m_rate, pass.seed ^ nameHash(name()), pass.step);
    return {y, std::move(context)};
}

Tensor Dropout::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    auto& saved = static_cast<DropoutContext&>(*context);
    if (!pass.inputGradNeeded)
        return {};
    if (!saved.mask.defined())
        return dy;
    Tensor dx = pass.backend.empty(dy.shape(), computeType());
    pass.backend.dropoutBackward(dy, saved.mask, dx);
    return dx;
}

} // namespace mantissa
