#include "engine/precision/precision_policy.h"

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

PrecisionPolicy::PrecisionPolicy(PrecisionMode mode) : m_mode(mode)
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
    return layer(override, top);
}

LayerDTypes PrecisionPolicy::layer(LayerPrecision override, const LayerDTypes& enclosing) const
{
    LayerDTypes d = enclosing;
    if (const auto& forced = overrideRow(override).compute) {
        d.weight = forced->weight;
        d.activation = forced->activation;
        d.gradient = forced->gradient;
    }
    // The masters follow the layer's own weights in the pure modes, so a layer kept in fp32
    // in a pure fp16 run also keeps fp32 weights (and an fp32 optimizer state).
    d.master = modeRow(m_mode).master.value_or(d.weight);
    // The optimizer keeps its state in the masters' dtype (Optimizer allocates it so).
    d.optimizerState = d.master;
    return d;
}

LossScaleType PrecisionPolicy::resolveLossScale(LossScaleType requested) const
{
    return requested == LossScaleType::Auto ? modeRow(m_mode).autoLossScale : requested;
}

DType PrecisionPolicy::lensTarget() const { return modeRow(m_mode).lensTarget; }

} // namespace mantissa
