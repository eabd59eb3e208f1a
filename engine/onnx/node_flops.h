#pragma once
// Floating-point operations per sample of the ops that dominate training cost: two per
// multiply-add of Gemm, MatMul, Conv and ConvTranspose (forward pass). Every other op: 0.
#include "engine/onnx/onnx_graph.h"

#include <functional>

namespace mantissa::onnx_import {

using ShapeLookup = std::function<const std::vector<std::int64_t>*(const std::string& valueName)>;

double nodeFlopsPerSample(const OnnxNode& node, const ShapeLookup& shapeOf, std::int64_t batchSize);

} // namespace mantissa::onnx_import
