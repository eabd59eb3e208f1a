// The dynamic loss scaler's state machine: growth, backoff, hysteresis, bounds.
#include "engine/precision/loss_scaler.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>

using namespace mantissa;

namespace {
LossScaleSpec dynamicSpec(float initial = 1024, std::int64_t interval = 3, int hysteresis = 1)
{
    LossScaleSpec s;
    s.type = LossScaleType::Dynamic;
    s.initial = initial;
    s.growthInterval = interval;
    s.hysteresis = hysteresis;
    return s;
}
} // namespace

TEST(LossScaler, AutoIsDynamicOnlyForMixedFp16)
{
    LossScaleSpec spec; // type "auto"
    EXPECT_EQ(LossScaler(spec, PrecisionMode::MixedFp16).kind(), LossScaler::Kind::Dynamic);
    EXPECT_EQ(LossScaler(spec, PrecisionMode::MixedFp16).scale(), 65536.0f);
    EXPECT_EQ(LossScaler(spec, PrecisionMode::Fp32).kind(), LossScaler::Kind::None);
    EXPECT_EQ(LossScaler(spec, PrecisionMode::Fp16).kind(), LossScaler::Kind::None);
    EXPECT_EQ(LossScaler(spec, PrecisionMode::MixedBf16).kind(), LossScaler::Kind::None);
}

TEST(LossScaler, GrowsAfterIntervalOfFiniteSteps)
{
    LossScaler s(dynamicSpec(1024, 3), PrecisionMode::MixedFp16);
    EXPECT_FALSE(s.update(false).changed());
    EXPECT_FALSE(s.update(false).changed());
    const ScaleUpdate u = s.update(false);
    EXPECT_TRUE(u.changed());
    EXPECT_EQ(u.before, 1024.0f);
    EXPECT_EQ(u.after, 2048.0f);
    EXPECT_EQ(s.state().goodSteps, 0);
}

TEST(LossScaler, OverflowBacksOffAndResetsGrowthCounter)
{
    LossScaler s(dynamicSpec(1024, 3), PrecisionMode::MixedFp16);
    s.update(false);
    s.update(false);
    const ScaleUpdate u = s.update(true);
    EXPECT_EQ(u.after, 512.0f);
    // Two more finite steps are not enough: the counter restarted at the overflow.
    s.update(false);
    s.update(false);
    EXPECT_EQ(s.scale(), 512.0f);
    s.update(false);
    EXPECT_EQ(s.scale(), 1024.0f);
}

TEST(LossScaler, HysteresisDelaysBackoff)
{
    LossScaler s(dynamicSpec(1024, 1000, 2), PrecisionMode::MixedFp16);
    EXPECT_FALSE(s.update(true).changed()) << "first overflow is tolerated with hysteresis 2";
    EXPECT_EQ(s.update(true).after, 512.0f);
    EXPECT_EQ(s.update(true).after, 256.0f) << "hysteresis is only restored by growth";
}

TEST(LossScaler, HysteresisRestoredAfterGrowth)
{
    LossScaler s(dynamicSpec(1024, 2, 2), PrecisionMode::MixedFp16);
    s.update(true);                          // tolerated
    EXPECT_EQ(s.update(true).after, 512.0f); // backs off
    s.update(false);
    EXPECT_EQ(s.update(false).after, 1024.0f); // growth restores hysteresis
    EXPECT_FALSE(s.update(true).changed());
}

TEST(LossScaler, RespectsBounds)
{
    LossScaleSpec spec = dynamicSpec(4, 1);
    spec.minScale = 1;
    spec.maxScale = 8;
    LossScaler s(spec, PrecisionMode::MixedFp16);
    s.update(false);
    EXPECT_EQ(s.scale(), 8.0f);
    s.update(false);
    EXPECT_EQ(s.scale(), 8.0f) << "capped at max";
    for (int i = 0; i < 10; ++i)
        s.update(true);
    EXPECT_EQ(s.scale(), 1.0f) << "floored at min";
}

TEST(LossScaler, StaticAndNoneNeverChange)
{
    LossScaleSpec spec;
    spec.type = LossScaleType::Static;
    spec.value = 512;
    LossScaler s(spec, PrecisionMode::MixedFp16);
    EXPECT_EQ(s.kind(), LossScaler::Kind::Static);
    EXPECT_FALSE(s.update(true).changed());
    EXPECT_EQ(s.scale(), 512.0f);
    spec.type = LossScaleType::None;
    LossScaler n(spec, PrecisionMode::MixedFp16);
    EXPECT_EQ(n.scale(), 1.0f);
    EXPECT_FALSE(n.update(true).changed());
}

TEST(LossScaler, RestoreContinuesExactly)
{
    LossScaler a(dynamicSpec(1024, 3), PrecisionMode::MixedFp16);
    a.update(false);
    a.update(false);
    LossScaler b(dynamicSpec(1024, 3), PrecisionMode::MixedFp16);
    b.restore(a.state());
    EXPECT_EQ(a.update(false).after, b.update(false).after);
    EXPECT_EQ(b.scale(), 2048.0f);
}

TEST(LossScaler, InvalidSpecsNameTheField)
{
    struct Case {
        const char* field;
        LossScaleSpec spec;
    };
    LossScaleSpec badGrowth = dynamicSpec();
    badGrowth.growthFactor = 0.5f;
    LossScaleSpec badBackoff = dynamicSpec();
    badBackoff.backoffFactor = 1.5f;
    LossScaleSpec badStatic;
    badStatic.type = LossScaleType::Static;
    badStatic.value = -1;
    for (const auto& c :
         {Case{"growth_factor", badGrowth}, Case{"backoff_factor", badBackoff}, Case{"value", badStatic}}) {
        try {
            LossScaler s(c.spec, PrecisionMode::MixedFp16);
            ADD_FAILURE() << "no error for " << c.field;
        } catch (const ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find(c.field), std::string::npos) << e.what();
        }
    }
}
