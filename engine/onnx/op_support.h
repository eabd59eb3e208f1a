#pragma once
// The one table of ONNX operators Mantissa handles, and how: COMPUTE operators are nodes the
// graph engine runs (forward and backward); FOLDED operators are shape arithmetic that the
// import evaluates for the fixed input shape and that must not remain on activations.
#include <string>
#include <string_view>
#include <vector>

namespace mantissa::onnx_import {

enum class OpHandling { Compute, FoldedOnly, Unsupported };

// For an op of the default ONNX domain ("" or "ai.onnx"); every other domain is unsupported.
OpHandling opHandling(std::string_view domain, std::string_view opType);
bool isSupportedOp(std::string_view domain, std::string_view opType);

std::vector<std::string> computeOps();    // sorted
std::vector<std::string> foldedOnlyOps(); // sorted
std::string supportedOpsText();           // "Add, AveragePool, ..." for messages and docs

} // namespace mantissa::onnx_import
