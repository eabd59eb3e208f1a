// The parity harness on its own, without a GPU: each tolerance accepts the differences it
// is meant to accept and rejects the faults a GPU backend is likely to have (TF32 products,
// a dropped term, an unwritten output, a lost NaN or inf, a 16-bit value off by two ulps).
// Without this, a tolerance too loose to fail would go unnoticed where no GPU runs.
#include "parity_check.h"

#include "engine/numerics/conversions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace mantissa;
using namespace mantissa::test;

namespace {

KeptOutput output(std::vector<double> values, Tolerance t, DType dtype = DType::F32)
{
    return {"out", dtype, std::move(values), t};
}

// Rounds to TF32 (10 stored fraction bits, as tensor cores read fp32 operands in TF32 mode).
float tf32(float x)
{
    int exponent = 0;
    const float m = std::frexp(x, &exponent);
    return std::ldexp(std::nearbyint(std::ldexp(m, 11)), exponent - 11);
}

TEST(ParityCheck, ExactRejectsOneUlpAndMatchesNaNWithNaN)
{
    const auto e = output({1.0, NAN, INFINITY, -0.0}, exact());
    EXPECT_EQ(compare(e, output({1.0, NAN, INFINITY, 0.0}, exact())).count, 0u);
    const Deviation d = compare(e, output({std::nextafter(1.0f, 2.0f), NAN, INFINITY, 0.0}, exact()));
    EXPECT_EQ(d.count, 1u);
    EXPECT_EQ(d.index, 0u);
    EXPECT_EQ(compare(e, output({1.0, 0.5, INFINITY, 0.0}, exact())).count, 1u) << "a lost NaN";
    EXPECT_EQ(compare(e, output({1.0, NAN, 65504.0, 0.0}, exact())).count, 1u) << "an overflow that did not happen";
}

TEST(ParityCheck, UnwrittenOutputsFail)
{
    // OpRun fills outputs with NaN; a value the device never wrote stays NaN.
    const auto e = output({0.25, -1.5}, reduction(1000, DType::F32));
    EXPECT_EQ(compare(e, output({0.25, NAN}, reduction(1000, DType::F32))).count, 1u);
}

TEST(ParityCheck, ReductionAcceptsReorderingAndRejectsTf32AndADroppedTerm)
{
    std::mt19937 generator(3);
    std::uniform_real_distribution<float> u(-1, 1);
    const int k = 512, outputs = 64;
    std::vector<double> forward(outputs), backward(outputs), truncated(outputs), dropped(outputs);
    for (int o = 0; o < outputs; ++o) {
        std::vector<float> a(k), b(k);
        for (int i = 0; i < k; ++i)
            a[i] = u(generator), b[i] = u(generator);
        float f = 0, r = 0, t = 0;
        for (int i = 0; i < k; ++i)
            f += a[i] * b[i];
        for (int i = k - 1; i >= 0; --i)
            r += a[i] * b[i];
        for (int i = 0; i < k; ++i)
            t += tf32(a[i]) * tf32(b[i]);
        forward[o] = f, backward[o] = r, truncated[o] = t;
        dropped[o] = f - static_cast<double>(a[k / 2]) * b[k / 2];
    }
    const Tolerance tol = reduction(k, DType::F32);
    EXPECT_EQ(compare(output(forward, tol), output(backward, tol)).count, 0u) << "summation order alone";
    EXPECT_GT(compare(output(forward, tol), output(truncated, tol)).count, outputs / 2) << "TF32 products";
    EXPECT_GT(compare(output(forward, tol), output(dropped, tol)).count, outputs / 2) << "one term dropped";
}

TEST(ParityCheck, SixteenBitOutputsGetOneUlpOfTheirTypeAndNoMore)
{
    for (DType t : {DType::F16, DType::BF16}) {
        const double ulp = std::ldexp(1.0, -dtypeLimits(t).mantissaBits); // at 1.0
        const auto e = output({1.0, 1.5}, normwise(8), t);
        EXPECT_EQ(compare(e, output({1.0 + ulp, 1.5}, normwise(8), t)).count, 0u) << dtypeName(t);
        EXPECT_EQ(compare(e, output({1.0 + 2 * ulp, 1.5}, normwise(8), t)).count, 1u) << dtypeName(t);
        // Exact stays exact in 16 bits too.
        EXPECT_EQ(compare(output({1.0}, exact(), t), output({1.0 + ulp}, exact(), t)).count, 1u) << dtypeName(t);
    }
}

TEST(ParityCheck, NormwiseIsRelativeToTheLargestValue)
{
    const double u = std::ldexp(1.0, -24);
    const auto e = output({1000.0, 1e-3}, normwise(8));
    // 4 u of 1000 on the small element: far beyond its own ulps, within the tensor's.
    EXPECT_EQ(compare(e, output({1000.0, 1e-3 + 4000 * u}, normwise(8))).count, 0u);
    EXPECT_EQ(compare(e, output({1000.0, 1e-3 + 16000 * u}, normwise(8))).count, 1u);
    EXPECT_EQ(compare(output({1e-3}, elementwise(8)), output({1e-3 + 4000 * u}, elementwise(8))).count, 1u);
}

TEST(ParityCheck, TheWorstDeviationIsReportedWithItsPlace)
{
    const auto e = output({1.0, 2.0, 3.0}, exact());
    const Deviation d = compare(e, output({1.0, 2.5, 3.25}, exact()));
    EXPECT_EQ(d.count, 2u);
    EXPECT_EQ(d.index, 1u) << "infinite ratios tie; the first stands";
    const std::string text = describe(d, e);
    EXPECT_NE(text.find("2 of 3 values off"), std::string::npos) << text;
    EXPECT_NE(text.find("device 2.5"), std::string::npos) << text;
}

TEST(ParityCheck, InputsAreRepresentableAndIdenticalAcrossRuns)
{
    auto a = makeCpuBackend(1), b = makeCpuBackend(2);
    OpRun first(*a, 7), second(*b, 7);
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
        const Tensor x = first.input({100}, t, specials()), y = second.input({100}, t, specials());
        first.keep("x", x, exact());
        second.keep("x", y, exact());
    }
    ASSERT_EQ(first.kept().size(), 3u);
    for (std::size_t i = 0; i < 3; ++i)
        EXPECT_EQ(compare(first.kept()[i], second.kept()[i]).count, 0u);
    // Rounded to fp16 on the host: 65519 to fp16's largest finite value, 65520 to inf.
    const auto& half = first.kept()[1].values;
    EXPECT_EQ(half[6], 65504.0);
    EXPECT_TRUE(std::isinf(half[7]));
}

} // namespace
