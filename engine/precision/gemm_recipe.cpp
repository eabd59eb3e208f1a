#include "engine/precision/gemm_recipe.h"

#include "engine/util/check.h"

#include <array>
#include <initializer_list>
#include <string_view>

namespace mantissa {

namespace {

constexpr std::array kOperandNames{
    EnumEntry<GemmOperand>{GemmOperand::Activation, "activation", "activation", "a layer's input x"},
    EnumEntry<GemmOperand>{GemmOperand::Weight, "weight", "weight", "the layer's weights W"},
    EnumEntry<GemmOperand>{GemmOperand::Gradient, "gradient", "gradient", "the output gradient dy"},
};

constexpr std::array kPassNames{
    EnumEntry<GemmPass>{GemmPass::Forward, "fprop", "forward", "y = x W^T"},
    EnumEntry<GemmPass>{GemmPass::DataGrad, "dgrad", "data gradient", "dx = dy W"},
    EnumEntry<GemmPass>{GemmPass::WeightGrad, "wgrad", "weight gradient", "dW = dy^T x"},
};

constexpr std::array kSwitchNames{
    EnumEntry<RecipeSwitch>{RecipeSwitch::Auto, "auto", "auto", "The recipe's default."},
    EnumEntry<RecipeSwitch>{RecipeSwitch::On, "on", "on", "On whatever the recipe."},
    EnumEntry<RecipeSwitch>{RecipeSwitch::Off, "off", "off", "Off whatever the recipe."},
};

constexpr std::array kPassesNames{
    EnumEntry<RecipePasses>{RecipePasses::All, "all", "all GEMMs", "The forward, data- and weight-gradient GEMMs."},
    EnumEntry<RecipePasses>{RecipePasses::Backward, "backward", "backward GEMMs",
                            "The data- and weight-gradient GEMMs; the forward GEMM in bf16."},
};

constexpr QuantFormat scaled(ScalingScheme scheme, MiniFloat element, std::size_t blockSize)
{
    QuantFormat format;
    format.scheme = scheme;
    format.element = element;
    format.blockSize = blockSize;
    // A K that is not a multiple of the block leaves a short last block per row, as if padded
    // with zeros (quant_format.h); NVFP4 layers are checked for whole blocks when the model is built.
    format.partialBlocks = PartialBlock::Pad;
    return format;
}

// One row per recipe: the formats of activations, weights and gradients. A recipe's name is the
// key of the precision mode that carries it (gemmRecipeName, precision_policy.cpp).
struct RecipeRow {
    GemmRecipe recipe;
    OperandFormat activation, weight, gradient;
    bool fourBit;
};

constexpr OperandFormat tensorScaled(MiniFloat e) { return {scaled(ScalingScheme::PerTensor, e, 0), 0, false}; }
constexpr OperandFormat delayedScaled(MiniFloat e) { return {scaled(ScalingScheme::PerTensor, e, 0), 0, true}; }
constexpr OperandFormat tiles1x128() { return {scaled(ScalingScheme::Fp32Blocks, MiniFloat::E4M3, 128), 0, false}; }
constexpr OperandFormat tiles128x128() { return {scaled(ScalingScheme::PerTensor, MiniFloat::E4M3, 0), 128, false}; }
constexpr OperandFormat mx(MiniFloat e) { return {scaled(ScalingScheme::Mx, e, 32), 0, false}; }
constexpr OperandFormat nvfp4() { return {scaled(ScalingScheme::Nvfp4, MiniFloat::E2M1, 16), 0, false}; }

// Sources (docs/formats.md): Transformer Engine's Format.HYBRID and Format.E4M3 with current
// and delayed scaling; DeepSeek-V3 section 3.3 for 1x128 / 128x128 (all E4M3); OCP MX v1.0 with
// E4M3 for MXFP8 as torchao's MX training does; for MXFP6 the hybrid split (E2M3's mantissa for
// the forward operands, E3M2's range for gradients) is our choice; NVFP4 as NVIDIA's NVFP4
// pretraining recipe (1x16 blocks; its 16x16 weight tiles and the Hadamard transform of the
// weight-gradient inputs are options applied in operandFormat()).
constexpr std::array kRecipes{
    RecipeRow{GemmRecipe::Fp8Hybrid, tensorScaled(MiniFloat::E4M3), tensorScaled(MiniFloat::E4M3),
              tensorScaled(MiniFloat::E5M2), false},
    RecipeRow{GemmRecipe::Fp8E4m3, tensorScaled(MiniFloat::E4M3), tensorScaled(MiniFloat::E4M3),
              tensorScaled(MiniFloat::E4M3), false},
    RecipeRow{GemmRecipe::Fp8Delayed, delayedScaled(MiniFloat::E4M3), delayedScaled(MiniFloat::E4M3),
              delayedScaled(MiniFloat::E5M2), false},
    RecipeRow{GemmRecipe::Fp8Block, tiles1x128(), tiles128x128(), tiles1x128(), false},
    RecipeRow{GemmRecipe::Mxfp8, mx(MiniFloat::E4M3), mx(MiniFloat::E4M3), mx(MiniFloat::E4M3), false},
    RecipeRow{GemmRecipe::Mxfp6, mx(MiniFloat::E2M3), mx(MiniFloat::E2M3), mx(MiniFloat::E3M2), false},
    RecipeRow{GemmRecipe::Mxfp4, mx(MiniFloat::E2M1), mx(MiniFloat::E2M1), mx(MiniFloat::E2M1), true},
    RecipeRow{GemmRecipe::Nvfp4, nvfp4(), nvfp4(), nvfp4(), true},
};

const RecipeRow& row(GemmRecipe recipe)
{
    for (const RecipeRow& r : kRecipes)
        if (r.recipe == recipe)
            return r;
    assertionFailed("GEMM recipe missing from kRecipes", __FILE__, __LINE__);
}

bool resolve(RecipeSwitch value, bool automatic)
{
    return value == RecipeSwitch::Auto ? automatic : value == RecipeSwitch::On;
}

} // namespace

template <>
std::span<const EnumEntry<GemmOperand>> enumEntries<GemmOperand>()
{
    return kOperandNames;
}

template <>
std::span<const EnumEntry<GemmPass>> enumEntries<GemmPass>()
{
    return kPassNames;
}

template <>
std::span<const EnumEntry<RecipeSwitch>> enumEntries<RecipeSwitch>()
{
    return kSwitchNames;
}

template <>
std::span<const EnumEntry<RecipePasses>> enumEntries<RecipePasses>()
{
    return kPassesNames;
}

GemmRecipe OperandRecipes::operator[](GemmOperand operand) const
{
    return operand == GemmOperand::Activation ? activation : operand == GemmOperand::Weight ? weight : gradient;
}

GemmRecipe& OperandRecipes::operator[](GemmOperand operand)
{
    return operand == GemmOperand::Activation ? activation : operand == GemmOperand::Weight ? weight : gradient;
}

OperandFormat operandFormat(GemmRecipe recipe, GemmOperand operand, const RecipeOptions& options)
{
    const RecipeRow& r = row(recipe);
    OperandFormat f = operand == GemmOperand::Activation ? r.activation
                      : operand == GemmOperand::Weight   ? r.weight
                                                         : r.gradient;
    f.format.scaleRule = options.scaleRule;
    // NVIDIA's NVFP4 recipe rounds gradients stochastically and everything else to nearest;
    // stochastic rounding of the forward operands would add noise to the loss itself.
    if (operand == GemmOperand::Gradient && resolve(options.stochasticRounding, recipe == GemmRecipe::Nvfp4))
        f.format.encoding.rounding = Rounding::Stochastic;
    // NVIDIA's NVFP4 recipe (and Transformer Engine's NVFP4BlockScaling by default) scales
    // weights per 16x16 tile: a tile is the same set of values whichever way K runs through
    // it, so W in the forward GEMM and W^T in the data-gradient GEMM are the same numbers and
    // the backward pass differentiates the function the forward pass computed.
    if (operand == GemmOperand::Weight && f.format.scheme == ScalingScheme::Nvfp4 &&
        resolve(options.weightBlocks2d, true))
        f.format.blockRows = f.format.blockSize;
    return f;
}

OperandFormat operandFormat(GemmRecipe recipe, GemmPass pass, GemmOperand operand, const RecipeOptions& options,
                            bool layerRotates)
{
    OperandFormat f = operandFormat(recipe, operand, options);
    f.hadamard = layerRotates && pass == GemmPass::WeightGrad && rotatesWeightGradient(recipe, options);
    return f;
}

OperandFormat withScaleRounding(OperandFormat format, const RecipeOptions& options, bool gemmTakesBlockScales)
{
    const bool fp32Blocks = format.format.scheme == ScalingScheme::Fp32Blocks || format.tile2d > 0;
    if (fp32Blocks && resolve(options.powerOfTwoScales, !gemmTakesBlockScales))
        format.format.powerOfTwoScales = true;
    return format;
}

bool rotatesWeightGradient(GemmRecipe recipe, const RecipeOptions& options)
{
    return recipe != GemmRecipe::None && resolve(options.hadamardWgrad, recipe == GemmRecipe::Nvfp4);
}

std::string operandFormatLabel(const OperandFormat& format)
{
    const QuantFormat& f = format.format;
    // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on " " + std::string temporaries.
    std::string label(enumKey(f.element));
    const auto add = [&label](std::initializer_list<std::string_view> parts) {
        for (const std::string_view part : parts)
            label.append(part);
    };
    const std::string block = std::to_string(f.blockSize), tile = std::to_string(format.tile2d),
                      tileRows = std::to_string(f.blockRows);
    if (format.tile2d > 0)
        add({" ", tile, "x", tile});
    else if (format.delayed)
        add({" delayed"});
    else
        switch (f.scheme) {
        case ScalingScheme::None: break;
        case ScalingScheme::PerTensor: add({" tensor"}); break;
        case ScalingScheme::Fp32Blocks: add({" 1x", block}); break;
        case ScalingScheme::Mx: add({" mx/", block, " ", enumKey(f.scaleRule)}); break;
        case ScalingScheme::Nvfp4:
            add({" nvfp4/", block});
            if (f.blockRows > 1)
                add({"x", tileRows});
            break;
        }
    if (f.powerOfTwoScales)
        add({" pow2"});
    if (f.encoding.rounding == Rounding::Stochastic)
        add({" sr"});
    if (format.hadamard)
        add({" rht"});
    return label;
}

bool keepsFirstAndLastLayers(GemmRecipe recipe, const RecipeOptions& options)
{
    return recipe != GemmRecipe::None && resolve(options.keepFirstLast, row(recipe).fourBit);
}

bool quantisesPass(GemmPass pass, const RecipeOptions& options)
{
    return options.passes == RecipePasses::All || pass != GemmPass::Forward;
}

bool quantisesAttention(GemmRecipe recipe, const RecipeOptions& options)
{
    return recipe != GemmRecipe::None && resolve(options.attention, false);
}

std::size_t recipeBlockSize(GemmRecipe recipe)
{
    return recipe == GemmRecipe::None ? 0 : row(recipe).activation.format.blockSize;
}

} // namespace mantissa
