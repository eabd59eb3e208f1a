// The precision policy (engine/precision/precision_policy.h) and the enum tables every config
// choice is read through (engine/util/enum_table.h). The expected dtypes are written out here
// by hand, from the modes' definitions in docs/config.md, not derived from the policy's tables.
#include "engine/config/config_enums.h"
#include "engine/config/layer_kind.h"
#include "engine/model/layers/activation_layer.h"
#include "engine/precision/loss_scaler.h"
#include "engine/precision/precision_policy.h"

#include <gtest/gtest.h>

#include <set>

namespace mantissa {
namespace {

struct ModeCase {
    PrecisionMode mode;
    DType weight, activation, gradient, master, optimizerState;
    LossScaleType autoLossScale;
    DType lensTarget;
};

constexpr DType F32 = DType::F32, F16 = DType::F16, BF16 = DType::BF16;

const ModeCase kModeCases[] = {
    {PrecisionMode::Fp32, F32, F32, F32, F32, F32, LossScaleType::None, F16},
    {PrecisionMode::Fp16, F16, F16, F16, F16, F16, LossScaleType::None, F16},
    {PrecisionMode::MixedFp16, F16, F16, F16, F32, F32, LossScaleType::Dynamic, F16},
    {PrecisionMode::MixedBf16, BF16, BF16, BF16, F32, F32, LossScaleType::None, BF16},
    {PrecisionMode::Bf16, BF16, BF16, BF16, BF16, BF16, LossScaleType::None, BF16},
    // The sub-16-bit recipes store as mixed bf16 does; their GEMM inputs are gemm_recipe_test's.
    {PrecisionMode::Fp8Hybrid, BF16, BF16, BF16, F32, F32, LossScaleType::None, BF16},
    {PrecisionMode::Fp8E4m3, BF16, BF16, BF16, F32, F32, LossScaleType::None, BF16},
    {PrecisionMode::Fp8Delayed, BF16, BF16, BF16, F32, F32, LossScaleType::None, BF16},
    {PrecisionMode::Fp8Block, BF16, BF16, BF16, F32, F32, LossScaleType::None, BF16},
    {PrecisionMode::Mxfp8, BF16, BF16, BF16, F32, F32, LossScaleType::None, BF16},
    {PrecisionMode::Mxfp6, BF16, BF16, BF16, F32, F32, LossScaleType::None, BF16},
    {PrecisionMode::Mxfp4, BF16, BF16, BF16, F32, F32, LossScaleType::None, BF16},
    {PrecisionMode::Nvfp4, BF16, BF16, BF16, F32, F32, LossScaleType::None, BF16},
};

const ModeCase& caseOf(PrecisionMode mode)
{
    for (const ModeCase& c : kModeCases)
        if (c.mode == mode)
            return c;
    throw std::logic_error("mode " + precisionModeName(mode) + " has no expected row in this test");
}

TEST(PrecisionPolicy, EveryModeGivesEachRoleItsDType)
{
    // Every mode the engine lists is checked, so a new mode without expectations fails here.
    ASSERT_EQ(enumEntries<PrecisionMode>().size(), std::size(kModeCases));
    for (const auto& entry : enumEntries<PrecisionMode>()) {
        SCOPED_TRACE(std::string(entry.key));
        const ModeCase& c = caseOf(entry.value);
        const PrecisionPolicy policy(entry.value);
        EXPECT_EQ(policy.dtype(TensorRole::Weight), c.weight);
        EXPECT_EQ(policy.dtype(TensorRole::Activation), c.activation);
        EXPECT_EQ(policy.dtype(TensorRole::Gradient), c.gradient);
        EXPECT_EQ(policy.dtype(TensorRole::Master), c.master);
        EXPECT_EQ(policy.dtype(TensorRole::OptimizerState), c.optimizerState);
        EXPECT_EQ(policy.layer().compute(), c.activation);
        EXPECT_EQ(policy.lensTarget(), c.lensTarget);
    }
}

TEST(PrecisionPolicy, AnOverrideSetsTheComputeRolesAndPureMastersFollowIt)
{
    // Mixed fp16: an overridden layer computes in its own type, masters stay fp32.
    const PrecisionPolicy mixed(PrecisionMode::MixedFp16);
    EXPECT_EQ(mixed.layer(LayerPrecision::Fp32), (LayerDTypes{F32, F32, F32, F32, F32, {}, false}));
    EXPECT_EQ(mixed.layer(LayerPrecision::Bf16), (LayerDTypes{BF16, BF16, BF16, F32, F32, {}, false}));
    EXPECT_EQ(mixed.layer(LayerPrecision::Fp16), mixed.layer(LayerPrecision::Auto));
    // fp32 run with one layer in fp16: its weights are an fp16 copy of fp32 masters.
    const PrecisionPolicy fp32(PrecisionMode::Fp32);
    EXPECT_EQ(fp32.layer(LayerPrecision::Fp16), (LayerDTypes{F16, F16, F16, F32, F32, {}, false}));
    // Pure modes keep no separate masters: a layer kept in fp32 keeps fp32 weights and state.
    const PrecisionPolicy pure(PrecisionMode::Fp16);
    EXPECT_EQ(pure.layer(LayerPrecision::Fp32), (LayerDTypes{F32, F32, F32, F32, F32, {}, false}));
    EXPECT_EQ(PrecisionPolicy(PrecisionMode::Bf16).layer(LayerPrecision::Fp16),
              (LayerDTypes{F16, F16, F16, F16, F16, {}, false}));
}

TEST(PrecisionPolicy, InsideABlockAutoFollowsTheBlockNotTheMode)
{
    const PrecisionPolicy mixed(PrecisionMode::MixedFp16);
    const LayerDTypes block = mixed.layer(LayerPrecision::Fp32);
    EXPECT_EQ(mixed.layer(LayerPrecision::Auto, block), block);
    EXPECT_EQ(mixed.layer(LayerPrecision::Bf16, block), mixed.layer(LayerPrecision::Bf16));
    const PrecisionPolicy pure(PrecisionMode::Bf16);
    const LayerDTypes pureBlock = pure.layer(LayerPrecision::Fp32);
    EXPECT_EQ(pure.layer(LayerPrecision::Auto, pureBlock).master, F32);
    EXPECT_EQ(pure.layer(LayerPrecision::Fp16, pureBlock).master, F16);
}

TEST(PrecisionPolicy, AutoLossScalingIsDynamicOnlyForMixedFp16)
{
    for (const auto& mode : enumEntries<PrecisionMode>()) {
        SCOPED_TRACE(std::string(mode.key));
        const PrecisionPolicy policy(mode.value);
        EXPECT_EQ(policy.resolveLossScale(LossScaleType::Auto), caseOf(mode.value).autoLossScale);
        // A type the config names is never second-guessed.
        for (LossScaleType named : {LossScaleType::None, LossScaleType::Static, LossScaleType::Dynamic})
            EXPECT_EQ(policy.resolveLossScale(named), named);
        // The loss scaler applies the policy's answer.
        const LossScaler scaler(LossScaleSpec{}, mode.value);
        const auto expected = caseOf(mode.value).autoLossScale == LossScaleType::Dynamic ? LossScaler::Kind::Dynamic
                                                                                         : LossScaler::Kind::None;
        EXPECT_EQ(scaler.kind(), expected);
    }
}

// --- enum tables ---------------------------------------------------------------------------

template <typename E>
class EnumTableTest : public ::testing::Test {};

using ConfigEnums =
    ::testing::Types<PrecisionMode, LayerPrecision, LossScaleType, DatasetKind, OptimizerKind, ScheduleKind, AutoSwitch,
                     Activation, LayerKind, ShortcutKind, NormKind, InternalPrecision>;
TYPED_TEST_SUITE(EnumTableTest, ConfigEnums);

TYPED_TEST(EnumTableTest, EveryValueRoundTripsThroughItsKey)
{
    std::set<std::string_view> keys;
    std::set<TypeParam> values;
    ASSERT_FALSE(enumEntries<TypeParam>().empty());
    for (const EnumEntry<TypeParam>& entry : enumEntries<TypeParam>()) {
        SCOPED_TRACE(std::string(entry.key));
        EXPECT_TRUE(keys.insert(entry.key).second) << "duplicate key";
        EXPECT_TRUE(values.insert(entry.value).second) << "duplicate value";
        EXPECT_EQ(parseEnum<TypeParam>(entry.key), entry.value);
        EXPECT_EQ(enumKey(entry.value), entry.key);
        EXPECT_EQ(parseEnumOrThrow<TypeParam>(entry.key, "field"), entry.value);
        EXPECT_FALSE(entry.displayName.empty());
        EXPECT_FALSE(entry.description.empty());
    }
}

TYPED_TEST(EnumTableTest, AnUnknownKeyNamesTheFieldAndListsEveryLegalValue)
{
    EXPECT_FALSE(parseEnum<TypeParam>("bogus").has_value());
    EXPECT_FALSE(parseEnum<TypeParam>("").has_value());
    try {
        parseEnumOrThrow<TypeParam>("bogus", "some.field");
        ADD_FAILURE() << "no error";
    } catch (const ConfigError& e) {
        const std::string message = e.what();
        EXPECT_EQ(message.rfind("some.field is \"bogus\"; expected ", 0), 0u) << message;
        for (const EnumEntry<TypeParam>& entry : enumEntries<TypeParam>())
            EXPECT_NE(message.find(entry.key), std::string::npos) << message;
    }
}

TEST(EnumTable, KeyListsReadAsEnglish)
{
    EXPECT_EQ(enumKeyList<PrecisionMode>(), "fp32, fp16, mixed-fp16, mixed-bf16, bf16, fp8-hybrid, fp8-e4m3, "
                                            "fp8-delayed, fp8-block, mxfp8, mxfp6, mxfp4 or nvfp4");
    EXPECT_EQ(enumKeyList<LayerPrecision>(),
              "auto, fp32, fp16, bf16, fp8-hybrid, fp8-e4m3, fp8-delayed, fp8-block, mxfp8, mxfp6, mxfp4 or nvfp4");
    EXPECT_EQ(enumKeyList<AutoSwitch>(), "auto, on or off");
    EXPECT_EQ(unknownEnumMessage<OptimizerKind>("optimizer.type", "rmsprop"),
              "optimizer.type is \"rmsprop\"; expected sgd, adam or adamw");
}

} // namespace
} // namespace mantissa
