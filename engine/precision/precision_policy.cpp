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

// One row per layer format: the compute dtype it forces (nullopt: follow the mode or the block)
// and the recipe that quantises the role it is given to (None: the role is multiplied as it is).
// A recipe's row takes its compute type from the precision mode carrying it (bf16).
struct OverrideRow {
    LayerPrecision value;
    std::optional<DType> compute;
    GemmRecipe recipe = GemmRecipe::None;
};

constexpr std::array kOverrides{
    OverrideRow{LayerPrecision::Auto, std::nullopt},
    OverrideRow{LayerPrecision::Fp32, DType::F32},
    OverrideRow{LayerPrecision::Fp16, DType::F16},
    OverrideRow{LayerPrecision::Bf16, DType::BF16},
    OverrideRow{LayerPrecision::Fp8Hybrid, std::nullopt, GemmRecipe::Fp8Hybrid},
    OverrideRow{LayerPrecision::Fp8E4m3, std::nullopt, GemmRecipe::Fp8E4m3},
    OverrideRow{LayerPrecision::Fp8Delayed, std::nullopt, GemmRecipe::Fp8Delayed},
    OverrideRow{LayerPrecision::Fp8Block, std::nullopt, GemmRecipe::Fp8Block},
    OverrideRow{LayerPrecision::Mxfp8, std::nullopt, GemmRecipe::Mxfp8},
    OverrideRow{LayerPrecision::Mxfp6, std::nullopt, GemmRecipe::Mxfp6},
    OverrideRow{LayerPrecision::Mxfp4, std::nullopt, GemmRecipe::Mxfp4},
    OverrideRow{LayerPrecision::Nvfp4, std::nullopt, GemmRecipe::Nvfp4},
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
    EnumEntry<LayerPrecision>{LayerPrecision::Fp8Hybrid, "fp8-hybrid", "FP8 hybrid",
                              "Quantise this layer's GEMM inputs as fp8-hybrid does: E4M3 inputs and weights, E5M2 "
                              "gradients, one current scale per tensor."},
    EnumEntry<LayerPrecision>{LayerPrecision::Fp8E4m3, "fp8-e4m3", "FP8 E4M3",
                              "Quantise this layer's GEMM inputs to E4M3 with one current scale per tensor."},
    EnumEntry<LayerPrecision>{LayerPrecision::Fp8Delayed, "fp8-delayed", "FP8 delayed scaling",
                              "E4M3 inputs and weights, E5M2 gradients, each scale from the amax history."},
    EnumEntry<LayerPrecision>{LayerPrecision::Fp8Block, "fp8-block", "FP8 block (1x128)",
                              "E4M3 with an fp32 scale per 1x128 tile (inputs, gradients) and per 128x128 block "
                              "(weights)."},
    EnumEntry<LayerPrecision>{LayerPrecision::Mxfp8, "mxfp8", "MXFP8",
                              "MXFP8: E4M3 elements with an E8M0 scale per 32 along K."},
    EnumEntry<LayerPrecision>{LayerPrecision::Mxfp6, "mxfp6", "MXFP6",
                              "MXFP6: E2M3 inputs and weights, E3M2 gradients, an E8M0 scale per 32 along K."},
    EnumEntry<LayerPrecision>{LayerPrecision::Mxfp4, "mxfp4", "MXFP4",
                              "MXFP4: E2M1 elements with an E8M0 scale per 32 along K."},
    EnumEntry<LayerPrecision>{LayerPrecision::Nvfp4, "nvfp4", "NVFP4",
                              "NVFP4: E2M1 elements, an E4M3 scale per 16 along K and an fp32 scale per tensor; "
                              "every K the layer's blocks run along must be a multiple of 16."},
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

PrecisionPolicy::PrecisionPolicy(PrecisionMode mode, const RecipeOptions& recipeOptions, const UpdatePrecision& update,
                                 PrecisionOverrides overrides)
    : m_mode(mode), m_recipeOptions(recipeOptions), m_update(update), m_overrides(std::move(overrides))
{
    modeRow(mode); // every mode has a row: a missing one fails here, at the start of a run
}

LayerDTypes PrecisionPolicy::layer(const LayerFormat& format) const
{
    const ComputeDTypes mode = modeRow(m_mode).compute;
    LayerDTypes top;
    top.weight = mode.weight;
    top.activation = mode.activation;
    top.gradient = mode.gradient;
    top.gemmRecipes = OperandRecipes::all(modeRow(m_mode).recipe);
    return layer(format, top);
}

namespace {

// The compute type `format` states: the one 16- or 32-bit type its roles name, else bf16 where
// a role names a recipe (the recipes store their tensors in bf16), else none (every role auto).
// Two different types are a problem (layerFormatProblem), which is `conflict`'s text.
std::optional<DType> statedCompute(const LayerFormat& format, std::string* conflict = nullptr)
{
    std::optional<DType> plain;
    bool quantised = false;
    for (const GemmOperand role : {GemmOperand::Activation, GemmOperand::Weight, GemmOperand::Gradient}) {
        const OverrideRow& row = overrideRow(format[role]);
        quantised = quantised || row.recipe != GemmRecipe::None;
        if (!row.compute)
            continue;
        if (plain && *plain != *row.compute && conflict)
            *conflict = "names two compute types (" + std::string(dtypeName(*plain)) + " and " +
                        std::string(dtypeName(*row.compute)) +
                        "), but a layer computes in one; give the other roles a recipe or auto";
        plain = plain.value_or(*row.compute);
    }
    if (plain)
        return plain;
    return quantised ? std::optional<DType>(DType::BF16) : std::nullopt;
}

} // namespace

LayerDTypes PrecisionPolicy::layer(const LayerFormat& format, const LayerDTypes& enclosing) const
{
    LayerDTypes d = enclosing;
    if (const std::optional<DType> compute = statedCompute(format)) {
        d.weight = d.activation = d.gradient = *compute;
        d.stated = true;
        for (const GemmOperand role : {GemmOperand::Activation, GemmOperand::Weight, GemmOperand::Gradient})
            if (format[role] != LayerPrecision::Auto)
                d.gemmRecipes[role] = overrideRow(format[role]).recipe;
    }
    // The masters follow the layer's own weights in the pure modes, so a layer kept in fp32
    // in a pure fp16 run also keeps fp32 weights (and an fp32 optimizer state), unless
    // precision.master_weights names their dtype.
    d.master = masterDType(m_update.masters, modeRow(m_mode).master.value_or(d.weight));
    // Optimizer::attach allocates the state by the same rule.
    d.optimizerState = optimizerStateDType(m_update.state, d.master);
    return d;
}

std::optional<LayerFormat> PrecisionPolicy::overrideFor(const std::string& name) const
{
    if (const auto exact = m_overrides.find(name); exact != m_overrides.end())
        return exact->second;
    const std::pair<const std::string, LayerFormat>* found = nullptr;
    for (const auto& entry : m_overrides) {
        if (!nameMatches(entry.first, name))
            continue;
        if (found && found->second != entry.second)
            throw ConfigError("model.precision_overrides: \"" + found->first + "\" (" + layerFormatText(found->second) +
                              ") and \"" + entry.first + "\" (" + layerFormatText(entry.second) + ") both match " +
                              name + "; add an entry naming it exactly");
        found = &entry;
    }
    return found ? std::optional<LayerFormat>(found->second) : std::nullopt;
}

LayerDTypes PrecisionPolicy::layerNamed(const std::string& name, const LayerDTypes& dtypes,
                                        std::optional<DType> holderCompute) const
{
    const std::optional<LayerFormat> format = overrideFor(name);
    if (!format)
        return dtypes;
    LayerDTypes d = layer(*format, dtypes);
    if (!holderCompute || d.compute() == *holderCompute)
        return d;
    for (const GemmOperand role : {GemmOperand::Activation, GemmOperand::Weight, GemmOperand::Gradient})
        if (const std::optional<DType> plain = overrideRow((*format)[role]).compute)
            throw ConfigError("model.precision_overrides: " + name + " (" + layerFormatText(*format) +
                              ") runs inside a layer that computes in " + std::string(dtypeName(*holderCompute)) +
                              ", which it must share; give it a recipe's format (its GEMM inputs quantised), or "
                              "set " +
                              std::string(dtypeName(*plain)) + " on the layer holding it");
    // A recipe's format inside a holder: the inputs are quantised from the holder's type.
    d.weight = d.activation = d.gradient = *holderCompute;
    d.master = modeRow(m_mode).master.value_or(d.weight);
    d.optimizerState = d.master;
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

namespace {

constexpr std::array<std::string_view, 3> kRoleKeys{"inputs", "weights", "gradients"};
constexpr std::array kRoles{GemmOperand::Activation, GemmOperand::Weight, GemmOperand::Gradient};

} // namespace

LayerPrecision LayerFormat::operator[](GemmOperand role) const
{
    return role == GemmOperand::Activation ? inputs : role == GemmOperand::Weight ? weights : gradients;
}

LayerPrecision& LayerFormat::operator[](GemmOperand role)
{
    return role == GemmOperand::Activation ? inputs : role == GemmOperand::Weight ? weights : gradients;
}

std::string_view layerFormatRoleKey(GemmOperand role) { return kRoleKeys[static_cast<std::size_t>(role)]; }

std::optional<GemmOperand> parseLayerFormatRole(std::string_view key)
{
    for (std::size_t i = 0; i < kRoleKeys.size(); ++i)
        if (kRoleKeys[i] == key)
            return kRoles[i];
    return std::nullopt;
}

std::string layerFormatText(const LayerFormat& format)
{
    if (format.uniform())
        return std::string(enumKey(format.inputs));
    std::string text;
    for (const GemmOperand role : kRoles) {
        if (!text.empty())
            text += ", ";
        text += std::string(layerFormatRoleKey(role)) + "=" + std::string(enumKey(format[role]));
    }
    return text;
}

std::string layerFormatProblem(const LayerFormat& format)
{
    std::string conflict;
    statedCompute(format, &conflict);
    return conflict;
}

std::string parseLayerFormat(std::string_view text, LayerFormat& format)
{
    const auto trim = [](std::string_view s) {
        while (!s.empty() && s.front() == ' ')
            s.remove_prefix(1);
        while (!s.empty() && s.back() == ' ')
            s.remove_suffix(1);
        return s;
    };
    const auto formatKey = [](std::string_view key, LayerPrecision& value) -> std::string {
        const std::optional<LayerPrecision> parsed = parseEnum<LayerPrecision>(key);
        if (!parsed)
            return "is \"" + std::string(key) + "\"; expected " + enumKeyList<LayerPrecision>();
        value = *parsed;
        return {};
    };
    LayerFormat parsed;
    if (text.find('=') == std::string_view::npos) {
        LayerPrecision all = LayerPrecision::Auto;
        if (std::string error = formatKey(trim(text), all); !error.empty())
            return error;
        parsed = LayerFormat(all);
    } else {
        std::size_t begin = 0;
        while (begin <= text.size()) {
            const std::size_t end = std::min(text.find(',', begin), text.size());
            const std::string_view part = trim(text.substr(begin, end - begin));
            const std::size_t equals = part.find('=');
            if (equals == std::string_view::npos)
                return "has \"" + std::string(part) + "\" where a role=format pair (weights=mxfp4) belongs";
            const std::string_view roleKey = trim(part.substr(0, equals));
            const std::optional<GemmOperand> role = parseLayerFormatRole(roleKey);
            if (!role)
                return "has no role \"" + std::string(roleKey) + "\"; the roles are inputs, weights, gradients";
            if (std::string error = formatKey(trim(part.substr(equals + 1)), parsed[*role]); !error.empty()) {
                // Appended, not "(" + ...: GCC 12 warns falsely (-Wrestrict) on that temporary.
                std::string message("(");
                message.append(roleKey).append(") ").append(error);
                return message;
            }
            begin = end + 1;
        }
    }
    if (std::string problem = layerFormatProblem(parsed); !problem.empty())
        return problem;
    format = parsed;
    return {};
}

bool nameMatches(std::string_view pattern, std::string_view name)
{
    // Iterative glob matching with one backtrack point for the last '*'.
    std::size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
    while (n < name.size()) {
        if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
            ++p;
            ++n;
        } else if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            resume = n;
        } else if (star != std::string_view::npos) {
            p = star + 1;
            n = ++resume;
        } else
            return false;
    }
    while (p < pattern.size() && pattern[p] == '*')
        ++p;
    return p == pattern.size();
}

std::string layerFormatLabel(const LayerDTypes& dtypes)
{
    const auto roleLabel = [&](GemmOperand role) {
        const GemmRecipe recipe = dtypes.gemmRecipes[role];
        return recipe == GemmRecipe::None ? std::string(dtypeName(dtypes.compute())) : gemmRecipeName(recipe);
    };
    if (dtypes.gemmRecipes.uniform())
        return roleLabel(GemmOperand::Activation);
    std::string text;
    for (const GemmOperand role : kRoles)
        text += (text.empty() ? "" : ", ") + std::string(layerFormatRoleKey(role)) + " " + roleLabel(role);
    return text;
}

} // namespace mantissa
