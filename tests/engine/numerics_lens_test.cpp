// The numerics lens: exponent histograms and per-dtype fractions against hand-computed
// values, the what-if loss scale and the scaler replay against hand-computed traces.
#include "engine/backend/backend.h"
#include "engine/lens/scaler_replay.h"
#include "engine/lens/what_if.h"
#include "engine/numerics/conversions.h"
#include "engine/numerics/tensor_stats.h"
#include "engine/tensor/tensor.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <string>

using namespace mantissa;

namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

float pow2(int e) { return std::ldexp(1.0f, e); }

TensorStats measure(std::vector<float> values, DType target, float histogramScale = 1.0f)
{
    return measureValues(values.data(), values.size(), target, histogramScale);
}

} // namespace

TEST(ExponentHistogram, BinsOfChosenValues)
{
    EXPECT_EQ(kHistogramBins, 63);
    EXPECT_EQ(histogramBin(0.0f), 0);
    EXPECT_EQ(histogramBin(-0.0f), 0);
    EXPECT_EQ(histogramBin(pow2(-40)), 1);
    EXPECT_EQ(histogramBin(pow2(-41)), 1) << "below 2^-40 goes to the lowest bin";
    EXPECT_EQ(histogramBin(FLT_TRUE_MIN), 1) << "fp32 subnormals too";
    EXPECT_EQ(histogramBin(pow2(-25)), 16);
    EXPECT_EQ(histogramBin(pow2(-24)), 17);
    EXPECT_EQ(histogramBin(-1.5f * pow2(-24)), 17) << "sign does not matter, [2^e, 2^(e+1)) does";
    EXPECT_EQ(histogramBin(1.0f), 41);
    EXPECT_EQ(histogramBin(65504.0f), 56);
    EXPECT_EQ(histogramBin(65520.0f), 56);
    EXPECT_EQ(histogramBin(pow2(20)), 61);
    EXPECT_EQ(histogramBin(pow2(30)), 61) << "above 2^20 goes to the highest exponent bin";
    EXPECT_EQ(histogramBin(kInf), 62);
    EXPECT_EQ(histogramBin(-kInf), 62);
    EXPECT_EQ(histogramBin(kNan), 62);
    EXPECT_EQ(histogramExponentOfBin(17), -24);

    const TensorStats s = measure({pow2(-24), pow2(-25), 65504.0f, 65520.0f, 0.0f, kInf, kNan, pow2(-41)}, DType::F16);
    ExponentHistogram expected{};
    expected[17] = 1;
    expected[16] = 1;
    expected[56] = 2;
    expected[0] = 1;
    expected[62] = 2;
    expected[1] = 1;
    EXPECT_EQ(s.histogram, expected);
    EXPECT_EQ(s.count, 8);
    EXPECT_EQ(s.amax, 65520.0f) << "the largest finite magnitude";
}

TEST(TensorStats, Fp16FractionsFollowTheRoundingRule)
{
    const float justAbove2m25 = std::nextafter(pow2(-25), 1.0f);            // rounds up to 2^-24
    const float belowMinNormal = pow2(-14) * (1.0f - pow2(-11)) * 0.99999f; // stays subnormal
    const float tieToMinNormal = pow2(-14) * (1.0f - pow2(-12));            // 2047/2048 * 2^-14: ties up to normal
    const TensorStats s =
        measure({0.0f, -0.0f, pow2(-26), pow2(-25), -pow2(-25), justAbove2m25, pow2(-24), belowMinNormal,
                 tieToMinNormal, pow2(-14), 1.0f, 65504.0f, 65519.0f, 65520.0f, -70000.0f, kInf, kNan},
                DType::F16);
    EXPECT_EQ(s.count, 17);
    EXPECT_EQ(s.zeros, 2);
    EXPECT_EQ(s.underflow, 3) << "2^-26 and +-2^-25 (the tie rounds to even zero)";
    EXPECT_EQ(s.subnormal, 3) << "just above 2^-25, 2^-24, just below the tie to 2^-14";
    EXPECT_EQ(s.overflow, 2) << "65520 and -70000; 65519 rounds to 65504";
    EXPECT_EQ(s.nonFinite, 2);
    EXPECT_DOUBLE_EQ(s.fraction(s.underflow), 3.0 / 17.0);
}

TEST(TensorStats, Bf16AndFp32Fractions)
{
    const std::vector<float> values{pow2(-25), 65520.0f, pow2(-130), pow2(-134), pow2(-133), FLT_MAX, 1.0f};
    const TensorStats bf16 = measure(values, DType::BF16);
    EXPECT_EQ(bf16.underflow, 1) << "2^-134 is half of bf16's smallest subnormal 2^-133: ties to zero";
    EXPECT_EQ(bf16.subnormal, 2) << "2^-130 and 2^-133";
    EXPECT_EQ(bf16.overflow, 1) << "FLT_MAX rounds past bf16's largest finite value";
    const TensorStats fp32 = measure(values, DType::F32);
    EXPECT_EQ(fp32.underflow, 0);
    EXPECT_EQ(fp32.subnormal, 3) << "fp32 subnormals are below 2^-126";
    EXPECT_EQ(fp32.overflow, 0);
    const RoundingThresholds f16 = roundingThresholds(DType::F16);
    EXPECT_EQ(f16.underflowMax, 0x33000000u) << "2^-25";
    EXPECT_EQ(f16.overflowMin, 0x477ff000u) << "65520";
}

TEST(TensorStats, HistogramScaleShowsUnscaledValuesWhileFractionsStayStored)
{
    const TensorStats s = measure({pow2(-10), pow2(-30)}, DType::F16, pow2(-16));
    EXPECT_EQ(s.histogram[static_cast<std::size_t>(histogramBinOfExponent(-26))], 1u);
    EXPECT_EQ(s.histogram[1], 1u) << "2^-46 is below the lowest bin";
    EXPECT_EQ(s.amax, pow2(-26));
    EXPECT_EQ(s.underflow, 1) << "2^-30 as stored flushes; 2^-10 does not";
}

TEST(TensorStats, TensorsOfEveryDtypeAndSizeAgreeWithTheScalarCount)
{
    auto backend = makeCpuBackend(0);
    std::mt19937 rng(3);
    std::normal_distribution<float> exponent(-16.0f, 8.0f);
    std::vector<float> values(300000);
    for (float& v : values)
        v = std::ldexp(1.0f, static_cast<int>(exponent(rng))) * (rng() % 2 ? 1.0f : -1.5f);
    values[7] = 0;
    values[100000] = kInf;
    for (DType type : {DType::F32, DType::F16, DType::BF16}) {
        const Tensor t = Tensor::fromFloats({static_cast<std::int64_t>(values.size())}, values, type);
        const std::vector<float> stored = t.toFloats();
        TensorStats serial;
        for (float v : stored)
            serial.merge(measure({v}, DType::F16));
        const TensorStats parallel = backend->tensorStats(t, DType::F16, 1.0f);
        EXPECT_EQ(parallel.count, serial.count) << dtypeName(type);
        EXPECT_EQ(parallel.zeros, serial.zeros) << dtypeName(type);
        EXPECT_EQ(parallel.underflow, serial.underflow) << dtypeName(type);
        EXPECT_EQ(parallel.subnormal, serial.subnormal) << dtypeName(type);
        EXPECT_EQ(parallel.overflow, serial.overflow) << dtypeName(type);
        EXPECT_EQ(parallel.nonFinite, serial.nonFinite) << dtypeName(type);
        EXPECT_EQ(parallel.amax, serial.amax) << dtypeName(type);
        EXPECT_EQ(parallel.histogram, serial.histogram) << dtypeName(type);
    }
}

// A large 16-bit tensor is measured by counting its words (tensor_stats.cpp): every word, NaNs
// and subnormals included, must count as its value does in the fp32 path, for every target and
// with a histogram scale that moves values into and out of range.
TEST(TensorStats, LargeSixteenBitTensorsCountEveryWordAsItsValue)
{
    std::vector<std::uint16_t> words;
    for (int copy = 0; copy < 3; ++copy)
        for (std::uint32_t w = 0; w < 65536; ++w)
            words.push_back(static_cast<std::uint16_t>(w * 40503u + static_cast<std::uint32_t>(copy)));
    for (DType storage : {DType::F16, DType::BF16}) {
        std::vector<float> wide(words.size());
        widenToFloat(words.data(), storage, wide.data(), wide.size());
        for (DType target : {DType::F16, DType::BF16, DType::F32})
            for (float scale : {1.0f, pow2(-12), pow2(20)}) {
                const TensorStats got = measure16BitValues(words.data(), words.size(), storage, target, scale);
                const TensorStats want = measureValues(wide.data(), wide.size(), target, scale);
                const std::string what = std::string(dtypeName(storage)) + " to " + std::string(dtypeName(target)) +
                                         " scale " + std::to_string(scale);
                EXPECT_EQ(got.count, want.count) << what;
                EXPECT_EQ(got.zeros, want.zeros) << what;
                EXPECT_EQ(got.underflow, want.underflow) << what;
                EXPECT_EQ(got.subnormal, want.subnormal) << what;
                EXPECT_EQ(got.overflow, want.overflow) << what;
                EXPECT_EQ(got.nonFinite, want.nonFinite) << what;
                EXPECT_EQ(got.nan, want.nan) << what;
                EXPECT_EQ(got.amax, want.amax) << what;
                EXPECT_EQ(got.histogram, want.histogram) << what;
            }
    }
}

TEST(WhatIf, ScaleLiftsThePercentileWithoutOverflow)
{
    ExponentHistogram h{};
    h[0] = 50; // zeros are ignored
    h[static_cast<std::size_t>(histogramBinOfExponent(-30))] = 1;
    h[static_cast<std::size_t>(histogramBinOfExponent(-20))] = 98;
    h[static_cast<std::size_t>(histogramBinOfExponent(-5))] = 1;
    h[kHistogramNonFiniteBin] = 3; // and so are non-finite values
    auto s = suggestLossScale(h, 0.01);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->lowest, pow2(16)) << "2^-30 * 2^16 = 2^-14, the smallest fp16 normal";
    EXPECT_EQ(s->highest, pow2(19)) << "values below 2^-4 times 2^19 stay below 2^15";
    EXPECT_TRUE(s->fits);
    EXPECT_EQ(s->suggested, pow2(16));
    s = suggestLossScale(h, 0.5);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->suggested, pow2(6));

    h[static_cast<std::size_t>(histogramBinOfExponent(10))] = 1; // a value near 2^10
    s = suggestLossScale(h, 0.01);
    ASSERT_TRUE(s);
    EXPECT_FALSE(s->fits);
    EXPECT_EQ(s->highest, pow2(4));
    EXPECT_EQ(s->suggested, pow2(4)) << "no overflow wins over the percentile";

    ExponentHistogram shifted{};
    shifted[static_cast<std::size_t>(histogramBinOfExponent(-30 + 8))] = 1;
    shifted[static_cast<std::size_t>(histogramBinOfExponent(-5 + 8))] = 1;
    s = suggestLossScale(shifted, 0.01, DType::F16, -8);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->lowest, pow2(16)) << "a histogram of values scaled by 2^8, shifted back";

    EXPECT_FALSE(suggestLossScale(ExponentHistogram{}, 0.01));
}

TEST(ScalerReplay, StandardPoliciesOnAHandComputedTrace)
{
    // Overflow at 2^16 when |g| >= 65520 / 65536; step 5 was skipped by the run (inf).
    const std::vector<float> trace{0.5f, 0.5f, 1.0f, 0.5f, kInf, 0.5f};
    const auto policies = standardScalerPolicies();
    ASSERT_EQ(policies.size(), 4u);

    const ReplayResult pytorch = replayScaler(trace, policies[0]);
    EXPECT_EQ(pytorch.policy, "pytorch");
    EXPECT_EQ(pytorch.scales, (std::vector<float>{65536, 65536, 65536, 32768, 32768, 16384}));
    EXPECT_EQ(pytorch.skippedSteps, 2);
    EXPECT_EQ(pytorch.finalScale, 16384);
    EXPECT_EQ(pytorch.minScale, 16384);

    // Hysteresis 2: the first overflow is tolerated, the second backs off.
    const ReplayResult deepspeed = replayScaler(trace, policies[1]);
    EXPECT_EQ(deepspeed.scales, (std::vector<float>{65536, 65536, 65536, 65536, 65536, 32768}));
    EXPECT_EQ(deepspeed.skippedSteps, 2);
    EXPECT_EQ(deepspeed.finalScale, 32768);
    EXPECT_EQ(deepspeed.minScale, 32768);

    const ReplayResult static128 = replayScaler(trace, policies[2]);
    EXPECT_EQ(static128.skippedSteps, 1) << "only the step with no known magnitude";
    EXPECT_EQ(static128.finalScale, 128);
    const ReplayResult static512 = replayScaler({600.0f, 127.0f, 128.0f}, policies[3]);
    EXPECT_EQ(static512.skippedSteps, 2) << "600*512 and 128*512 = 65536 overflow, 127*512 = 65024 does not";
}

TEST(ScalerReplay, GrowthAfterTheIntervalAndTheBf16Threshold)
{
    const std::vector<float> quiet(2001, 1e-3f);
    const ReplayResult pytorch = replayScaler(quiet, standardScalerPolicies()[0]);
    EXPECT_EQ(pytorch.skippedSteps, 0);
    EXPECT_EQ(pytorch.scales[1999], 65536);
    EXPECT_EQ(pytorch.scales[2000], 131072) << "x2 after 2000 finite steps";
    EXPECT_EQ(pytorch.finalScale, 131072);
    const ReplayResult deepspeed = replayScaler(quiet, standardScalerPolicies()[1]);
    EXPECT_EQ(deepspeed.finalScale, 262144) << "window 1000: two growths";
    // A bf16 threshold: nothing a gradient reaches overflows.
    const ReplayResult bf16 = replayScaler({1e4f}, standardScalerPolicies()[0], 3.0e38f);
    EXPECT_EQ(bf16.skippedSteps, 0);
}
