#include "engine/onnx/softmax_op.h"

#include "engine/util/check.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mantissa::onnx_import {

namespace {

struct SoftmaxContext final : LayerContext {
    Tensor output;
};

std::vector<float> download(Backend& backend, const Tensor& t)
{
    std::vector<float> values(static_cast<std::size_t>(t.numel()));
    backend.download(t, values.data());
    return values;
}

} // namespace

OpForward SoftmaxOp::forward(PassState& pass, const std::vector<Tensor>& inputs)
{
    const Tensor& x = inputs.at(0);
    Tensor y = pass.backend.empty(x.shape(), m_types.output);
    if (!m_log) {
        pass.backend.softmaxForward(x, y, m_causal ? m_width : 1, m_width, m_causal, m_types.arithmetic);
    } else {
        std::vector<float> values = download(pass.backend, x);
        for (std::size_t row = 0; row < values.size(); row += static_cast<std::size_t>(m_width)) {
            float* v = values.data() + row;
            const float top = *std::max_element(v, v + m_width);
            double sum = 0;
            for (std::int64_t j = 0; j < m_width; ++j)
                sum += std::exp(static_cast<double>(v[j] - top));
            // (x - max) first, exact for values near the max, then the log of the sum: one shift
            // by max + log(sum) would round it to the max's ulp.
            const auto logSum = static_cast<float>(std::log(sum));
            for (std::int64_t j = 0; j < m_width; ++j)
                v[j] = (v[j] - top) - logSum;
        }
        pass.backend.upload(values.data(), y);
    }
    OpForward result;
    result.outputs.push_back(y);
    if (pass.training) {
        auto context = std::make_unique<SoftmaxContext>();
        context->output = y;
        result.context = std::move(context);
    }
    return result;
}

std::vector<Tensor> SoftmaxOp::backward(PassState& pass, const std::vector<Tensor>& outputGradients,
                                        LayerContext* context, const std::vector<bool>& inputGradNeeded)
{
    if (!inputGradNeeded.at(0))
        return {Tensor()};
    const Tensor& y = static_cast<SoftmaxContext&>(*context).output;
    const Tensor& dy = outputGradients.at(0);
    Tensor dx = pass.backend.empty(y.shape(), m_types.inputGradient);
    if (!m_log) {
        pass.backend.softmaxBackward(y, dy, dx, m_width);
        return {dx};
    }
    const std::vector<float> out = download(pass.backend, y);
    std::vector<float> g = download(pass.backend, dy);
    for (std::size_t row = 0; row < g.size(); row += static_cast<std::size_t>(m_width)) {
        double sum = 0;
        for (std::int64_t j = 0; j < m_width; ++j)
            sum += g[row + static_cast<std::size_t>(j)];
        for (std::int64_t j = 0; j < m_width; ++j) {
            const std::size_t i = row + static_cast<std::size_t>(j);
            g[i] -= std::exp(out[i]) * static_cast<float>(sum);
        }
    }
    pass.backend.upload(g.data(), dx);
    return {dx};
}

} // namespace mantissa::onnx_import
