#include "engine/model/layers/flatten.h"

namespace mantissa {

namespace {
struct FlattenContext final : LayerContext {
    Shape inputShape;
};
} // namespace

ForwardResult Flatten::forward(PassState&, const Tensor& x)
{
    auto context = std::make_unique<FlattenContext>();
    context->inputShape = x.shape();
    return {x.reshaped(outputShape(x.shape())), std::move(context)};
}

Tensor Flatten::backward(PassState&, const Tensor& dy, LayerContext* context)
{
    return dy.reshaped(static_cast<FlattenContext&>(*context).inputShape);
}

} // namespace mantissa
