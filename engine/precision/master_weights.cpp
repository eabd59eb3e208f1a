#include "engine/precision/master_weights.h"

#include "engine/util/check.h"

#include <array>
#include <optional>

namespace mantissa {

namespace {

// One row per setting: its masters' dtype (nullopt: the mode's) and how updates are stored.
struct MasterRow {
    MasterWeights value;
    std::optional<DType> dtype;
    MasterRounding rounding;
};

constexpr std::array kMasterRows{
    MasterRow{MasterWeights::Auto, std::nullopt, MasterRounding::Nearest},
    MasterRow{MasterWeights::Fp32, DType::F32, MasterRounding::Nearest},
    MasterRow{MasterWeights::Bf16, DType::BF16, MasterRounding::Nearest},
    MasterRow{MasterWeights::Bf16Stochastic, DType::BF16, MasterRounding::Stochastic},
    MasterRow{MasterWeights::Bf16Kahan, DType::BF16, MasterRounding::Kahan},
};

constexpr std::array kMasterNames{
    EnumEntry<MasterWeights>{MasterWeights::Auto, "auto", "auto",
                             "The precision mode's: fp32, or the weights themselves in pure fp16 and bf16."},
    EnumEntry<MasterWeights>{MasterWeights::Fp32, "fp32", "fp32",
                             "fp32 master weights beside the working copy: updates of any size are kept."},
    EnumEntry<MasterWeights>{MasterWeights::Bf16, "bf16", "bf16, to nearest",
                             "bf16 masters rounded to nearest: an update below half an ulp of its weight is lost."},
    EnumEntry<MasterWeights>{MasterWeights::Bf16Stochastic, "bf16-stochastic", "bf16, stochastic rounding",
                             "bf16 masters rounded stochastically: right in expectation, seeded by training.seed."},
    EnumEntry<MasterWeights>{MasterWeights::Bf16Kahan, "bf16-kahan", "bf16, Kahan compensation",
                             "bf16 masters with a bf16 compensation buffer that carries what each rounding lost."},
};

constexpr std::array kStateNames{
    EnumEntry<OptimizerStatePrecision>{OptimizerStatePrecision::Auto, "auto", "auto", "The master weights' dtype."},
    EnumEntry<OptimizerStatePrecision>{OptimizerStatePrecision::Fp32, "fp32", "fp32",
                                       "Momentum and Adam's moments in fp32."},
    EnumEntry<OptimizerStatePrecision>{OptimizerStatePrecision::Bf16, "bf16", "bf16",
                                       "Momentum and Adam's moments in bf16, rounded to nearest."},
};

const MasterRow& masterRow(MasterWeights masters)
{
    for (const MasterRow& row : kMasterRows)
        if (row.value == masters)
            return row;
    assertionFailed("master-weights setting missing from kMasterRows", __FILE__, __LINE__);
}

} // namespace

template <>
std::span<const EnumEntry<MasterWeights>> enumEntries<MasterWeights>()
{
    return kMasterNames;
}

template <>
std::span<const EnumEntry<OptimizerStatePrecision>> enumEntries<OptimizerStatePrecision>()
{
    return kStateNames;
}

DType masterDType(MasterWeights masters, DType modeMaster) { return masterRow(masters).dtype.value_or(modeMaster); }

DType optimizerStateDType(OptimizerStatePrecision state, DType master)
{
    switch (state) {
    case OptimizerStatePrecision::Auto: return master;
    case OptimizerStatePrecision::Fp32: return DType::F32;
    case OptimizerStatePrecision::Bf16: return DType::BF16;
    }
    assertionFailed("unknown optimizer-state setting", __FILE__, __LINE__);
}

MasterRounding masterRounding(MasterWeights masters) { return masterRow(masters).rounding; }

} // namespace mantissa
