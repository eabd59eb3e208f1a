#pragma once
// [N, C, H, W] -> [N, C*H*W]; a view, no copy.
#include "engine/model/layer.h"

namespace mantissa {

class Flatten final : public Layer {
public:
    LayerKind kind() const override { return LayerKind::Flatten; }
    Shape outputShape(const Shape& input) const override { return {input[0], input.perSample()}; }
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;
};

} // namespace mantissa
