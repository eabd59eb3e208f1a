#include "engine/model/layers/pool2d.h"

#include "engine/util/check.h"

namespace mantissa {

namespace {
struct PoolContext final : LayerContext {
    Shape inputShape;
    Tensor argmax; // max pooling only
};
} // namespace

Pool2d::Pool2d(PoolKind kind, const Shape& input, std::int64_t kernel, std::int64_t stride, std::int64_t padding)
    : m_kind(kind)
{
    m_shape.channels = input[0];
    m_shape.inH = input[1];
    m_shape.inW = input[2];
    m_shape.kH = m_shape.kW = kernel;
    m_shape.strideH = m_shape.strideW = stride;
    m_shape.padH = m_shape.padW = padding;
    m_shape.outH = slidingOutput(m_shape.inH, kernel, stride, padding);
    m_shape.outW = slidingOutput(m_shape.inW, kernel, stride, padding);
}

Pool2d::Pool2d(PoolKind kind, const PoolGeometry& perSample) : m_kind(kind), m_shape(perSample)
{
    MANTISSA_ASSERT(m_shape.windowsHoldInputs());
}

PoolGeometry Pool2d::geometry(std::int64_t batch) const
{
    PoolGeometry g = m_shape;
    g.n = batch;
    return g;
}

Shape Pool2d::outputShape(const Shape& input) const { return {input[0], m_shape.channels, m_shape.outH, m_shape.outW}; }

ForwardResult Pool2d::forward(PassState& pass, const Tensor& x)
{
    const PoolGeometry g = geometry(x.shape()[0]);
    const Shape outShape = outputShape(x.shape());
    Tensor y = pass.backend.empty(outShape, computeType());
    auto context = std::make_unique<PoolContext>();
    context->inputShape = x.shape();
    if (m_kind == PoolKind::Max) {
        Tensor argmax = pass.backend.empty(outShape, DType::F32);
        pass.backend.maxPoolForward(x, y, argmax, g);
        if (pass.training)
            context->argmax = argmax;
    } else {
        pass.backend.avgPoolForward(x, y, g);
    }
    return {y, std::move(context)};
}

Tensor Pool2d::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    auto& saved = static_cast<PoolContext&>(*context);
    if (!pass.inputGradNeeded)
        return {};
    const PoolGeometry g = geometry(dy.shape()[0]);
    Tensor dx = pass.backend.empty(saved.inputShape, computeType());
    if (m_kind == PoolKind::Max)
        pass.backend.maxPoolBackward(dy, saved.argmax, dx, g);
    else
        pass.backend.avgPoolBackward(dy, dx, g);
    return dx;
}

std::int64_t Pool2d::flopsPerSample() const
{
    return m_shape.channels * m_shape.outH * m_shape.outW * m_shape.kH * m_shape.kW;
}

} // namespace mantissa
