#include "engine/onnx/op_support.h"

#include <algorithm>
#include <array>

namespace mantissa::onnx_import {

namespace {

struct OpEntry {
    std::string_view opType;
    OpHandling handling;
};

// What MLPs, CNNs, ResNets, MobileNets, ViTs and GPT-style models export to at opsets 13 to
// 17. Clip is MobileNet's ReLU6; Expand broadcasts a ViT's class token (a parameter, so it is
// not folded); SoftmaxCrossEntropyLoss is a graph's own loss. The folded operators are also
// folded when listed under Compute (Reshape, Concat, Gather, ... of constants).
constexpr std::array kOps = {
    OpEntry{"Add", OpHandling::Compute},
    OpEntry{"AveragePool", OpHandling::Compute},
    OpEntry{"BatchNormalization", OpHandling::Compute},
    OpEntry{"Cast", OpHandling::Compute},
    OpEntry{"Clip", OpHandling::Compute},
    OpEntry{"Concat", OpHandling::Compute},
    OpEntry{"Constant", OpHandling::Compute},
    OpEntry{"Conv", OpHandling::Compute},
    OpEntry{"ConvTranspose", OpHandling::Compute},
    OpEntry{"Div", OpHandling::Compute},
    OpEntry{"Dropout", OpHandling::Compute},
    OpEntry{"Erf", OpHandling::Compute},
    OpEntry{"Expand", OpHandling::Compute},
    OpEntry{"Flatten", OpHandling::Compute},
    OpEntry{"Gather", OpHandling::Compute},
    OpEntry{"Gemm", OpHandling::Compute},
    OpEntry{"GlobalAveragePool", OpHandling::Compute},
    OpEntry{"GlobalMaxPool", OpHandling::Compute},
    OpEntry{"HardSigmoid", OpHandling::Compute},
    OpEntry{"HardSwish", OpHandling::Compute},
    OpEntry{"Identity", OpHandling::Compute},
    OpEntry{"LayerNormalization", OpHandling::Compute},
    OpEntry{"LeakyRelu", OpHandling::Compute},
    OpEntry{"LogSoftmax", OpHandling::Compute},
    OpEntry{"MatMul", OpHandling::Compute},
    OpEntry{"MaxPool", OpHandling::Compute},
    OpEntry{"Mul", OpHandling::Compute},
    OpEntry{"Pow", OpHandling::Compute},
    OpEntry{"ReduceMean", OpHandling::Compute},
    OpEntry{"Relu", OpHandling::Compute},
    OpEntry{"Reshape", OpHandling::Compute},
    OpEntry{"Sigmoid", OpHandling::Compute},
    OpEntry{"Slice", OpHandling::Compute},
    OpEntry{"Softmax", OpHandling::Compute},
    OpEntry{"SoftmaxCrossEntropyLoss", OpHandling::Compute},
    OpEntry{"Split", OpHandling::Compute},
    OpEntry{"Sqrt", OpHandling::Compute},
    OpEntry{"Squeeze", OpHandling::Compute},
    OpEntry{"Sub", OpHandling::Compute},
    OpEntry{"Tanh", OpHandling::Compute},
    OpEntry{"Transpose", OpHandling::Compute},
    OpEntry{"Unsqueeze", OpHandling::Compute},
    OpEntry{"Where", OpHandling::Compute},
    OpEntry{"And", OpHandling::FoldedOnly},
    OpEntry{"ConstantOfShape", OpHandling::FoldedOnly},
    OpEntry{"Equal", OpHandling::FoldedOnly},
    OpEntry{"Greater", OpHandling::FoldedOnly},
    OpEntry{"GreaterOrEqual", OpHandling::FoldedOnly},
    OpEntry{"Less", OpHandling::FoldedOnly},
    OpEntry{"LessOrEqual", OpHandling::FoldedOnly},
    OpEntry{"Not", OpHandling::FoldedOnly},
    OpEntry{"Or", OpHandling::FoldedOnly},
    OpEntry{"Range", OpHandling::FoldedOnly},
    OpEntry{"Shape", OpHandling::FoldedOnly},
    OpEntry{"Size", OpHandling::FoldedOnly},
    OpEntry{"Trilu", OpHandling::FoldedOnly},
};

std::vector<std::string> opsWith(OpHandling handling)
{
    std::vector<std::string> names;
    for (const OpEntry& entry : kOps) {
        if (entry.handling == handling)
            names.emplace_back(entry.opType);
    }
    std::sort(names.begin(), names.end());
    return names;
}

} // namespace

OpHandling opHandling(std::string_view domain, std::string_view opType)
{
    if (!domain.empty() && domain != "ai.onnx")
        return OpHandling::Unsupported;
    const auto* found =
        std::find_if(kOps.begin(), kOps.end(), [&](const OpEntry& entry) { return entry.opType == opType; });
    return found == kOps.end() ? OpHandling::Unsupported : found->handling;
}

bool isSupportedOp(std::string_view domain, std::string_view opType)
{
    return opHandling(domain, opType) == OpHandling::Compute;
}

std::vector<std::string> computeOps() { return opsWith(OpHandling::Compute); }

std::vector<std::string> foldedOnlyOps() { return opsWith(OpHandling::FoldedOnly); }

std::string supportedOpsText()
{
    std::string text;
    for (const std::string& name : computeOps())
        text += (text.empty() ? "" : ", ") + name;
    text += "; folded when their inputs are constant for the fixed input shape: ";
    bool first = true;
    for (const std::string& name : foldedOnlyOps()) {
        text += (first ? "" : ", ") + name;
        first = false;
    }
    return text;
}

} // namespace mantissa::onnx_import
