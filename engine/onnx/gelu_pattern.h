#pragma once
// GELU as opset 17 writes it (there is no Gelu op before opset 20): the five nodes of
//   y = (x * (1 + erf(x / sqrt 2))) * 0.5
// (PyTorch's export of the exact GELU, and Mantissa's own; x * (1 / sqrt 2) for the division
// too, and each Add and Mul with its operands either way round). The compilation runs each such
// subgraph as one GELU activation, the engine's own kernel, instead of five elementwise ops:
// the same function, computed as a preset's GELU is, at its speed. A subgraph whose inner values
// another node also reads is left as it is.
#include "engine/onnx/onnx_graph.h"

#include <cstddef>
#include <map>
#include <set>
#include <string>

namespace mantissa::onnx_import {

struct GeluPatterns {
    std::map<std::size_t, std::string> inputOf; // the final Mul's node index -> x
    std::set<std::size_t> absorbed;             // the other four nodes of each
};

GeluPatterns findGeluPatterns(const OnnxGraph& onnx);

} // namespace mantissa::onnx_import
