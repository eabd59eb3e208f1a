#include "engine/onnx/attention_pattern.h"

#include "engine/onnx/node_patterns.h"

#include <cmath>
#include <optional>

namespace mantissa::onnx_import {

namespace {

// A constant of [1, ..., 1, T, T] holding 0 on and below the diagonal and -inf above it.
bool isCausalMask(const OnnxTensor& mask)
{
    const std::size_t rank = mask.shape.size();
    if (rank < 2 || mask.floats.empty() || mask.shape[rank - 1] != mask.shape[rank - 2])
        return false;
    for (std::size_t d = 0; d + 2 < rank; ++d)
        if (mask.shape[d] != 1)
            return false;
    const std::int64_t tokens = mask.shape[rank - 1];
    for (std::int64_t i = 0; i < tokens; ++i)
        for (std::int64_t j = 0; j < tokens; ++j) {
            const float v = mask.floats[static_cast<std::size_t>(i * tokens + j)];
            if (j <= i ? v != 0.0f : !(std::isinf(v) && v < 0))
                return false;
        }
    return true;
}

bool isComputed(const OnnxGraph& onnx, const std::string& value)
{
    return !onnx.parameter(value) && !onnx.constant(value);
}

} // namespace

AttentionPatterns findAttentionPatterns(const OnnxGraph& onnx)
{
    AttentionPatterns patterns;
    const NodePatterns graph(onnx);
    for (std::size_t i = 0; i < onnx.nodes.size(); ++i) {
        const OnnxNode& softmax = onnx.nodes[i];
        if (softmax.opType != "Softmax" || !softmax.domain.empty() || softmax.inputs.size() != 1)
            continue;
        std::string scaled = softmax.inputs[0];
        std::optional<std::size_t> masked = graph.soleProducer(scaled, "Add");
        std::int64_t maskTokens = 0;
        if (masked) {
            const OnnxNode& add = onnx.nodes[*masked];
            if (add.inputs.size() != 2)
                continue;
            const std::size_t maskSide = onnx.constant(add.inputs[1]) ? 1 : 0;
            const OnnxTensor* mask = onnx.constant(add.inputs[maskSide]);
            if (!mask || !isCausalMask(*mask) || !isComputed(onnx, add.inputs[1 - maskSide]))
                continue;
            scaled = add.inputs[1 - maskSide];
            maskTokens = mask->shape.back();
        }
        // The scale is optional: an exporter may scale Q before the product instead.
        std::string productOutput = scaled;
        float alpha = 1.0f;
        const std::optional<std::size_t> mul = graph.soleProducer(scaled, "Mul");
        if (mul) {
            const auto scalar = graph.besideScalar(onnx.nodes[*mul]);
            if (!scalar)
                continue;
            productOutput = scalar->first;
            alpha = scalar->second;
        }
        const std::optional<std::size_t> product = graph.soleProducer(productOutput, "MatMul");
        if (!product || onnx.nodes[*product].inputs.size() != 2 || !isComputed(onnx, onnx.nodes[*product].inputs[0]) ||
            !isComputed(onnx, onnx.nodes[*product].inputs[1]))
            continue;
        // The mask's planes are the scores' own, not broadcast up to them.
        const OnnxValue* scores = onnx.value(productOutput);
        if (masked && (!scores || scores->shape.size() < 2 || scores->shape.back() != maskTokens ||
                       scores->shape[scores->shape.size() - 2] != maskTokens))
            continue;
        patterns.alphaOf[*product] = alpha;
        patterns.softmaxOf[i] = {productOutput, masked.has_value()};
        if (mul)
            patterns.absorbed.insert(*mul);
        if (masked)
            patterns.absorbed.insert(*masked);
    }
    return patterns;
}

AttentionScoreTypes importedAttentionTypes(DType compute)
{
    return attentionScoreTypes(InternalPrecision::Fp32, compute);
}

} // namespace mantissa::onnx_import
