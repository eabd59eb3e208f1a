#pragma once
// importOnnx: an ONNX file to the neutral graph of onnx_graph.h. It parses the file with
// Debian's libonnx, checks it with onnx::checker, fixes the input shape, runs ONNX shape
// inference and folds every constant and shape-arithmetic subgraph for that shape, so that the
// nodes left compute on activations and every value's shape is static. Each problem a user can
// cause (not an ONNX file, a truncated one, opset newer than 17, missing external data, a
// dynamic dimension without a shape, a shape that does not fit, NaN or Inf in the weights, no
// float parameters, too large) throws OnnxImportError naming the file and the problem.
// Unsupported operators do not throw here, so that `inspect` can list them: a consumer that
// needs a runnable graph calls requireSupported.
#include "engine/onnx/onnx_graph.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mantissa::onnx_import {

struct ImportOptions {
    // The shape of one sample of the first graph input, without the batch dimension (3x32x32
    // for images, 128 for a sequence of tokens). Needed when that input has a dynamic
    // dimension besides the first; must match the dimensions the file fixes.
    std::optional<std::vector<std::int64_t>> sampleShape;
    // The batch dimension, where the file leaves the first dimension of its inputs dynamic.
    std::int64_t batchSize = 1;
    // Refuse a graph without a float parameter (nothing to train). The operator tests of ONNX's
    // test data have none and switch this off.
    bool requireParameters = true;
    // Graph inputs that hold one value for the whole run rather than data, such as the target
    // shape a Reshape reads: each becomes a constant of the graph, folded like one. A tensor's
    // name is its input's.
    std::vector<OnnxTensor> fixedInputs;
    // The memory the training state may take (fp32 masters, gradients and two optimizer
    // moments per parameter, plus the constants); 0: this machine's physical memory.
    std::uint64_t memoryBudgetBytes = 0;
};

OnnxGraph importOnnx(const std::string& path, const ImportOptions& options = {});

// Throws OnnxImportError listing every unsupported node (name and op type) and the supported
// operators, when the graph has any.
void requireSupported(const OnnxGraph& graph);

// "3x32x32" -> {3, 32, 32}; throws OnnxImportError on anything but positive integers joined by 'x'.
std::vector<std::int64_t> parseShapeText(const std::string& text);
std::string shapeText(const std::vector<std::int64_t>& shape); // {3, 32, 32} -> "3x32x32"

} // namespace mantissa::onnx_import
