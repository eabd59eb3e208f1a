#pragma once
// ONNX's elementwise arithmetic with numpy broadcasting, Add, Sub, Mul, Div and Pow, the
// pointwise functions Sqrt and Erf (the GELU that PyTorch exports is x * (1 + erf(x / sqrt 2)) / 2,
// made of these), and Where, which picks x where its condition holds and y elsewhere (a mask
// filled with -inf, in attention exported as masked_fill). Each operand is a computed value of the graph, a constant, or a trainable
// parameter (a bias, a learned positional tensor) that the op reads from its working copy and
// whose gradient it writes, summed over what it was broadcast across, the batch included.
//
// Every operand is widened to fp32, the result computed in fp32 and rounded once to the op's
// compute type, as the engine's own additions round once; the gradients likewise. The op runs on
// the host, through the backend's upload and download, so it works on every backend; the one
// exception, a parameter of one sample's shape added to each sample (a learned positional
// table), runs as the engine's positional embedding does (Backend::addBroadcast, its gradient
// summed over the batch in double and rounded once).
#include "engine/model/graph/graph_op.h"

#include <cstdint>
#include <vector>

namespace mantissa::onnx_import {

enum class ElementwiseKind : std::uint8_t { Add, Sub, Mul, Div, Pow, Sqrt, Erf, Where };

// How many operands an op of `kind` reads: 1 (Sqrt, Erf), 2 (the arithmetic) or 3 (Where: the
// condition, x, y; the condition is a constant, nonzero where it holds).
std::size_t elementwiseArity(ElementwiseKind kind);

// One operand, laid out over the op's expanded per-sample shape (batch_layout.h).
struct ElementwiseOperand {
    enum class Source : std::uint8_t { Value, Constant, Parameter };
    Source source = Source::Value;
    std::vector<float> constant;    // Constant: its values
    Parameter* parameter = nullptr; // Parameter: the one it reads and writes the gradient of
    std::int64_t elements = 1;      // per sample for a Value, in all otherwise
    // Per axis of the output's expanded shape: the operand's stride, 0 where it is broadcast.
    std::vector<std::int64_t> strides;
};

class ElementwiseOp final : public GraphOp {
public:
    // `expanded`: the output's per-sample shape split at the batch; `output`: its graph shape.
    // The Value operands are the op's graph inputs, in the order they appear in `operands`.
    ElementwiseOp(std::string name, ElementwiseKind kind, DType computeType, std::vector<std::int64_t> expanded,
                  Shape output, std::vector<ElementwiseOperand> operands, std::vector<Shape> valueShapes);

    std::string name() const override { return m_name; }
    DType computeType() const override { return m_computeType; }
    std::optional<DType> inputType(std::size_t) const override { return std::nullopt; }
    std::vector<Shape> outputShapes(const std::vector<Shape>& inputs) const override;
    OpForward forward(PassState& pass, const std::vector<Tensor>& inputs) override;
    std::vector<Tensor> backward(PassState& pass, const std::vector<Tensor>& outputGradients, LayerContext* context,
                                 const std::vector<bool>& inputGradNeeded) override;
    std::vector<Parameter*> parameters() override;
    // Which operand is a parameter of one sample's shape added to each sample of the other (a
    // learned positional table): that op runs on the backend (addBroadcast, as the engine's
    // positional embedding), the rest on the host. -1 where the op is another.
    int perSampleAddend() const;

private:
    float apply(const float* operands) const;

    std::string m_name;
    ElementwiseKind m_kind;
    DType m_computeType;
    Shape m_output;
    std::vector<ElementwiseOperand> m_operands;
    std::vector<Shape> m_valueShapes;                 // per sample, one per graph input
    std::vector<std::vector<std::int64_t>> m_offsets; // per operand, per output element
    int m_addend = -1;                                // perSampleAddend()
};

} // namespace mantissa::onnx_import
