#include "engine/onnx/reduce_mean_op.h"

#include "engine/util/check.h"

namespace mantissa::onnx_import {

namespace {

struct ReduceContext final : LayerContext {
    std::int64_t batch = 0;
};

} // namespace

std::vector<Shape> ReduceMeanOp::outputShapes(const std::vector<Shape>& inputs) const
{
    return {batchedShape(inputs.at(0)[0], m_output)};
}

OpForward ReduceMeanOp::forward(PassState& pass, const std::vector<Tensor>& inputs)
{
    const Tensor& x = inputs.at(0);
    const std::int64_t batch = x.shape()[0];
    std::vector<float> values(static_cast<std::size_t>(x.numel()));
    pass.backend.download(x, values.data());
    const std::int64_t in = m_input.numel(), out = m_output.numel();
    std::vector<double> sums(static_cast<std::size_t>(batch * out), 0.0);
    for (std::int64_t n = 0; n < batch; ++n)
        for (std::int64_t e = 0; e < in; ++e)
            sums[static_cast<std::size_t>(n * out + m_target[static_cast<std::size_t>(e)])] +=
                values[static_cast<std::size_t>(n * in + e)];
    std::vector<float> y(sums.size());
    for (std::size_t i = 0; i < y.size(); ++i)
        y[i] = static_cast<float>(sums[i] / static_cast<double>(m_count));
    Tensor result = pass.backend.empty(batchedShape(batch, m_output), m_type);
    pass.backend.upload(y.data(), result);
    OpForward forward;
    forward.outputs.push_back(result);
    auto context = std::make_unique<ReduceContext>();
    context->batch = batch;
    forward.context = std::move(context);
    return forward;
}

std::vector<Tensor> ReduceMeanOp::backward(PassState& pass, const std::vector<Tensor>& outputGradients,
                                           LayerContext* context, const std::vector<bool>& inputGradNeeded)
{
    if (!inputGradNeeded.at(0))
        return {Tensor()};
    const std::int64_t batch = static_cast<ReduceContext&>(*context).batch;
    std::vector<float> dy(static_cast<std::size_t>(outputGradients.at(0).numel()));
    pass.backend.download(outputGradients[0], dy.data());
    const std::int64_t in = m_input.numel(), out = m_output.numel();
    std::vector<float> dx(static_cast<std::size_t>(batch * in));
    for (std::int64_t n = 0; n < batch; ++n)
        for (std::int64_t e = 0; e < in; ++e)
            dx[static_cast<std::size_t>(n * in + e)] =
                dy[static_cast<std::size_t>(n * out + m_target[static_cast<std::size_t>(e)])] /
                static_cast<float>(m_count);
    Tensor gradient = pass.backend.empty(batchedShape(batch, m_input), m_type);
    pass.backend.upload(dx.data(), gradient);
    return {gradient};
}

} // namespace mantissa::onnx_import
