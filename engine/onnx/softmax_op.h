#pragma once
// Softmax and LogSoftmax over the last axis, each row computed in fp32 and rounded once to the
// compute type, as the engine's attention computes its softmax (Backend::softmaxForward with fp32
// arithmetic). Backward is the fp32 formula from the saved output: for softmax
// dx = y * (dy - sum(dy * y)) (Backend::softmaxBackward); for log-softmax
// dx = dy - exp(y) * sum(dy), on the host. Attention's softmax reads, computes and writes in the
// dtypes of attention_scores.h instead.
#include "engine/model/graph/graph_op.h"
#include "engine/model/layers/attention_scores.h"

namespace mantissa::onnx_import {

// The dtypes a softmax reads its input in, computes in, writes its output in, and takes the
// output's gradient and gives the input's in.
struct SoftmaxTypes {
    DType input, arithmetic, output, outputGradient, inputGradient;

    // Any softmax: the compute type in and out, fp32 arithmetic.
    static SoftmaxTypes plain(DType compute) { return {compute, DType::F32, compute, compute, compute}; }
    // Attention's, from S to P.
    static SoftmaxTypes ofScores(const AttentionScoreTypes& t)
    {
        return {t.scores, t.scores, t.probabilities, t.probabilitiesGradient, t.scoresGradient};
    }
};

class SoftmaxOp final : public GraphOp {
public:
    // `causal`: each row r of a [..., width, width] plane sees only columns 0..r, the others
    // taking exactly 0 (an additive mask of -inf above the diagonal that the compilation folded:
    // attention_pattern.h), as the engine's causal attention computes it.
    SoftmaxOp(std::string name, SoftmaxTypes types, std::int64_t width, bool logarithm, bool causal = false)
        : m_name(std::move(name)), m_types(types), m_width(width), m_log(logarithm), m_causal(causal)
    {}

    std::string name() const override { return m_name; }
    DType computeType() const override { return m_types.output; }
    DType outputGradientType(std::size_t) const override { return m_types.outputGradient; }
    std::optional<DType> inputType(std::size_t) const override { return m_types.input; }
    std::vector<Shape> outputShapes(const std::vector<Shape>& inputs) const override { return {inputs.at(0)}; }
    OpForward forward(PassState& pass, const std::vector<Tensor>& inputs) override;
    std::vector<Tensor> backward(PassState& pass, const std::vector<Tensor>& outputGradients, LayerContext* context,
                                 const std::vector<bool>& inputGradNeeded) override;

private:
    std::string m_name;
    SoftmaxTypes m_types;
    std::int64_t m_width; // the softmax axis's extent
    bool m_log;
    bool m_causal;
};

} // namespace mantissa::onnx_import
