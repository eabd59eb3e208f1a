#include "engine/onnx/parameter_roles.h"

#include <cmath>
#include <set>
#include <string_view>

namespace mantissa::onnx_import {

namespace {

struct Use {
    const OnnxNode* node;
    std::size_t slot;
};

bool isWeightSlot(std::string_view op, std::size_t slot)
{
    if (op == "Gemm" || op == "MatMul" || op == "Concat")
        return true;
    if (op == "Conv" || op == "ConvTranspose" || op == "BatchNormalization" || op == "LayerNormalization")
        return slot == 1 || slot == 2; // BatchNormalization's 3 and 4 are running statistics
    if (op == "Gather" || op == "Expand")
        return slot == 0;
    return false;
}

// Ops whose first output holds the first input's values moved or reshaped.
bool movesValues(std::string_view op, std::size_t slot)
{
    static const std::set<std::string_view> ops = {"Transpose", "Identity", "Reshape", "Unsqueeze", "Squeeze",
                                                   "Cast",      "Split",    "Slice",   "Flatten"};
    return slot == 0 && ops.count(op) != 0;
}

bool isElementwiseWithActivations(std::string_view op)
{
    return op == "Add" || op == "Sub" || op == "Mul" || op == "Div";
}

bool allFinite(const OnnxTensor& tensor)
{
    for (float value : tensor.floats) {
        if (!std::isfinite(value))
            return false;
    }
    return true;
}

} // namespace

std::unordered_set<std::string>
trainableInitializers(const std::vector<OnnxNode>& nodes,
                      const std::unordered_map<std::string, const OnnxTensor*>& floatInitializers)
{
    std::unordered_map<std::string, std::vector<Use>> uses;
    for (const OnnxNode& node : nodes) {
        for (std::size_t slot = 0; slot < node.inputs.size(); ++slot)
            uses[node.inputs[slot]].push_back({&node, slot});
    }
    std::unordered_set<std::string> trainable;
    for (const auto& [name, tensor] : floatInitializers) {
        const bool elementwiseWeight = !tensor->shape.empty() && allFinite(*tensor);
        // Follow the values through the ops that only move them, to the op that uses them.
        std::vector<std::string> pending = {name};
        std::unordered_set<std::string> seen;
        bool weight = false;
        while (!pending.empty() && !weight) {
            const std::string value = pending.back();
            pending.pop_back();
            if (!seen.insert(value).second)
                continue;
            for (const Use& use : uses[value]) {
                const std::string_view op = use.node->opType;
                if (isWeightSlot(op, use.slot) || (isElementwiseWithActivations(op) && elementwiseWeight)) {
                    weight = true;
                    break;
                }
                if (movesValues(op, use.slot))
                    pending.insert(pending.end(), use.node->outputs.begin(), use.node->outputs.end());
            }
        }
        if (weight)
            trainable.insert(name);
    }
    return trainable;
}

} // namespace mantissa::onnx_import
