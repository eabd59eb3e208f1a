#pragma once
// A Transpose that exchanges two adjacent groups of axes of each sample, [outer, rows, cols,
// inner] to [outer, cols, rows, inner] (attention's heads moving out of the token axis and
// back, K^T, a patch embedding's channels becoming the feature axis), as the backend's swapAxes,
// which the engine's own attention uses: the stored words moved in parallel on the device, no
// rounding. Backward swaps the gradient back. Other permutations are index maps
// (index_map_op.h).
#include "engine/model/graph/graph_op.h"

namespace mantissa::onnx_import {

class SwapAxesOp final : public GraphOp {
public:
    // Per sample: `outer` * `rows` * `cols` * `inner` values; `output` is the per-sample shape.
    SwapAxesOp(std::string name, DType type, std::int64_t outer, std::int64_t rows, std::int64_t cols,
               std::int64_t inner, Shape inputPerSample, Shape outputPerSample)
        : m_name(std::move(name)), m_type(type), m_outer(outer), m_rows(rows), m_cols(cols), m_inner(inner),
          m_input(std::move(inputPerSample)), m_output(std::move(outputPerSample))
    {}

    std::string name() const override { return m_name; }
    DType computeType() const override { return m_type; }
    std::optional<DType> inputType(std::size_t) const override { return m_type; }
    std::vector<Shape> outputShapes(const std::vector<Shape>& inputs) const override
    {
        return {batchedShape(inputs.at(0)[0], m_output)};
    }
    OpForward forward(PassState& pass, const std::vector<Tensor>& inputs) override
    {
        const Tensor& x = inputs.at(0);
        const std::int64_t batch = x.shape()[0];
        Tensor y = pass.backend.empty(batchedShape(batch, m_output), x.dtype());
        pass.backend.swapAxes(x, y, batch * m_outer, m_rows, m_cols, m_inner);
        OpForward result;
        result.outputs.push_back(y);
        return result;
    }
    std::vector<Tensor> backward(PassState& pass, const std::vector<Tensor>& outputGradients, LayerContext*,
                                 const std::vector<bool>& inputGradNeeded) override
    {
        if (!inputGradNeeded.at(0))
            return {Tensor()};
        const Tensor& dy = outputGradients.at(0);
        const std::int64_t batch = dy.shape()[0];
        Tensor dx = pass.backend.empty(batchedShape(batch, m_input), dy.dtype());
        pass.backend.swapAxes(dy, dx, batch * m_outer, m_cols, m_rows, m_inner);
        return {dx};
    }

private:
    std::string m_name;
    DType m_type;
    std::int64_t m_outer, m_rows, m_cols, m_inner;
    Shape m_input, m_output;
};

} // namespace mantissa::onnx_import
