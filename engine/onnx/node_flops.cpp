#include "engine/onnx/node_flops.h"

namespace mantissa::onnx_import {

namespace {

double product(const std::vector<std::int64_t>& shape, std::size_t from = 0)
{
    double count = 1;
    for (std::size_t d = from; d < shape.size(); ++d)
        count *= double(shape[d]);
    return count;
}

} // namespace

double nodeFlopsPerSample(const OnnxNode& node, const ShapeLookup& shapeOf, std::int64_t batchSize)
{
    if (node.inputs.size() < 2 || node.outputs.empty())
        return 0;
    const auto* a = shapeOf(node.inputs[0]);
    const auto* b = shapeOf(node.inputs[1]);
    const auto* out = shapeOf(node.outputs[0]);
    if (!a || !b || !out || a->empty() || b->empty())
        return 0;
    double flops = 0;
    if (node.opType == "Gemm") {
        const std::int64_t k = node.intAttribute("transA", 0) != 0 ? a->front() : a->back();
        flops = 2 * product(*out) * double(k);
    } else if (node.opType == "MatMul") {
        flops = 2 * product(*out) * double(a->back()); // a rank-1 A is one row of length K
    } else if (node.opType == "Conv") {
        flops = 2 * product(*out) * product(*b, 1); // weight [C_out, C_in/groups, k...]
    } else if (node.opType == "ConvTranspose") {
        // Each input value is spread over C_out/groups * prod(kernel) outputs.
        flops = 2 * product(*a) * product(*b, 1);
    }
    return flops / double(batchSize > 0 ? batchSize : 1);
}

} // namespace mantissa::onnx_import
