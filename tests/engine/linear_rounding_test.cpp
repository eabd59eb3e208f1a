// A linear layer with bias rounds once in 16-bit modes: y = round(x W^T + b) with the sum of
// products and the bias added in fp32, as a convolution with bias does (backend.h,
// gemmRowBias). Rounding the GEMM to 16 bits and then the sum with the bias again gives
// another answer wherever the first rounding lost bits the bias would have kept; each case
// asserts that such elements exist, so the test fails if the layer goes back to two roundings.
#include "engine/backend/backend.h"
#include "engine/model/layers/linear.h"
#include "engine/numerics/conversions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace mantissa;

namespace mantissa {
void PrintTo(DType t, std::ostream* os) { *os << dtypeName(t); }
} // namespace mantissa

namespace {

struct LinearProblem {
    std::int64_t batch, in, out;
    std::vector<float> x, weight, bias; // x [batch, in], weight [out, in], bias [out]
};

struct Expected {
    std::vector<float> roundedOnce, roundedTwice;
};

// y = x W^T + b in double (exact for the problems below), rounded once to `type`; and the
// double-rounded answer: the GEMM rounded to `type`, then the sum with the bias rounded again.
Expected expectedOutputs(const LinearProblem& p, DType type)
{
    Expected e;
    for (std::int64_t r = 0; r < p.batch; ++r) {
        for (std::int64_t o = 0; o < p.out; ++o) {
            double dot = 0;
            for (std::int64_t i = 0; i < p.in; ++i)
                dot += static_cast<double>(p.x[static_cast<std::size_t>(r * p.in + i)]) *
                       p.weight[static_cast<std::size_t>(o * p.in + i)];
            const double bias = p.bias[static_cast<std::size_t>(o)];
            e.roundedOnce.push_back(roundToDType(static_cast<float>(dot + bias), type));
            e.roundedTwice.push_back(
                roundToDType(roundToDType(static_cast<float>(dot), type) + static_cast<float>(bias), type));
        }
    }
    return e;
}

// The layer's forward output for `p`, computed in `type` with fp32 master weights (mixed
// precision: the working weights are the 16-bit copies).
std::vector<float> linearForward(const LinearProblem& p, DType type)
{
    auto backend = makeCpuBackend(2);
    Linear layer(p.in, p.out, true, "", false);
    layer.setName("0.linear");
    layer.setComputeType(type);
    layer.createParameters(*backend, DType::F32, 1);
    const std::vector<Parameter*> params = layer.parameters();
    EXPECT_EQ(params.size(), 2U);
    EXPECT_EQ(params[0]->working.dtype(), type);
    backend->upload(p.weight.data(), params[0]->working);
    backend->upload(p.bias.data(), params[1]->working);
    Tensor x = backend->empty({p.batch, p.in}, type);
    backend->upload(p.x.data(), x);
    PassState pass{*backend};
    pass.training = false;
    const ForwardResult result = layer.forward(pass, x);
    EXPECT_EQ(result.output.dtype(), type);
    return result.output.toFloats();
}

// Bit-exact comparison (the values are finite), reporting the first few differences.
void expectSameValues(const std::vector<float>& actual, const std::vector<float>& expected, const std::string& what)
{
    ASSERT_EQ(actual.size(), expected.size());
    int reported = 0;
    for (std::size_t i = 0; i < actual.size() && reported < 5; ++i) {
        if (actual[i] != expected[i]) {
            ADD_FAILURE() << what << "[" << i << "] = " << actual[i] << ", rounded once: " << expected[i];
            ++reported;
        }
    }
}

std::int64_t countDifferent(const std::vector<float>& a, const std::vector<float>& b)
{
    std::int64_t n = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        n += a[i] != b[i] ? 1 : 0;
    return n;
}

// One row, one input feature per term: dot = 1 + 2^-(p+1) + 2^-(p+3) where 2^-p is the type's
// spacing at 1 (p = 10 for fp16, 7 for bf16), so the GEMM rounds up to 1 + 2^-p, and the bias
// -1 cancels the 1. Rounded once the result is 2^-(p+1) + 2^-(p+3) exactly; rounded twice it
// is 2^-p, 60% too large. A second output column keeps the 1 (bias +0.5) for contrast.
LinearProblem cancellingProblem(DType type)
{
    const int p = dtypeLimits(type).mantissaBits;
    const float half = std::ldexp(1.0f, -(p + 1)), eighth = std::ldexp(1.0f, -(p + 3));
    return {1, 3, 2, {1.0f, half, eighth}, {1, 1, 1, 1, 1, 1}, {-1.0f, 0.5f}};
}

// Random values on grids coarse enough that every product and sum is exact in fp32 (inputs and
// weights multiples of 2^-6 in [-1, 1], 7 bits; the bias a multiple of 2^-6 in [-2, 2]): then
// round-once has one right answer whatever order sgemm sums in, and the 64-term sums carry
// more bits than either 16-bit type keeps, so their first rounding loses some.
LinearProblem randomProblem()
{
    LinearProblem p{32, 64, 24, {}, {}, {}};
    std::mt19937 generator(20260611);
    auto grid = [&](int steps) {
        return static_cast<float>(std::uniform_int_distribution<int>(-steps, steps)(generator)) / 64.0f;
    };
    for (std::int64_t i = 0; i < p.batch * p.in; ++i)
        p.x.push_back(grid(64));
    for (std::int64_t i = 0; i < p.out * p.in; ++i)
        p.weight.push_back(grid(64));
    for (std::int64_t i = 0; i < p.out; ++i)
        p.bias.push_back(grid(128));
    return p;
}

class LinearWithBias : public ::testing::TestWithParam<DType> {};

TEST_P(LinearWithBias, CancellingBiasIsRoundedOnce)
{
    const DType type = GetParam();
    const LinearProblem p = cancellingProblem(type);
    const Expected e = expectedOutputs(p, type);
    const int bits = dtypeLimits(type).mantissaBits;
    ASSERT_EQ(e.roundedOnce[0], std::ldexp(5.0f, -(bits + 3)));
    ASSERT_EQ(e.roundedTwice[0], std::ldexp(1.0f, -bits)) << "the case must tell one rounding from two";
    expectSameValues(linearForward(p, type), e.roundedOnce, "y");
}

TEST_P(LinearWithBias, RandomProductsAreRoundedOnce)
{
    const DType type = GetParam();
    const LinearProblem p = randomProblem();
    const Expected e = expectedOutputs(p, type);
    const std::int64_t differing = countDifferent(e.roundedOnce, e.roundedTwice);
    // Measured: 122 of 768 outputs (fp16) and 204 (bf16) differ between one and two roundings.
    ASSERT_GT(differing, 20) << "too few outputs where a second rounding would show";
    expectSameValues(linearForward(p, type), e.roundedOnce, "y");
}

INSTANTIATE_TEST_SUITE_P(Types, LinearWithBias, ::testing::Values(DType::F16, DType::BF16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                             return std::string(dtypeName(info.param));
                         });

TEST(LinearWithBias, Fp32IsTheExactSum)
{
    const LinearProblem p = randomProblem();
    const Expected e = expectedOutputs(p, DType::F32);
    expectSameValues(linearForward(p, DType::F32), e.roundedOnce, "y");
}

} // namespace
