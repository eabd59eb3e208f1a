#pragma once
// The trainable initializers an ONNX op reads that no engine layer holds (the bias an Add
// broadcasts, a learned positional tensor): Parameters of the initializers' shapes in the
// layer's compute type, created when the compilation loads the file's values into them. The op
// that reads them computes with their working copies and writes their gradients.
#include "engine/model/init.h"
#include "engine/model/layer.h"

#include <deque>

namespace mantissa::onnx_import {

class ParameterHolder final : public Layer {
public:
    explicit ParameterHolder(std::vector<Shape> shapes) : m_shapes(std::move(shapes)), m_parameters(m_shapes.size()) {}

    LayerKind kind() const override { return LayerKind::Linear; }
    Shape outputShape(const Shape& input) const override { return input; }
    void createParameters(Backend& backend, DType masterType, std::uint64_t seed) override
    {
        // Decayed as weights are where they are matrices (a positional table), not where they
        // are vectors (biases), as the engine's own layers do.
        for (std::size_t i = 0; i < m_shapes.size(); ++i)
            createParameter(m_parameters[i], name() + "." + std::to_string(i), m_shapes[i], backend, masterType,
                            computeType(), {InitRule::Kind::Constant, 0.0f}, seed, m_shapes[i].rank() >= 2);
    }
    std::vector<Parameter*> parameters() override
    {
        std::vector<Parameter*> all;
        for (Parameter& p : m_parameters)
            all.push_back(&p);
        return all;
    }
    std::int64_t parameterCount() const override
    {
        std::int64_t count = 0;
        for (const Shape& shape : m_shapes)
            count += shape.numel();
        return count;
    }
    Parameter* parameter(std::size_t i) { return &m_parameters.at(i); }
    // The holder runs nothing: its op does.
    ForwardResult forward(PassState&, const Tensor& x) override { return {x, nullptr}; }
    Tensor backward(PassState&, const Tensor& dy, LayerContext*) override { return dy; }

private:
    std::vector<Shape> m_shapes;
    std::deque<Parameter> m_parameters; // stable addresses for the ops that point at them
};

} // namespace mantissa::onnx_import
