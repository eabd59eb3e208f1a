#include "engine/model/tensor_core_alignment.h"

#include "engine/backend/cuda_options.h"
#include "engine/model/layer.h"
#include "engine/precision/precision_policy.h"

namespace mantissa {

namespace {

MisalignedExtent misaligned(std::string name, std::int64_t value, std::int64_t multiple = kTensorCoreMultiple)
{
    const std::int64_t below = value / multiple * multiple;
    return {std::move(name), value, below, below + multiple};
}

// The 16-bit tensor cores' rule, which every unquantised fp16 or bf16 GEMM follows.
AlignmentRule sixteenBitRule()
{
    return {kTensorCoreMultiple, false, "fp16/bf16",
            "fp16/bf16 tensor cores work on tiles of 8, so this layer's GEMMs pad or fall back to slower kernels",
            "would use them fully"};
}

// The verdict on `extents` (or, where the rule runs along K, `blockedWidths`) under `rule`.
void judge(LayerAlignment& alignment, const std::vector<std::pair<std::string, std::int64_t>>& blockedWidths)
{
    if (alignment.extents.empty()) {
        alignment.verdict = AlignmentVerdict::NoGemm;
        return;
    }
    if (alignment.rule.multiple == 0) {
        alignment.verdict = AlignmentVerdict::Fp32;
        return;
    }
    if (alignment.rule.alongK)
        alignment.extents = blockedWidths;
    for (const auto& [name, value] : alignment.extents) {
        if (value % alignment.rule.multiple != 0)
            alignment.misaligned.push_back(misaligned(name, value, alignment.rule.multiple));
    }
    alignment.verdict = alignment.misaligned.empty() ? AlignmentVerdict::Aligned : AlignmentVerdict::Misaligned;
}

std::string listMisaligned(const std::vector<MisalignedExtent>& extents)
{
    std::string text;
    for (std::size_t i = 0; i < extents.size(); ++i) {
        if (i > 0)
            text += i + 1 == extents.size() ? " and " : ", ";
        text += extents[i].name + " = " + std::to_string(extents[i].value);
    }
    return text;
}

} // namespace

bool wantsTensorCoreAlignment(DType compute) { return compute == DType::F16 || compute == DType::BF16; }

AlignmentRule alignmentRule(DType compute, const OperandRecipes& recipes)
{
    GemmRecipe recipe = GemmRecipe::None;
    for (GemmOperand operand : {GemmOperand::Activation, GemmOperand::Weight, GemmOperand::Gradient})
        if (recipe == GemmRecipe::None)
            recipe = recipes[operand];
    if (recipe == GemmRecipe::None)
        return wantsTensorCoreAlignment(compute) ? sixteenBitRule() : AlignmentRule{};
    const std::string name = gemmRecipeName(recipe);
    const auto block = static_cast<std::int64_t>(recipeBlockSize(recipe));
    if (block == 0)
        return {kFp8GemmMultiple, false, name,
                "FP8 tensor cores (cuBLASLt's FP8 matmul) take a GEMM only where M, N and K are multiples of " +
                    std::to_string(kFp8GemmMultiple) + ", so this layer's GEMMs run emulated in bf16",
                "would run on them"};
    const bool whole = recipe == GemmRecipe::Nvfp4;
    return {block, true, name,
            name + " scales blocks of " + std::to_string(block) + " values along K, so " +
                (whole ? "this layer does not compile (nvfp4 refuses a partial block)"
                       : "the last block along K is partial, fewer values sharing its scale"),
            "would fill the blocks"};
}
std::string MisalignedExtent::suggestion() const
{
    return below > 0 ? std::to_string(below) + " or " + std::to_string(above) : std::to_string(above);
}

std::string LayerAlignment::verdictText() const
{
    switch (verdict) {
    case AlignmentVerdict::NoGemm: return "";
    case AlignmentVerdict::Fp32: return "fp32";
    case AlignmentVerdict::Aligned: return "yes";
    case AlignmentVerdict::Misaligned: return "no";
    }
    return "";
}

std::string LayerAlignment::reason() const
{
    switch (verdict) {
    case AlignmentVerdict::NoGemm: return "no matrix multiply or convolution in this layer";
    case AlignmentVerdict::Fp32:
        return "computes in fp32, which does not run on fp16/bf16 tensor cores: its extents need no alignment";
    case AlignmentVerdict::Aligned: {
        std::string parts;
        for (const auto& [name, value] : extents)
            parts += (parts.empty() ? "" : ", ") + name + " = " + std::to_string(value);
        return std::string(rule.alongK ? "every width its blocks run along" : "every extent") + " is a multiple of " +
               std::to_string(rule.multiple) + " (" + parts + ")";
    }
    case AlignmentVerdict::Misaligned: {
        const bool one = misaligned.size() == 1;
        std::string suggestions;
        for (const MisalignedExtent& e : misaligned)
            suggestions += (suggestions.empty() ? "" : "; ") + e.name + ": " + e.suggestion();
        return listMisaligned(misaligned) + (one ? " is not a multiple" : " are not multiples") + " of " +
               std::to_string(rule.multiple) + ": " + rule.why + " (" + suggestions + " " + rule.gain + ")";
    }
    }
    return "";
}

LayerAlignment layerAlignment(const LayerReport& layer, DType compute)
{
    LayerAlignment alignment;
    alignment.layer = layer.index;
    alignment.type = layer.type;
    alignment.compute = compute;
    alignment.rule = alignmentRule(compute);
    alignment.extents = layer.tensorCoreExtents;
    judge(alignment, {});
    return alignment;
}

LayerAlignment gemmLayerAlignment(const Layer& layer)
{
    LayerAlignment alignment;
    alignment.type = layer.kind();
    alignment.compute = layer.computeType();
    alignment.rule = alignmentRule(layer.computeType(), layer.gemmRecipes());
    alignment.extents = layer.runsGemms() ? layer.tensorCoreExtents() : decltype(alignment.extents){};
    judge(alignment, layer.blockedWidths());
    return alignment;
}

std::optional<MisalignedExtent> misalignedBatch(std::int64_t batchSize)
{
    if (batchSize <= 0 || batchSize % kTensorCoreMultiple == 0)
        return std::nullopt;
    return misaligned("batch size", batchSize);
}

std::string batchAdvice(const MisalignedExtent& batch)
{
    // The batch is M of every linear layer's forward and input-gradient GEMMs and K of its
    // weight-gradient GEMM (NVIDIA, "Optimizing Fully-Connected Layers": batch size a multiple of 8).
    return "batch size " + std::to_string(batch.value) +
           " is not a multiple of 8: fp16/bf16 tensor cores multiply tiles of 8, so the batch dimension of every "
           "GEMM gets padded or runs on slower kernels; " +
           batch.suggestion() + " would use them fully";
}

std::vector<std::string> TensorCoreAdvice::messages() const
{
    std::vector<std::string> lines;
    for (const LayerAlignment& layer : layers) {
        if (layer.verdict == AlignmentVerdict::Misaligned)
            lines.push_back("layer " + std::to_string(layer.layer) + " (" + std::string(enumKey(layer.type)) + "), " +
                            std::string(dtypeName(layer.compute)) + ": " + layer.reason());
    }
    if (batch)
        lines.push_back(batchAdvice(*batch));
    return lines;
}

TensorCoreAdvice tensorCoreAdvice(const RunConfig& config, const ModelReport& report)
{
    const PrecisionPolicy policy(config.precision);
    TensorCoreAdvice advice;
    bool sixteenBitGemm = false;
    for (const LayerReport& layer : report.layers) {
        const auto index = static_cast<std::size_t>(layer.index);
        const LayerFormat override =
            index < config.model.layers.size() ? config.model.layers[index].precision : LayerFormat();
        advice.layers.push_back(layerAlignment(layer, policy.layer(override).compute()));
        const AlignmentVerdict verdict = advice.layers.back().verdict;
        sixteenBitGemm |= verdict == AlignmentVerdict::Aligned || verdict == AlignmentVerdict::Misaligned;
    }
    // The batch matters only to the GEMMs that run on 16-bit tensor cores.
    if (sixteenBitGemm)
        advice.batch = misalignedBatch(config.training.batchSize);
    return advice;
}

TensorCoreAdvice tensorCoreAdvice(const RunConfig& config)
{
    return tensorCoreAdvice(config, validateModel(config.model));
}

} // namespace mantissa
