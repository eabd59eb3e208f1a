#pragma once
// What the compilation's pattern finders (gelu_pattern.h, attention_pattern.h) ask of a graph:
// which node computes a value, and whether it computes it for one reader only (a subgraph
// whose inner values nothing else reads can run as one op), and which operand of a binary node
// is a scalar constant of a given value.
#include "engine/onnx/onnx_graph.h"

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>

namespace mantissa::onnx_import {

class NodePatterns {
public:
    explicit NodePatterns(const OnnxGraph& onnx);

    const OnnxGraph& onnx() const { return m_onnx; }
    // The node of the default domain's `type` that computes `value`, read by one node only and
    // not a graph output.
    std::optional<std::size_t> soleProducer(const std::string& value, const char* type) const;
    // Of a binary node: the operand beside a scalar constant within `tolerance` of `value` (the
    // constant second only, where `eitherSide` is false: a divisor). None where the other
    // operand is a constant too.
    std::optional<std::string> besideConstant(const OnnxNode& node, float value, float tolerance,
                                              bool eitherSide = true) const;
    // Of a binary node: the operand beside a scalar constant, and that constant.
    std::optional<std::pair<std::string, float>> besideScalar(const OnnxNode& node) const;

private:
    const OnnxGraph& m_onnx;
    std::unordered_map<std::string, std::size_t> m_producer;
    std::unordered_map<std::string, int> m_readers;
};

} // namespace mantissa::onnx_import
