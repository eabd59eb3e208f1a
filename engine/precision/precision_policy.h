#pragma once
// The precision policy: which dtype each tensor of each layer uses under a precision mode, and
// which loss scaling "auto" means for that mode. The model, the trainer, the UI, the CLI and the
// reports all ask here rather than deciding for themselves (issue 15: the rule had been written
// in six places). The answers come from two tables in precision_policy.cpp, one row per mode and
// one per layer override, so that a new format (fp8's E4M3 forward and E5M2 backward, a
// block-scaled type) is a new row there, not an edit of every layer and panel.
#include "engine/numerics/dtype.h"
#include "engine/precision/gemm_recipe.h"
#include "engine/precision/master_weights.h"
#include "engine/util/enum_table.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace mantissa {

// The last eight are the sub-16-bit recipes (gemm_recipe.h): mixed bf16 whose GEMMs quantise their inputs.
enum class PrecisionMode : std::uint8_t {
    Fp32,
    Fp16,
    MixedFp16,
    MixedBf16,
    Bf16,
    Fp8Hybrid,
    Fp8E4m3,
    Fp8Delayed,
    Fp8Block,
    Mxfp8,
    Mxfp6,
    Mxfp4,
    Nvfp4
};
// A layer's format for one operand role, or for all of them: Auto follows the run's mode (or the
// enclosing layer's format); fp32, fp16 and bf16 multiply the role unquantised in that compute
// type; the recipes' keys (the precision modes' names) quantise the role as that recipe
// quantises it (gemm_recipe.h), the layer storing its tensors in bf16 as the recipes do.
enum class LayerPrecision : std::uint8_t {
    Auto,
    Fp32,
    Fp16,
    Bf16,
    Fp8Hybrid,
    Fp8E4m3,
    Fp8Delayed,
    Fp8Block,
    Mxfp8,
    Mxfp6,
    Mxfp4,
    Nvfp4
};
// precision.loss_scale.type: Auto is resolved per mode by PrecisionPolicy::resolveLossScale.
enum class LossScaleType : std::uint8_t { Auto, None, Static, Dynamic };

template <>
std::span<const EnumEntry<PrecisionMode>> enumEntries<PrecisionMode>();
template <>
std::span<const EnumEntry<LayerPrecision>> enumEntries<LayerPrecision>();
template <>
std::span<const EnumEntry<LossScaleType>> enumEntries<LossScaleType>();

// "fp32", "fp16", "mixed-fp16", "mixed-bf16", "bf16": the mode's key (run labels, the store).
std::string precisionModeName(PrecisionMode mode);
std::optional<PrecisionMode> parsePrecisionMode(std::string_view key);

// A layer's "precision": one format for each operand role of its GEMMs (GemmOperand: the
// inputs, the weights, the gradients). Written as one key when every role has the same one
// ("mxfp8"), else as {"inputs": F, "weights": F, "gradients": F} with absent roles auto.
struct LayerFormat {
    LayerPrecision inputs = LayerPrecision::Auto, weights = LayerPrecision::Auto, gradients = LayerPrecision::Auto;

    constexpr LayerFormat() = default;
    // One format for every role (implicit: a LayerPrecision is a LayerFormat).
    constexpr LayerFormat(LayerPrecision all) : inputs(all), weights(all), gradients(all) {}
    LayerPrecision operator[](GemmOperand role) const;
    LayerPrecision& operator[](GemmOperand role);
    bool uniform() const { return inputs == weights && weights == gradients; }
    bool isAuto() const { return *this == LayerFormat(); }
    bool operator==(const LayerFormat&) const = default;
};

// The JSON names of the roles, in GemmOperand's order: "inputs", "weights", "gradients".
std::string_view layerFormatRoleKey(GemmOperand role);
std::optional<GemmOperand> parseLayerFormatRole(std::string_view key);
// "mxfp8" for a uniform format, else "inputs=bf16, weights=mxfp4, gradients=auto" (the text a
// table cell or a command-line option reads back with parseLayerFormat).
std::string layerFormatText(const LayerFormat& format);
// Parses either form of layerFormatText (absent roles auto); "" and what is wrong (an unknown
// key or role, two roles naming different 16- or 32-bit types: a layer computes in one) on error.
std::string parseLayerFormat(std::string_view text, LayerFormat& format);
// What is wrong with `format` ("" if nothing): its roles name two different compute types.
std::string layerFormatProblem(const LayerFormat& format);

// model.precision_overrides: layer or node name (or a pattern with * and ?) -> its format.
using PrecisionOverrides = std::map<std::string, LayerFormat, std::less<>>;
// Whether `name` matches `pattern` (* any run of characters, dots included; ? one character).
bool nameMatches(std::string_view pattern, std::string_view name);

// The tensors of a layer whose dtype the policy decides.
enum class TensorRole : std::uint8_t {
    Weight,         // the copy a layer computes with (Parameter::working)
    Activation,     // a layer's input and output in the forward pass
    Gradient,       // what backward writes, loss-scaled: dx and the weight gradient (Parameter::grad)
    Master,         // the weights the optimizer updates (Parameter::master)
    OptimizerState, // momentum and Adam's moments (Parameter::state1/state2)
};

// One layer's dtypes, by role.
struct LayerDTypes {
    DType weight = DType::F32;
    DType activation = DType::F32;
    DType gradient = DType::F32;
    DType master = DType::F32;
    DType optimizerState = DType::F32;
    // The recipe each operand role of the layer's GEMMs is quantised by (None: multiplied in the
    // compute type as it is). A layer's format of fp32, fp16 or bf16 clears the roles it names.
    OperandRecipes gemmRecipes;
    // The format was stated for this layer or a layer holding it (its "precision" or
    // model.precision_overrides) rather than followed from the run's mode: keep_first_last then
    // leaves its GEMMs as stated.
    bool stated = false;

    DType operator[](TensorRole role) const;
    // The dtype a layer computes and stores its output in (Layer::computeType). Every format so
    // far computes forward and backward in one dtype, so this is also the weight and gradient
    // dtype; a format that splits them (fp8) makes the layers read the roles instead.
    DType compute() const { return activation; }
    // The dtypes and recipes; `stated` says where they came from, not what they are.
    bool operator==(const LayerDTypes& other) const
    {
        return weight == other.weight && activation == other.activation && gradient == other.gradient &&
               master == other.master && optimizerState == other.optimizerState && gemmRecipes == other.gemmRecipes;
    }
};

class PrecisionPolicy {
public:
    // `update`: precision.master_weights and optimizer_state, which decide the Master and
    // OptimizerState roles (master_weights.h); `overrides`: model.precision_overrides.
    explicit PrecisionPolicy(PrecisionMode mode, const RecipeOptions& recipeOptions = {},
                             const UpdatePrecision& update = {}, PrecisionOverrides overrides = {});

    PrecisionMode mode() const { return m_mode; }
    // The mode's GEMM recipe (None for the 16- and 32-bit modes) and its options.
    GemmRecipe recipe() const;
    const RecipeOptions& recipeOptions() const { return m_recipeOptions; }

    // A top-level layer's dtypes: its format's, or the mode's for auto roles.
    LayerDTypes layer(const LayerFormat& format = {}) const;
    // A layer inside a block (a residual body): auto roles follow the block's dtypes, which may
    // themselves come from the block's format, rather than the mode's.
    LayerDTypes layer(const LayerFormat& format, const LayerDTypes& enclosing) const;
    DType dtype(TensorRole role, const LayerFormat& format = {}) const { return layer(format)[role]; }

    // model.precision_overrides, and the one its entries say for the layer or node `name`: the
    // entry whose key is `name`, else the one pattern matching it (ConfigError naming both
    // where two patterns match with different formats); nothing where none matches.
    const PrecisionOverrides& overrides() const { return m_overrides; }
    std::optional<LayerFormat> overrideFor(const std::string& name) const;
    // `dtypes` (what the layer's own "precision" resolved to) with model.precision_overrides's
    // entry for `name` applied on top. `holderCompute`: the compute type of the layer that runs
    // this one inside its own graph node (an attention's projections, an MLP's two linears),
    // which the layer must keep; its entry may then change only how its GEMM inputs are
    // quantised (ConfigError naming the layer where it names another 16- or 32-bit type).
    LayerDTypes layerNamed(const std::string& name, const LayerDTypes& dtypes,
                           std::optional<DType> holderCompute = std::nullopt) const;

    // What loss scaling `requested` means under this mode: Auto becomes the mode's default
    // (dynamic where gradients underflow without it, none elsewhere); other types stay.
    LossScaleType resolveLossScale(LossScaleType requested) const;
    // The 16-bit type whose range the numerics lens measures this run's tensors against: the
    // mode's own compute type, or fp16 for an fp32 run ("what if it ran in fp16").
    DType lensTarget() const;

private:
    PrecisionMode m_mode;
    RecipeOptions m_recipeOptions;
    UpdatePrecision m_update;
    PrecisionOverrides m_overrides;
};

// "mxfp8" when every role of `dtypes` runs one format, else "inputs bf16, weights mxfp4,
// gradients bf16": each role's recipe, or the compute type for an unquantised role. What the
// lens, the Numerics tab, `inspect` and the Model tab show as a layer's format.
std::string layerFormatLabel(const LayerDTypes& dtypes);

} // namespace mantissa
