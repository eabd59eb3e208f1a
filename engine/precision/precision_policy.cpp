#include "engine/precision/precision_policy.h"

#include "engine/util/check.h"

#include <array>
#include <optional>

namespace mantissa {

namespace {

// The dtypes a layer computes with: weights and activations forward, gradients backward.
struct ComputeDTypes {
    DType weight, activation, gradient;
};

constexpr ComputeDTypes uniform(DType t) { return {t, t, t}; }

// One row per mode. Adding a mode is adding a row here and an entry to kModeNames.
struct ModeRow {
    PrecisionMode mode;
    ComputeDTypes compute;       // layers without an override
    std::optional<DType> master; // fp32 masters (mixed modes); nullopt: the weights are their own
                                 // masters, in each layer's weight dtype (pure modes)
    LossScaleType autoLossScale; // what precision.loss_scale.type auto means
    DType lensTarget;            // see PrecisionPolicy::lensTarget
    GemmRecipe recipe = GemmRecipe::None;
};

// Loss scaling: fp16 gradients below 2^-24 flush to zero, and mixed fp16 is the mode meant to
// train well, so it scales dynamically (Micikevicius et al. 2018, PyTorch's GradScaler). Pure
// fp16 is kept naive on purpose: it shows what happens without the remedies. bf16 has fp32's
// exponent range and needs no scaling.
constexpr std::array kModes{
    ModeRow{PrecisionMode::Fp32, uniform(DType::F32), DType::F32, LossScaleType::None, DType::F16},
    ModeRow{PrecisionMode::Fp16, uniform(DType::F16), std::nullopt, LossScaleType::None, DType::F16},
    ModeRow{PrecisionMode::MixedFp16, uniform(DType::F16), DType::F32, LossScaleType::Dynamic, DType::F16},
    ModeRow{PrecisionMode::MixedBf16, uniform(DType::BF16), DType::F32, LossScaleType::None, DType::BF16},
    ModeRow{PrecisionMode::Bf16, uniform(DType::BF16), std::nullopt, LossScaleType::None, DType::BF16},
    // The recipes store activations and gradients in bf16 with fp32 masters, as mixed bf16. Their
    // scaled formats fit each tensor's range themselves (per tensor, per block), so they need no
    // loss scaling either (Transformer Engine and the MX and NVFP4 recipes train without it).
    ModeRow{PrecisionMode::Fp8Hybrid, uniform(DType::BF16), DType::F32, LossScaleType::None, DType::BF16,
            GemmRecipe::Fp8Hybrid},
    ModeRow{PrecisionMode::Fp8E4m3, uniform(DType::BF16), DType::F32, LossScaleType::None, DType::BF16,
            GemmRecipe::Fp8E4m3},
    ModeRow{PrecisionMode::Fp8Delayed, uniform(DType::BF16), DType::F32, LossScaleType::None, DType::BF16,
            GemmRecipe::Fp8Delayed},
    ModeRow{PrecisionMode::Fp8Block, uniform(DType::BF16), DType::F32, LossScaleType::None, DType::BF16,
            GemmRecipe::Fp8Block},
    ModeRow{PrecisionMode::Mxfp8, uniform(DType::BF16), DType::F32, LossScaleType::None, DType::BF16,
            GemmRecipe::Mxfp8},
    ModeRow{PrecisionMode::Mxfp6, uniform(DType::BF16), DType::F32, LossScaleType::None, DType::BF16,
            GemmRecipe::Mxfp6},
    ModeRow{PrecisionMode::Mxfp4, uniform(DType::BF16), DType::F32, LossScaleType::None, DType::BF16,
            GemmRecipe::Mxfp4},
    ModeRow{PrecisionMode::Nvfp4, uniform(DType::BF16), DType::F32, LossScaleType::None, DType::BF16,
            GemmRecipe::Nvfp4},
};

// One row per override: the compute dtypes it forces (nullopt: follow the mode or the block).
struct OverrideRow {
    LayerPrecision value;
    std::optional<ComputeDTypes> compute;
};

constexpr std::array kOverrides{
    OverrideRow{LayerPrecision::Auto, std::nullopt},
    OverrideRow{LayerPrecision::Fp32, uniform(DType::F32)},
    OverrideRow{LayerPrecision::Fp16, uniform(DType::F16)},
    OverrideRow{LayerPrecision::Bf16, uniform(DType::BF16)},
};

constexpr std::array kModeNames{
    EnumEntry<PrecisionMode>{PrecisionMode::Fp32, "fp32", "fp32",
                             "Everything in fp32: the reference to compare against."},
    EnumEntry<PrecisionMode>{PrecisionMode::Fp16, "fp16", "pure fp16",
                             "Pure fp16: weights, gradients and optimizer state in fp16. Small updates vanish and "
                             "small gradients underflow; expect it to fail on deep models."},
    EnumEntry<PrecisionMode>{PrecisionMode::MixedFp16, "mixed-fp16", "mixed fp16",
                             "fp16 compute with fp32 master weights. Needs loss scaling: fp16 gradients below 6e-8 "
                             "flush to zero."},
    EnumEntry<PrecisionMode>{PrecisionMode::MixedBf16, "mixed-bf16", "mixed bf16",
                             "bf16 compute with fp32 master weights. bf16 has fp32's range, so no loss scaling."},
    EnumEntry<PrecisionMode>{PrecisionMode::Bf16, "bf16", "pure bf16",
                             "Pure bf16: weights, gradients and optimizer state in bf16. 8 bits of precision, so small "
                             "updates round away."},
    EnumEntry<PrecisionMode>{PrecisionMode::Fp8Hybrid, "fp8-hybrid", "FP8 hybrid",
                             "Mixed bf16 whose GEMMs take FP8: E4M3 forward operands, E5M2 gradients, one scale per "
                             "tensor from its amax now (Transformer Engine's current scaling)."},
    EnumEntry<PrecisionMode>{PrecisionMode::Fp8E4m3, "fp8-e4m3", "FP8 E4M3",
                             "Mixed bf16 whose GEMMs take FP8 E4M3 for every operand, gradients included, one "
                             "scale per tensor (current scaling)."},
    EnumEntry<PrecisionMode>{PrecisionMode::Fp8Delayed, "fp8-delayed", "FP8 delayed scaling",
                             "FP8 hybrid with each tensor's scale from the largest amax of the previous steps "
                             "(precision.recipe.amax_history; Transformer Engine's DelayedScaling)."},
    EnumEntry<PrecisionMode>{PrecisionMode::Fp8Block, "fp8-block", "FP8 block (1x128)",
                             "Mixed bf16 whose GEMMs take E4M3 with an fp32 scale per 1x128 tile of activations "
                             "and gradients and per 128x128 block of weights (DeepSeek-V3)."},
    EnumEntry<PrecisionMode>{PrecisionMode::Mxfp8, "mxfp8", "MXFP8",
                             "Mixed bf16 whose GEMMs take MXFP8: E4M3 elements with an E8M0 scale per 32 along K "
                             "(OCP MX v1.0)."},
    EnumEntry<PrecisionMode>{PrecisionMode::Mxfp6, "mxfp6", "MXFP6",
                             "Mixed bf16 whose GEMMs take MXFP6: E2M3 forward operands, E3M2 gradients, an E8M0 "
                             "scale per 32 along K."},
    EnumEntry<PrecisionMode>{PrecisionMode::Mxfp4, "mxfp4", "MXFP4",
                             "Mixed bf16 whose GEMMs take MXFP4: E2M1 elements with an E8M0 scale per 32 along K; "
                             "the first and last GEMMs stay in bf16 unless precision.recipe says otherwise."},
    EnumEntry<PrecisionMode>{PrecisionMode::Nvfp4, "nvfp4", "NVFP4",
                             "Mixed bf16 whose GEMMs take NVFP4: E2M1 elements, an E4M3 scale per 16 along K "
                             "(per 16x16 tile for weights) and an fp32 scale per tensor; gradients rounded "
                             "stochastically; the weight-gradient inputs rotated by a 16x16 random Hadamard "
                             "transform; first and last GEMMs in bf16."},
};

constexpr std::array kOverrideNames{
    EnumEntry<LayerPrecision>{LayerPrecision::Auto, "auto", "auto", "Follow the run's precision mode."},
    EnumEntry<LayerPrecision>{LayerPrecision::Fp32, "fp32", "fp32",
                              "Compute this layer in fp32 whatever the mode (a sensitive layer kept high)."},
    EnumEntry<LayerPrecision>{LayerPrecision::Fp16, "fp16", "fp16", "Compute this layer in fp16 whatever the mode."},
    EnumEntry<LayerPrecision>{LayerPrecision::Bf16, "bf16", "bf16", "Compute this layer in bf16 whatever the mode."},
};

constexpr std::array kLossScaleNames{
    EnumEntry<LossScaleType>{LossScaleType::Auto, "auto", "auto", "The precision mode's default loss scaling."},
    EnumEntry<LossScaleType>{LossScaleType::None, "none", "none", "No loss scaling (a scale of 1)."},
    EnumEntry<LossScaleType>{LossScaleType::Static, "static", "static", "A fixed scale: precision.loss_scale.value."},
    EnumEntry<LossScaleType>{LossScaleType::Dynamic, "dynamic", "dynamic",
                             "Grow the scale while gradients stay finite, back off on overflow (GradScaler)."},
};

const ModeRow& modeRow(PrecisionMode mode)
{
    for (const ModeRow& row : kModes)
        if (row.mode == mode)
            return row;
    assertionFailed("precision mode missing from kModes", __FILE__, __LINE__);
}

const OverrideRow& overrideRow(LayerPrecision value)
{
    for (const OverrideRow& row : kOverrides)
        if (row.value == value)
            return row;
    assertionFailed("layer precision missing from kOverrides", __FILE__, __LINE__);
}

} // namespace

template <>
std::span<const EnumEntry<PrecisionMode>> enumEntries<PrecisionMode>()
{
    return kModeNames;
}

template <>
std::span<const EnumEntry<LayerPrecision>> enumEntries<LayerPrecision>()
{
    return kOverrideNames;
}

template <>
std::span<const EnumEntry<LossScaleType>> enumEntries<LossScaleType>()
{
    return kLossScaleNames;
}

std::string precisionModeName(PrecisionMode mode) { return std::string(enumKey(mode)); }

std::optional<PrecisionMode> parsePrecisionMode(std::string_view key) { return parseEnum<PrecisionMode>(key); }

DType LayerDTypes::operator[](TensorRole role) const
{
    switch (role) {
    case TensorRole::Weight: return weight;
    case TensorRole::Activation: return activation;
    case TensorRole::Gradient: return gradient;
    case TensorRole::Master: return master;
    case TensorRole::OptimizerState: return optimizerState;
    }
    assertionFailed("unknown tensor role", __FILE__, __LINE__);
}

PrecisionPolicy::PrecisionPolicy(PrecisionMode mode, const RecipeOptions& recipeOptions, const UpdatePrecision& update)
    : m_mode(mode), m_recipeOptions(recipeOptions), m_update(update)
{
    modeRow(mode); // every mode has a row: a missing one fails here, at the start of a run
}

LayerDTypes PrecisionPolicy::layer(LayerPrecision override) const
{
    const ComputeDTypes mode = modeRow(m_mode).compute;
    LayerDTypes top;
    top.weight = mode.weight;
    top.activation = mode.activation;
    top.gradient = mode.gradient;
    top.gemmRecipe = modeRow(m_mode).recipe;
    return layer(override, top);
}

LayerDTypes PrecisionPolicy::layer(LayerPrecision override, const LayerDTypes& enclosing) const
{
    LayerDTypes d = enclosing;
    if (const auto& forced = overrideRow(override).compute) {
        d.weight = forced->weight;
        d.activation = forced->activation;
        d.gradient = forced->gradient;
        d.gemmRecipe = GemmRecipe::None; // a layer kept in 16 or 32 bits multiplies them as they are
    }
    // The masters follow the layer's own weights in the pure modes, so a layer kept in fp32
    // in a pure fp16 run also keeps fp32 weights (and an fp32 optimizer state), unless
    // precision.master_weights names their dtype.
    d.master = masterDType(m_update.masters, modeRow(m_mode).master.value_or(d.weight));
    // Optimizer::attach allocates the state by the same rule.
    d.optimizerState = optimizerStateDType(m_update.state, d.master);
    return d;
}

LossScaleType PrecisionPolicy::resolveLossScale(LossScaleType requested) const
{
    return requested == LossScaleType::Auto ? modeRow(m_mode).autoLossScale : requested;
}

GemmRecipe PrecisionPolicy::recipe() const { return modeRow(m_mode).recipe; }

std::string gemmRecipeName(GemmRecipe recipe)
{
    if (recipe == GemmRecipe::None)
        return "none";
    for (const ModeRow& row : kModes)
        if (row.recipe == recipe)
            return precisionModeName(row.mode);
    assertionFailed("GEMM recipe carried by no precision mode", __FILE__, __LINE__);
}

DType PrecisionPolicy::lensTarget() const { return modeRow(m_mode).lensTarget; }

} // namespace mantissa
