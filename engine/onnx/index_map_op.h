#pragma once
// The ops that move values without arithmetic, beyond what a view can say: Transpose (where the
// batch does not simply keep its place), Slice, Split, Concat, Expand and Gather at constant
// indices (a class token's row). Each output element of a sample is one element of one input of
// the same sample, a map built once at compile time; backward adds each output's gradient to the
// input element it came from (an element read twice, by Expand, receives both). No rounding:
// values keep the dtype their inputs have, which the op converts to its compute type first.
// A source may also be a trainable parameter that every sample reads alike (a class token
// concatenated before each sample's patches), whose gradient sums over the batch.
// It runs on the host through the backend's upload and download.
#include "engine/model/graph/graph_op.h"

#include <cstdint>
#include <vector>

namespace mantissa::onnx_import {

struct ElementSource {
    std::uint32_t input = 0; // which of the op's inputs, or inputs.size() + k for parameter k
    std::int64_t offset = 0; // the element within one sample of that input, or within the parameter
};

class IndexMapOp final : public GraphOp {
public:
    IndexMapOp(std::string name, DType type, std::vector<Shape> inputs, Shape output, std::vector<ElementSource> map,
               std::vector<Parameter*> parameters = {})
        : m_name(std::move(name)), m_type(type), m_inputs(std::move(inputs)), m_output(std::move(output)),
          m_map(std::move(map)), m_parameters(std::move(parameters))
    {}

    std::string name() const override { return m_name; }
    DType computeType() const override { return m_type; }
    std::optional<DType> inputType(std::size_t) const override { return m_type; }
    std::vector<Shape> outputShapes(const std::vector<Shape>& inputs) const override;
    OpForward forward(PassState& pass, const std::vector<Tensor>& inputs) override;
    std::vector<Tensor> backward(PassState& pass, const std::vector<Tensor>& outputGradients, LayerContext* context,
                                 const std::vector<bool>& inputGradNeeded) override;
    std::vector<Parameter*> parameters() override { return m_parameters; }

private:
    // Where `source` lies in its input's values (all samples) or its parameter's.
    std::size_t elementOf(const ElementSource& source, std::int64_t sample) const;

    std::string m_name;
    DType m_type;
    std::vector<Shape> m_inputs; // per sample
    Shape m_output;              // per sample
    std::vector<ElementSource> m_map;
    std::vector<Parameter*> m_parameters;
};

// The element offsets of a row-major `dims`, per axis.
std::vector<std::int64_t> rowMajorStrides(const std::vector<std::int64_t>& dims);
// Calls `visit(index)` for every multi-index of `dims` in row-major order.
template <typename Visit>
void forEachIndex(const std::vector<std::int64_t>& dims, Visit visit)
{
    std::int64_t count = 1;
    for (std::int64_t d : dims)
        count *= d;
    std::vector<std::int64_t> index(dims.size(), 0);
    for (std::int64_t i = 0; i < count; ++i) {
        visit(static_cast<const std::vector<std::int64_t>&>(index));
        for (std::size_t axis = dims.size(); axis-- > 0;) {
            if (++index[axis] < dims[axis])
                break;
            index[axis] = 0;
        }
    }
}

} // namespace mantissa::onnx_import
