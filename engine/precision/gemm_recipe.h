#pragma once
// Sub-16-bit training recipes (issue 17): which format each input of a layer's GEMMs is
// quantised to before it is multiplied. A recipe is a mixed-precision mode: activations and
// gradients are stored in bf16 and the masters and optimizer state are fp32, as in mixed bf16
// (precision_policy.cpp gives the dtypes); what the recipe adds is the quantisation of the two
// inputs of every forward, data-gradient and weight-gradient GEMM, after which the product
// accumulates in fp32 and is written in bf16 (engine/model/gemm_inputs.h does the quantising).
// docs/formats.md gives every recipe's definition and its source.
#include "engine/numerics/quant_format.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mantissa {

// The recipe a layer's GEMMs follow; None for the 16- and 32-bit modes and for layers kept in
// higher precision (an override, or the first and last layers of a 4-bit recipe).
enum class GemmRecipe : std::uint8_t { None, Fp8Hybrid, Fp8E4m3, Fp8Delayed, Fp8Block, Mxfp8, Mxfp6, Mxfp4, Nvfp4 };

// The three tensors a GEMM of a layer reads: forward x * W, data gradient dy * W, weight
// gradient dy * x.
enum class GemmOperand : std::uint8_t { Activation, Weight, Gradient };
enum class GemmPass : std::uint8_t { Forward, DataGrad, WeightGrad };

// The recipe each operand role of a layer's GEMMs is quantised by: the inputs (GemmOperand::
// Activation), the weights and the gradients. A role whose recipe is None is multiplied as it
// is, in the layer's compute type. A run-wide recipe gives every role the same one; a layer's
// "precision" (precision_policy.h) may give each role its own.
struct OperandRecipes {
    GemmRecipe activation = GemmRecipe::None, weight = GemmRecipe::None, gradient = GemmRecipe::None;

    static constexpr OperandRecipes all(GemmRecipe recipe) { return {recipe, recipe, recipe}; }
    GemmRecipe operator[](GemmOperand operand) const;
    GemmRecipe& operator[](GemmOperand operand);
    bool any() const
    {
        return activation != GemmRecipe::None || weight != GemmRecipe::None || gradient != GemmRecipe::None;
    }
    bool uniform() const { return activation == weight && weight == gradient; }
    bool operator==(const OperandRecipes&) const = default;
};

template <>
std::span<const EnumEntry<GemmOperand>> enumEntries<GemmOperand>();
template <>
std::span<const EnumEntry<GemmPass>> enumEntries<GemmPass>();

// A three-way setting whose Auto the recipe decides.
enum class RecipeSwitch : std::uint8_t { Auto, On, Off };
template <>
std::span<const EnumEntry<RecipeSwitch>> enumEntries<RecipeSwitch>();

// Which of a layer's GEMMs a recipe quantises: all three, or only the backward pass's two
// (data and weight gradient), the forward GEMM then multiplying the layer's bf16 values as they
// are (Tseng et al.'s MXFP4 training, arXiv 2502.20586).
enum class RecipePasses : std::uint8_t { All, Backward };
template <>
std::span<const EnumEntry<RecipePasses>> enumEntries<RecipePasses>();

// precision.recipe in the run config (docs/config.md); ignored by the 16- and 32-bit modes.
// precision.recipe.amax_history's range, in steps.
inline constexpr int kMaxAmaxHistory = 65536;

struct RecipeOptions {
    MxScaleRule scaleRule = MxScaleRule::Floor; // MX recipes: how a block's E8M0 scale is rounded
    // fp8-delayed: how many steps of amax the scale looks back over (Transformer Engine's
    // DelayedScaling.amax_history_len, default 1024; the scale uses the largest).
    int amaxHistory = 1024;
    RecipeSwitch stochasticRounding = RecipeSwitch::Auto; // of the gradients; auto: on for nvfp4 only
    RecipeSwitch keepFirstLast = RecipeSwitch::Auto;      // first and last GEMM layers in bf16; auto: 4-bit
    // nvfp4: weights in 16x16 tiles (one E4M3 scale each) rather than 1x16 blocks along K, so
    // that the forward and the data-gradient GEMMs read the same quantised W; auto: on.
    RecipeSwitch weightBlocks2d = RecipeSwitch::Auto;
    // A 16x16 random Hadamard transform of both weight-gradient GEMM inputs along K before they
    // are quantised (hadamard_transform.h); it cancels in the product. auto: on for nvfp4.
    RecipeSwitch hadamardWgrad = RecipeSwitch::Auto;
    // fp8-block: each fp32 tile scale rounded down to a power of two (DeepSeek-V3's option), so
    // that a dequantised value (an E4M3 element times 2^k) is a bf16 number. auto: on for
    // convolutions only, whose GEMMs cannot apply per-tile scales and so multiply dequantised
    // values: with powers of two those run on the native bf16 kernels, exactly (docs/formats.md).
    RecipeSwitch powerOfTwoScales = RecipeSwitch::Auto;
    // Attention's two batched products (the scores Q K^T and the context P V) quantise their
    // inputs too; auto: off for every recipe, as Transformer Engine keeps them in bf16 unless
    // its FP8 attention is enabled.
    RecipeSwitch attention = RecipeSwitch::Auto;
    RecipePasses passes = RecipePasses::All;
    bool operator==(const RecipeOptions&) const = default;
};

// How one operand is quantised under a recipe.
struct OperandFormat {
    QuantFormat format;     // the element format, scheme and 1D block size (blocks along K)
    std::size_t tile2d = 0; // > 0: square tiles of tile2d x tile2d over the weight matrix, one
                            // fp32 scale each (DeepSeek-V3's 128x128), instead of 1D blocks
    bool delayed = false;   // per-tensor scale from the amax history rather than the tensor now
    bool hadamard = false;  // a weight-gradient input rotated by the random Hadamard transform first
};

// The formats of a recipe's operands with `options` applied (scale rule, stochastic rounding,
// NVFP4's 2D weight tiles: format.blockRows = 16). Assert: recipe is not None.
OperandFormat operandFormat(GemmRecipe recipe, GemmOperand operand, const RecipeOptions& options);
// The format of `operand` as the GEMM of `pass` reads it: operandFormat() with `hadamard` set on
// the weight-gradient inputs of a layer that rotates them (rotatesWeightGradient()).
OperandFormat operandFormat(GemmRecipe recipe, GemmPass pass, GemmOperand operand, const RecipeOptions& options,
                            bool layerRotates);
// `format` for a GEMM that applies per-block scales (a linear layer's) or not (a
// convolution's), with precision.recipe.power_of_two_scales applied to fp32-scaled blocks.
OperandFormat withScaleRounding(OperandFormat format, const RecipeOptions& options, bool gemmTakesBlockScales);
// Whether `recipe` with `options` applies the random Hadamard transform to the inputs of the
// weight-gradient GEMM (precision.recipe.hadamard_wgrad; auto: nvfp4).
bool rotatesWeightGradient(GemmRecipe recipe, const RecipeOptions& options);

// A short label for tables (the numerics lens): element and scaling, e.g. "e2m1 mx/32 floor",
// "e4m3 1x128", "e4m3 128x128", "e5m2 tensor", "e4m3 delayed", "e2m1 nvfp4/16", "e2m1 nvfp4/16x16"
// (2D weight tiles), with " pow2" when the scales are powers of two (fp8-block's convolutions),
// " sr" when the elements round stochastically and " rht" when the operand was rotated by the
// random Hadamard transform.
std::string operandFormatLabel(const OperandFormat& format);

// "fp8-hybrid" etc.: the key of the precision mode carrying the recipe, the one name of both
// (defined with the modes' table, precision_policy.cpp).
std::string gemmRecipeName(GemmRecipe recipe);
// Whether the first and last GEMM layers stay in bf16 under `recipe` with `options`.
bool keepsFirstAndLastLayers(GemmRecipe recipe, const RecipeOptions& options);
// Whether the GEMMs of `pass` quantise their inputs under `options` (precision.recipe.passes).
bool quantisesPass(GemmPass pass, const RecipeOptions& options);
// Whether attention's batched products follow `recipe` with `options` (precision.recipe.attention).
bool quantisesAttention(GemmRecipe recipe, const RecipeOptions& options);
// The 1D block size of a recipe's activations and gradients (0 for per-tensor scaling).
std::size_t recipeBlockSize(GemmRecipe recipe);

} // namespace mantissa
