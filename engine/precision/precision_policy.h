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
// A per-layer precision override: Auto follows the run's mode (or the enclosing block's override).
enum class LayerPrecision : std::uint8_t { Auto, Fp32, Fp16, Bf16 };
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
    // The recipe the layer's GEMMs quantise their inputs by (None: they multiply the compute
    // type as it is). A per-layer override to fp32, fp16 or bf16 clears it.
    GemmRecipe gemmRecipe = GemmRecipe::None;

    DType operator[](TensorRole role) const;
    // The dtype a layer computes and stores its output in (Layer::computeType). Every format so
    // far computes forward and backward in one dtype, so this is also the weight and gradient
    // dtype; a format that splits them (fp8) makes the layers read the roles instead.
    DType compute() const { return activation; }
    bool operator==(const LayerDTypes&) const = default;
};

class PrecisionPolicy {
public:
    // `update`: precision.master_weights and optimizer_state, which decide the Master and
    // OptimizerState roles (master_weights.h).
    explicit PrecisionPolicy(PrecisionMode mode, const RecipeOptions& recipeOptions = {},
                             const UpdatePrecision& update = {});

    PrecisionMode mode() const { return m_mode; }
    // The mode's GEMM recipe (None for the 16- and 32-bit modes) and its options.
    GemmRecipe recipe() const;
    const RecipeOptions& recipeOptions() const { return m_recipeOptions; }

    // A top-level layer's dtypes: its override's, or the mode's for LayerPrecision::Auto.
    LayerDTypes layer(LayerPrecision override = LayerPrecision::Auto) const;
    // A layer inside a block (a residual body): Auto follows the block's dtypes, which may
    // themselves come from the block's override, rather than the mode's.
    LayerDTypes layer(LayerPrecision override, const LayerDTypes& enclosing) const;
    DType dtype(TensorRole role, LayerPrecision override = LayerPrecision::Auto) const { return layer(override)[role]; }

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
};

} // namespace mantissa
