#pragma once
// Max or average pooling over windows of NCHW images. Max pooling treats padding as -inf;
// average pooling divides by the inputs inside the image (padding excluded) unless the
// geometry counts the padding (PoolGeometry::countPadding).
#include "engine/backend/geometry.h"
#include "engine/model/layer.h"

namespace mantissa {

enum class PoolKind : std::uint8_t { Max, Avg };

class Pool2d final : public Layer {
public:
    // `input` is the validated per-sample shape {channels, height, width}.
    Pool2d(PoolKind kind, const Shape& input, std::int64_t kernel, std::int64_t stride, std::int64_t padding);
    // Any window the backends run: rectangular, with its own strides and padding per axis, the
    // padding after the image what the output extents reach (geometry.h). `perSample` has n = 0;
    // every window must hold an input of the image.
    Pool2d(PoolKind kind, const PoolGeometry& perSample);

    LayerKind kind() const override { return m_kind == PoolKind::Max ? LayerKind::MaxPool : LayerKind::AvgPool; }
    Shape outputShape(const Shape& input) const override;
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;
    // One comparison or addition per window element; no multiply-adds.
    std::int64_t flopsPerSample() const override;
    // Its geometry for a batch of `batch` samples (n = batch).
    PoolGeometry geometry(std::int64_t batch) const;

private:
    PoolKind m_kind;
    PoolGeometry m_shape; // per-sample geometry; n is set per batch
};

} // namespace mantissa
