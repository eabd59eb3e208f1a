#include "engine/onnx/index_map_op.h"

#include "engine/util/check.h"

namespace mantissa::onnx_import {

namespace {

struct IndexMapContext final : LayerContext {
    std::int64_t batch = 0;
};

} // namespace

std::vector<std::int64_t> rowMajorStrides(const std::vector<std::int64_t>& dims)
{
    std::vector<std::int64_t> strides(dims.size(), 1);
    for (std::size_t axis = dims.size(); axis-- > 1;)
        strides[axis - 1] = strides[axis] * dims[axis];
    return strides;
}

std::size_t IndexMapOp::elementOf(const ElementSource& source, std::int64_t sample) const
{
    if (source.input >= m_inputs.size()) // a parameter: the same elements for every sample
        return static_cast<std::size_t>(source.offset);
    return static_cast<std::size_t>(sample * m_inputs[source.input].numel() + source.offset);
}

std::vector<Shape> IndexMapOp::outputShapes(const std::vector<Shape>& inputs) const
{
    MANTISSA_ASSERT(inputs.size() == m_inputs.size() && !inputs.empty());
    return {batchedShape(inputs[0][0], m_output)};
}

OpForward IndexMapOp::forward(PassState& pass, const std::vector<Tensor>& inputs)
{
    const std::int64_t batch = inputs.at(0).shape()[0];
    std::vector<std::vector<float>> values(inputs.size() + m_parameters.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        values[i].resize(static_cast<std::size_t>(inputs[i].numel()));
        pass.backend.download(inputs[i], values[i].data());
    }
    for (std::size_t k = 0; k < m_parameters.size(); ++k) {
        std::vector<float>& v = values[inputs.size() + k];
        v.resize(static_cast<std::size_t>(m_parameters[k]->working.numel()));
        pass.backend.download(m_parameters[k]->working, v.data());
    }
    const auto perSample = static_cast<std::int64_t>(m_map.size());
    std::vector<float> y(static_cast<std::size_t>(batch * perSample));
    for (std::int64_t n = 0; n < batch; ++n)
        for (std::int64_t e = 0; e < perSample; ++e) {
            y[static_cast<std::size_t>(n * perSample + e)] =
                values[m_map[static_cast<std::size_t>(e)].input][elementOf(m_map[static_cast<std::size_t>(e)], n)];
        }
    Tensor out = pass.backend.empty(batchedShape(batch, m_output), m_type);
    pass.backend.upload(y.data(), out);
    OpForward result;
    result.outputs.push_back(out);
    auto context = std::make_unique<IndexMapContext>();
    context->batch = batch;
    result.context = std::move(context);
    return result;
}

std::vector<Tensor> IndexMapOp::backward(PassState& pass, const std::vector<Tensor>& outputGradients,
                                         LayerContext* context, const std::vector<bool>& inputGradNeeded)
{
    const std::int64_t batch = static_cast<IndexMapContext&>(*context).batch;
    std::vector<float> dy(static_cast<std::size_t>(outputGradients.at(0).numel()));
    pass.backend.download(outputGradients[0], dy.data());
    std::vector<std::vector<float>> sums(m_inputs.size() + m_parameters.size());
    for (std::size_t i = 0; i < m_inputs.size(); ++i)
        if (inputGradNeeded.at(i))
            sums[i].assign(static_cast<std::size_t>(batch * m_inputs[i].numel()), 0.0f);
    for (std::size_t k = 0; k < m_parameters.size(); ++k)
        sums[m_inputs.size() + k].assign(static_cast<std::size_t>(m_parameters[k]->grad.numel()), 0.0f);
    const auto perSample = static_cast<std::int64_t>(m_map.size());
    for (std::int64_t n = 0; n < batch; ++n)
        for (std::int64_t e = 0; e < perSample; ++e) {
            const ElementSource& source = m_map[static_cast<std::size_t>(e)];
            if (!sums[source.input].empty())
                sums[source.input][elementOf(source, n)] += dy[static_cast<std::size_t>(n * perSample + e)];
        }
    std::vector<Tensor> gradients(m_inputs.size());
    for (std::size_t i = 0; i < m_inputs.size(); ++i) {
        if (sums[i].empty())
            continue;
        gradients[i] = pass.backend.empty(batchedShape(batch, m_inputs[i]), m_type);
        pass.backend.upload(sums[i].data(), gradients[i]);
    }
    for (std::size_t k = 0; k < m_parameters.size(); ++k)
        pass.backend.upload(sums[m_inputs.size() + k].data(), m_parameters[k]->grad);
    return gradients;
}

} // namespace mantissa::onnx_import
