// CPU ops against direct references: convolution against a naive double-precision loop on
// shapes that are not multiples of 8 (and one with a batch of 40 and 16 channels), 16-bit
// outputs against the rounded fp32 result, batch-norm statistics kept in fp32 for fp16 inputs,
// max-pool ties, average pooling without the padding, and dropout masks that repeat.
#include "engine/backend/backend.h"
#include "engine/backend/cpu/reductions.h"
#include "engine/numerics/conversions.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

using namespace mantissa;

namespace mantissa {
void PrintTo(DType t, std::ostream* os) { *os << dtypeName(t); }
} // namespace mantissa

namespace {

std::vector<float> randomValues(std::int64_t n, std::uint32_t seed, DType representableIn = DType::F32)
{
    std::mt19937 generator(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(static_cast<std::size_t>(n));
    for (float& x : v)
        x = roundToDType(dist(generator), representableIn);
    return v;
}

// --- naive convolution in double ---------------------------------------------------------------

struct ConvCase {
    std::string name;
    std::int64_t n, c, h, w, oc, kH, kW, strideH, strideW, padH, padW;
    bool bias;

    ConvGeometry geometry() const
    {
        ConvGeometry g;
        g.n = n, g.inChannels = c, g.inH = h, g.inW = w, g.outChannels = oc, g.kH = kH, g.kW = kW;
        g.strideH = strideH, g.strideW = strideW, g.padH = padH, g.padW = padW;
        g.outH = slidingOutput(h, kH, strideH, padH);
        g.outW = slidingOutput(w, kW, strideW, padW);
        return g;
    }
};

// Test names in CTest show the case name instead of the bytes of the struct.
void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

// Calls f(b, o, oh, ow, c, ih, iw, kh, kw) for every in-bounds product of the convolution.
template <typename F>
void forEachProduct(const ConvGeometry& g, F f)
{
    for (std::int64_t b = 0; b < g.n; ++b)
        for (std::int64_t o = 0; o < g.outChannels; ++o)
            for (std::int64_t oh = 0; oh < g.outH; ++oh)
                for (std::int64_t ow = 0; ow < g.outW; ++ow)
                    for (std::int64_t c = 0; c < g.inChannels; ++c)
                        for (std::int64_t kh = 0; kh < g.kH; ++kh)
                            for (std::int64_t kw = 0; kw < g.kW; ++kw) {
                                const std::int64_t ih = oh * g.strideH - g.padH + kh;
                                const std::int64_t iw = ow * g.strideW - g.padW + kw;
                                if (ih >= 0 && ih < g.inH && iw >= 0 && iw < g.inW)
                                    f(b, o, oh, ow, c, ih, iw, kh, kw);
                            }
}

// Each result with the sum of the magnitudes of its terms: the scale of fp32 rounding error.
struct Reference {
    std::vector<double> value, magnitude;
    void resize(std::size_t n) { value.assign(n, 0.0), magnitude.assign(n, 0.0); }
    void add(std::size_t i, double term) { value[i] += term, magnitude[i] += std::abs(term); }
};

struct NaiveConv {
    Reference y, dx, dw, dbias;
};

NaiveConv naiveConv(const ConvGeometry& g, const std::vector<float>& x, const std::vector<float>& w,
                    const std::vector<float>& bias, const std::vector<float>& dy)
{
    NaiveConv r;
    r.y.resize(static_cast<std::size_t>(g.n * g.outChannels * g.outH * g.outW));
    r.dx.resize(x.size());
    r.dw.resize(w.size());
    r.dbias.resize(static_cast<std::size_t>(g.outChannels));
    auto xAt = [&](auto b, auto c, auto ih, auto iw) {
        return static_cast<std::size_t>(((b * g.inChannels + c) * g.inH + ih) * g.inW + iw);
    };
    auto wAt = [&](auto o, auto c, auto kh, auto kw) {
        return static_cast<std::size_t>(((o * g.inChannels + c) * g.kH + kh) * g.kW + kw);
    };
    auto yAt = [&](auto b, auto o, auto oh, auto ow) {
        return static_cast<std::size_t>(((b * g.outChannels + o) * g.outH + oh) * g.outW + ow);
    };
    forEachProduct(g, [&](auto b, auto o, auto oh, auto ow, auto c, auto ih, auto iw, auto kh, auto kw) {
        r.y.add(yAt(b, o, oh, ow), static_cast<double>(x[xAt(b, c, ih, iw)]) * w[wAt(o, c, kh, kw)]);
        r.dx.add(xAt(b, c, ih, iw), static_cast<double>(dy[yAt(b, o, oh, ow)]) * w[wAt(o, c, kh, kw)]);
        r.dw.add(wAt(o, c, kh, kw), static_cast<double>(dy[yAt(b, o, oh, ow)]) * x[xAt(b, c, ih, iw)]);
    });
    for (std::size_t i = 0; i < r.y.value.size(); ++i) {
        const auto o = static_cast<std::size_t>((static_cast<std::int64_t>(i) / (g.outH * g.outW)) % g.outChannels);
        if (!bias.empty())
            r.y.add(i, bias[o]);
        r.dbias.add(o, dy[i]);
    }
    return r;
}

// fp32 sums of n terms err by a few ulps of the sum of their magnitudes (the order differs
// from the reference's); an indexing mistake errs by a whole term.
void expectNear(const std::vector<float>& actual, const Reference& expected, const std::string& what)
{
    ASSERT_EQ(actual.size(), expected.value.size()) << what;
    int reported = 0;
    for (std::size_t i = 0; i < actual.size() && reported < 5; ++i) {
        const double allowed = 1e-6 + 4e-7 * expected.magnitude[i];
        if (!(std::abs(actual[i] - expected.value[i]) <= allowed)) {
            ADD_FAILURE() << what << "[" << i << "] = " << actual[i] << ", expected " << expected.value[i];
            ++reported;
        }
    }
}

class ConvAgainstNaive : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvAgainstNaive, ForwardAndBothBackwardsMatch)
{
    const ConvCase& cc = GetParam();
    const ConvGeometry g = cc.geometry();
    auto backend = makeCpuBackend(2);
    const auto x = randomValues(g.n * g.inChannels * g.inH * g.inW, 1);
    const auto w = randomValues(g.outChannels * g.inChannels * g.kH * g.kW, 2);
    const auto bias = cc.bias ? randomValues(g.outChannels, 3) : std::vector<float>{};
    const auto dy = randomValues(g.n * g.outChannels * g.outH * g.outW, 4);
    const NaiveConv expected = naiveConv(g, x, w, bias, dy);

    Tensor tx = Tensor::fromFloats({g.n, g.inChannels, g.inH, g.inW}, x);
    Tensor tw = Tensor::fromFloats({g.outChannels, g.inChannels, g.kH, g.kW}, w);
    Tensor tb = cc.bias ? Tensor::fromFloats({g.outChannels}, bias) : Tensor();
    Tensor tdy = Tensor::fromFloats({g.n, g.outChannels, g.outH, g.outW}, dy);
    Tensor y = backend->empty(tdy.shape(), DType::F32);
    Tensor dx = backend->empty(tx.shape(), DType::F32);
    Tensor dw = backend->empty(tw.shape(), DType::F32);
    Tensor dbias = backend->empty({g.outChannels}, DType::F32);
    backend->conv2dForward(tx, tw, cc.bias ? &tb : nullptr, y, g);
    backend->conv2dBackwardData(tdy, tw, dx, g);
    backend->conv2dBackwardFilter(tx, tdy, dw, &dbias, g);

    expectNear(y.toFloats(), expected.y, "y");
    expectNear(dx.toFloats(), expected.dx, "dx");
    expectNear(dw.toFloats(), expected.dw, "dw");
    expectNear(dbias.toFloats(), expected.dbias, "dbias");
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvAgainstNaive,
                         ::testing::Values(
                             //      name              n   c   h   w  oc kH kW sH sW pH pW bias
                             ConvCase{"same3x3", 2, 3, 5, 5, 4, 3, 3, 1, 1, 1, 1, true},
                             ConvCase{"valid3x3s2", 3, 5, 7, 9, 7, 3, 3, 2, 2, 0, 0, true},
                             ConvCase{"mnistFirst", 2, 1, 28, 28, 32, 3, 3, 1, 1, 1, 1, true},
                             ConvCase{"pointwise", 2, 6, 6, 5, 3, 1, 1, 1, 1, 0, 0, false},
                             ConvCase{"pointwiseS2", 2, 6, 7, 7, 3, 1, 1, 2, 2, 0, 0, false},
                             ConvCase{"kernel5pad2s2", 2, 4, 9, 7, 5, 5, 5, 2, 2, 2, 2, true},
                             ConvCase{"kernel2s2pad1", 3, 3, 8, 8, 6, 2, 2, 2, 2, 1, 1, false},
                             ConvCase{"rectangular", 2, 2, 6, 7, 3, 3, 2, 2, 1, 1, 0, true},
                             ConvCase{"kernelIsInput", 2, 3, 4, 4, 5, 4, 4, 1, 1, 0, 0, true},
                             ConvCase{"stride3pad1", 1, 2, 10, 11, 3, 3, 3, 3, 3, 1, 1, true},
                             // The last input row and column fall outside every window.
                             ConvCase{"stride3unreadEdge", 2, 2, 10, 10, 3, 3, 3, 3, 3, 0, 0, true},
                             // Large enough for oneDNN's blocked kernels and their per-thread partial sums.
                             ConvCase{"severalChunks", 40, 16, 28, 28, 9, 3, 3, 1, 1, 1, 1, true}),
                         [](const ::testing::TestParamInfo<ConvCase>& info) { return info.param.name; });

// 16-bit tensors hold exactly representable values and the GEMM accumulates in fp32, so a
// 16-bit output must be the fp32 result rounded once: within one ulp of it (native bf16
// kernels may sum in another order than the fp32 ones, which can straddle a rounding boundary).
void expectWithinOneUlp(const std::vector<float>& actual16, const std::vector<float>& exact32, DType type,
                        const std::string& what)
{
    ASSERT_EQ(actual16.size(), exact32.size());
    const float epsilon = std::ldexp(1.0f, -dtypeLimits(type).mantissaBits);
    int reported = 0;
    for (std::size_t i = 0; i < exact32.size() && reported < 5; ++i) {
        const float rounded = roundToDType(exact32[i], type);
        const float ulp = std::max(std::abs(rounded) * epsilon, dtypeLimits(type).minSubnormal);
        if (!(std::abs(actual16[i] - rounded) <= ulp)) {
            ADD_FAILURE() << what << "[" << i << "] = " << actual16[i] << ", fp32 result rounded: " << rounded;
            ++reported;
        }
    }
}

class ConvLowPrecision : public ::testing::TestWithParam<DType> {};

TEST_P(ConvLowPrecision, OutputsAreTheFp32ResultRounded)
{
    const DType type = GetParam();
    const ConvGeometry g = ConvCase{"", 3, 5, 9, 9, 7, 3, 3, 1, 1, 1, 1, true}.geometry();
    auto backend = makeCpuBackend(2);
    const auto x = randomValues(g.n * g.inChannels * g.inH * g.inW, 11, type);
    const auto w = randomValues(g.outChannels * g.inChannels * 9, 12, type);
    const auto bias = randomValues(g.outChannels, 13, type);
    const auto dy = randomValues(g.n * g.outChannels * g.outH * g.outW, 14, type);
    const Shape xs{g.n, g.inChannels, g.inH, g.inW}, ws{g.outChannels, g.inChannels, 3, 3};
    const Shape ys{g.n, g.outChannels, g.outH, g.outW}, bs{g.outChannels};

    auto run = [&](DType t) {
        Tensor tx = Tensor::fromFloats(xs, x, t), tw = Tensor::fromFloats(ws, w, t);
        Tensor tb = Tensor::fromFloats(bs, bias, t), tdy = Tensor::fromFloats(ys, dy, t);
        Tensor y = backend->empty(ys, t), dx = backend->empty(xs, t), dw = backend->empty(ws, t);
        Tensor db = backend->empty(bs, t);
        backend->conv2dForward(tx, tw, &tb, y, g);
        backend->conv2dBackwardData(tdy, tw, dx, g);
        backend->conv2dBackwardFilter(tx, tdy, dw, &db, g);
        return std::vector<std::vector<float>>{y.toFloats(), dx.toFloats(), dw.toFloats(), db.toFloats()};
    };
    const auto exact = run(DType::F32);
    const auto low = run(type);
    const char* names[] = {"y", "dx", "dw", "dbias"};
    for (std::size_t i = 0; i < exact.size(); ++i)
        expectWithinOneUlp(low[i], exact[i], type, names[i]);
}

INSTANTIATE_TEST_SUITE_P(Types, ConvLowPrecision, ::testing::Values(DType::F16, DType::BF16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                             return std::string(dtypeName(info.param));
                         });

// --- activations -----------------------------------------------------------------------------------

double referenceActivation(Activation kind, double x)
{
    switch (kind) {
    case Activation::Relu: return x > 0 ? x : 0.0;
    case Activation::Gelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::Tanh: return std::tanh(x);
    case Activation::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    }
    return x;
}

// f'(x), for tanh and sigmoid from their stored (rounded) output y, as the backend defines it.
double referenceDerivative(Activation kind, double x, double y)
{
    switch (kind) {
    case Activation::Relu: return x > 0 ? 1.0 : 0.0;
    case Activation::Gelu:
        return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) + x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
    case Activation::Tanh: return 1.0 - y * y;
    case Activation::Sigmoid: return y * (1.0 - y);
    }
    return 1.0;
}

struct ActivationCase {
    Activation kind;
    DType type;
};

std::string activationCaseName(const ::testing::TestParamInfo<ActivationCase>& info)
{
    const char* kinds[] = {"relu", "gelu", "tanh", "sigmoid"};
    return std::string(kinds[static_cast<int>(info.param.kind)]) + "_" + std::string(dtypeName(info.param.type));
}

class ActivationAgainstReference : public ::testing::TestWithParam<ActivationCase> {};

// fp32 forward and backward against the double-precision formula over [-8, 8] (an odd count,
// so that vector tails run, and more than one thread's share), within a few fp32 ulps of the
// terms involved: oneDNN's erf and exp are polynomials, not libm's, and GELU's 1 + erf(x/sqrt 2)
// cancels for negative x as in PyTorch's formula (and libm's), so its error is relative to |x|,
// not to the result. A 16-bit activation is the fp32 one rounded once into the 16-bit type,
// give or take one ulp where the bf16 kernel's fp32 value lands across a rounding boundary.
TEST_P(ActivationAgainstReference, ForwardAndBackwardMatchTheFormula)
{
    const auto [kind, type] = GetParam();
    const std::int64_t n = 70001;
    auto x = randomValues(n, 21, type);
    for (float& v : x)
        v = roundToDType(8.0f * v, type);
    x[0] = 0.0f;
    const auto dy = randomValues(n, 22, type);
    auto backend = makeCpuBackend(2);
    const auto run = [&](DType t) {
        Tensor tx = Tensor::fromFloats({n}, x, t), tdy = Tensor::fromFloats({n}, dy, t);
        Tensor y = backend->empty({n}, t), dx = backend->empty({n}, t);
        backend->activationForward(kind, tx, y);
        backend->activationBackward(kind, tx, y, tdy, dx);
        return std::pair{y.toFloats(), dx.toFloats()};
    };
    const auto [ys, dxs] = run(DType::F32);
    if (type != DType::F32) {
        const auto [ys16, dxs16] = run(type);
        expectWithinOneUlp(ys16, ys, type, "y");
        // tanh and sigmoid differentiate from their own rounded output, so their 16-bit backward
        // is checked against the formula at that output; GELU's and ReLU's against the fp32 one.
        std::vector<float> exactDx(dxs);
        if (kind == Activation::Tanh || kind == Activation::Sigmoid)
            for (std::size_t i = 0; i < exactDx.size(); ++i)
                exactDx[i] = static_cast<float>(dy[i] * referenceDerivative(kind, x[i], ys16[i]));
        expectWithinOneUlp(dxs16, exactDx, type, "dx");
        return;
    }
    const float eps = std::numeric_limits<float>::epsilon();
    int reported = 0;
    for (std::size_t i = 0; i < x.size() && reported < 5; ++i) {
        const double exactY = referenceActivation(kind, x[i]);
        const double exactDx = dy[i] * referenceDerivative(kind, x[i], ys[i]);
        const double yScale = std::abs(exactY) + (kind == Activation::Gelu ? std::abs(x[i]) : 0.0);
        // Backward subtracts (1 - y^2, GELU's two terms of opposite sign near x = -0.75), so its
        // error is bounded by the size of the terms, not of the result.
        const double dxScale = std::abs(dy[i]) * (1.0 + std::abs(x[i]));
        if (!(std::abs(ys[i] - exactY) <= 8 * eps * yScale) || !(std::abs(dxs[i] - exactDx) <= 16 * eps * dxScale)) {
            ADD_FAILURE() << "x = " << x[i] << ": y " << ys[i] << " vs " << exactY << ", dx " << dxs[i] << " vs "
                          << exactDx;
            ++reported;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, ActivationAgainstReference,
    ::testing::Values(ActivationCase{Activation::Gelu, DType::F32}, ActivationCase{Activation::Gelu, DType::BF16},
                      ActivationCase{Activation::Gelu, DType::F16}, ActivationCase{Activation::Tanh, DType::F32},
                      ActivationCase{Activation::Tanh, DType::BF16}, ActivationCase{Activation::Sigmoid, DType::F32},
                      ActivationCase{Activation::Sigmoid, DType::BF16}, ActivationCase{Activation::Relu, DType::F32},
                      ActivationCase{Activation::Relu, DType::BF16}),
    activationCaseName);

// Infinities and NaN go through as the formulas say, in fp32 and in bf16's own kernels.
TEST(Activations, InfinitiesSaturateAndNanPropagates)
{
    auto backend = makeCpuBackend(2);
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> x{inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1.0f};
    for (DType type : {DType::F32, DType::BF16}) {
        Tensor tx = Tensor::fromFloats({4}, x, type);
        const auto run = [&](Activation kind) {
            Tensor y = backend->empty({4}, type);
            backend->activationForward(kind, tx, y);
            return y.toFloats();
        };
        const auto gelu = run(Activation::Gelu), tanh = run(Activation::Tanh), sigmoid = run(Activation::Sigmoid);
        EXPECT_EQ(gelu[0], inf) << dtypeName(type);
        EXPECT_EQ(tanh[0], 1.0f) << dtypeName(type);
        EXPECT_EQ(tanh[1], -1.0f) << dtypeName(type);
        EXPECT_EQ(sigmoid[0], 1.0f) << dtypeName(type);
        EXPECT_EQ(sigmoid[1], 0.0f) << dtypeName(type);
        for (const auto* values : {&gelu, &tanh, &sigmoid})
            EXPECT_TRUE(std::isnan((*values)[2])) << dtypeName(type);
    }
    // ReLU's backward selects: an inf gradient stays inf where the unit is on, 0 (not NaN) where off.
    Tensor tx = Tensor::fromFloats({2}, {1.0f, -1.0f});
    Tensor tdy = Tensor::fromFloats({2}, {inf, inf});
    Tensor y = backend->empty({2}, DType::F32), dx = backend->empty({2}, DType::F32);
    backend->activationForward(Activation::Relu, tx, y);
    backend->activationBackward(Activation::Relu, tx, y, tdy, dx);
    EXPECT_EQ(dx.toFloats(), (std::vector<float>{inf, 0.0f}));
}

// ReLU between tensors of one 16-bit type selects stored words (relu_words.h): for every word of
// x (and every word of dy beside it) the result must be the fp32 loop's, rounded into the type,
// which is what ReLU into an fp32 tensor gives before that rounding: zeros of both signs,
// subnormals, infinities and NaNs (a NaN dy comes back quiet) included.
TEST(Activations, SixteenBitReluSelectsTheWordsTheFp32LoopWouldRound)
{
    auto backend = makeCpuBackend(2);
    const std::int64_t n = 65536;
    for (DType type : {DType::F16, DType::BF16}) {
        std::vector<std::uint16_t> xWords(n), dyWords(n);
        for (std::int64_t i = 0; i < n; ++i) {
            xWords[static_cast<std::size_t>(i)] = static_cast<std::uint16_t>(i);
            dyWords[static_cast<std::size_t>(i)] = static_cast<std::uint16_t>(i * 40503 + 7);
        }
        Tensor x = backend->empty({n}, type), dy = backend->empty({n}, type);
        std::copy(xWords.begin(), xWords.end(), x.u16());
        std::copy(dyWords.begin(), dyWords.end(), dy.u16());
        Tensor y = backend->empty({n}, type), dx = backend->empty({n}, type);
        backend->activationForward(Activation::Relu, x, y);
        backend->activationBackward(Activation::Relu, x, y, dy, dx);
        // The fp32 loop: outputs in fp32 (mixed types take the general path), then rounded.
        Tensor y32 = backend->empty({n}, DType::F32), dx32 = backend->empty({n}, DType::F32);
        backend->activationForward(Activation::Relu, x, y32);
        backend->activationBackward(Activation::Relu, x, y32, dy, dx32);
        std::vector<std::uint16_t> wantY(n), wantDx(n);
        narrowFromFloat(y32.f32(), wantY.data(), wantY.size(), type);
        narrowFromFloat(dx32.f32(), wantDx.data(), wantDx.size(), type);
        for (std::size_t i = 0; i < wantY.size(); ++i) {
            ASSERT_EQ(y.u16()[i], wantY[i]) << dtypeName(type) << " x word 0x" << std::hex << xWords[i];
            ASSERT_EQ(dx.u16()[i], wantDx[i])
                << dtypeName(type) << " x word 0x" << std::hex << xWords[i] << ", dy word 0x" << dyWords[i];
        }
    }
}

// --- batch norm ----------------------------------------------------------------------------------

struct BatchNormTensors {
    Tensor gamma, beta;
    BatchNormState state;
};

BatchNormTensors batchNormTensors(Backend& backend, std::int64_t channels)
{
    BatchNormTensors t;
    t.gamma = Tensor::fromFloats({channels}, std::vector<float>(static_cast<std::size_t>(channels), 1.0f));
    t.beta = Tensor::zeros({channels});
    t.state.runningMean = Tensor::zeros({channels});
    t.state.runningVar = Tensor::fromFloats({channels}, std::vector<float>(static_cast<std::size_t>(channels), 1.0f));
    t.state.savedMean = backend.empty({channels}, DType::F32);
    t.state.savedInvStd = backend.empty({channels}, DType::F32);
    return t;
}

TEST(BatchNorm, StatisticsStayFp32ForFp16Inputs)
{
    // 1000 + k/2 is exact in fp16 (its spacing there is 0.5), but the channel sum (~1e6)
    // overflows fp16 and an fp16 variance would lose the spread of a few units entirely.
    const std::int64_t n = 64, channels = 2, spatial = 16;
    std::vector<float> x(static_cast<std::size_t>(n * channels * spatial));
    for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = 1000.0f + 0.5f * static_cast<float>((i * 7) % 9) + (((i / spatial) % channels) ? -24.0f : 0.0f);
    std::vector<double> mean(channels, 0.0), var(channels, 0.0);
    const double count = static_cast<double>(n * spatial);
    for (std::size_t i = 0; i < x.size(); ++i)
        mean[(i / spatial) % channels] += x[i] / count;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const std::size_t c = (i / spatial) % channels;
        var[c] += (x[i] - mean[c]) * (x[i] - mean[c]) / count;
    }

    auto backend = makeCpuBackend(2);
    BatchNormTensors t = batchNormTensors(*backend, channels);
    Tensor x16 = Tensor::fromFloats({n, channels, 4, 4}, x, DType::F16);
    Tensor y = backend->empty(x16.shape(), DType::F16);
    const float momentum = 0.1f, epsilon = 1e-5f;
    backend->batchNormForward(x16, t.gamma, t.beta, y, t.state, true, momentum, epsilon);

    for (std::size_t c = 0; c < channels; ++c) {
        EXPECT_NEAR(t.state.savedMean.f32()[c], mean[c], 1e-6 * mean[c]) << "channel " << c;
        EXPECT_NEAR(t.state.savedInvStd.f32()[c], 1.0 / std::sqrt(var[c] + epsilon), 1e-5) << "channel " << c;
        // PyTorch's running statistics: momentum-weighted, unbiased variance.
        EXPECT_NEAR(t.state.runningMean.f32()[c], momentum * mean[c], 1e-6 * mean[c]);
        EXPECT_NEAR(t.state.runningVar.f32()[c], (1 - momentum) + momentum * var[c] * count / (count - 1), 1e-5);
    }
    // The normalised output is O(1) and must be right to fp16 precision, not swamped by 1000.
    const auto out = y.toFloats();
    for (std::size_t i = 0; i < x.size(); ++i) {
        const std::size_t c = (i / spatial) % channels;
        const double expected = (x[i] - mean[c]) / std::sqrt(var[c] + epsilon);
        ASSERT_NEAR(out[i], expected, 2e-3 * (1 + std::abs(expected))) << "element " << i;
    }
}

TEST(BatchNorm, InferenceUsesRunningStatistics)
{
    auto backend = makeCpuBackend(2);
    BatchNormTensors t = batchNormTensors(*backend, 3);
    t.gamma = Tensor::fromFloats({3}, {2.0f, 1.0f, 0.5f});
    t.beta = Tensor::fromFloats({3}, {0.0f, 1.0f, -1.0f});
    t.state.runningMean = Tensor::fromFloats({3}, {1.0f, -2.0f, 0.5f});
    t.state.runningVar = Tensor::fromFloats({3}, {4.0f, 1.0f, 0.25f});
    const std::vector<float> x{3.0f, 0.0f, 0.5f, 1.0f, -2.0f, 1.0f};
    Tensor tx = Tensor::fromFloats({2, 3}, x);
    Tensor y = backend->empty({2, 3}, DType::F32);
    backend->batchNormForward(tx, t.gamma, t.beta, y, t.state, false, 0.1f, 0.0f);
    const std::vector<float> expected{2.0f, 3.0f, -1.0f, 0.0f, 1.0f, -0.5f};
    const auto out = y.toFloats();
    for (std::size_t i = 0; i < expected.size(); ++i)
        EXPECT_NEAR(out[i], expected[i], 1e-6f) << i;
    EXPECT_EQ(t.state.runningMean.f32()[0], 1.0f) << "evaluation must not update the running statistics";
}

// The statistics and gradients are the documented arithmetic (cpu/batch_norm.cpp): each plane
// summed by reductions.h from zero, the planes' sums added in sample order in double, the
// outputs formed in fp32 and rounded once. The CPU backend may visit the channels in any
// order and on any thread; the bits must be these.
struct BatchNormShape {
    std::int64_t n, channels, h, w;
};

void PrintTo(const BatchNormShape& s, std::ostream* os) { *os << s.n << "x" << s.channels << "x" << s.h << "x" << s.w; }

class BatchNormBits : public ::testing::TestWithParam<std::tuple<DType, BatchNormShape>> {};

TEST_P(BatchNormBits, AreTheDocumentedSumsPlaneByPlane)
{
    const auto [type, shape] = GetParam();
    const std::int64_t spatial = shape.h * shape.w, total = shape.n * shape.channels * spatial;
    const auto channels = static_cast<std::size_t>(shape.channels);
    // An offset per channel, so a wrong mean or a mixed-up channel shows.
    std::vector<float> x = randomValues(total, 11, type), dy = randomValues(total, 12, type);
    for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = roundToDType(x[i] + static_cast<float>((i / static_cast<std::size_t>(spatial)) % channels), type);
    std::vector<float> gamma(channels), beta(channels);
    for (std::size_t c = 0; c < channels; ++c)
        gamma[c] = 0.5f + 0.25f * static_cast<float>(c), beta[c] = 0.125f * static_cast<float>(c);

    auto backend = makeCpuBackend(2);
    BatchNormTensors t = batchNormTensors(*backend, shape.channels);
    t.gamma = Tensor::fromFloats({shape.channels}, gamma);
    t.beta = Tensor::fromFloats({shape.channels}, beta);
    const Shape dims{shape.n, shape.channels, shape.h, shape.w};
    const Tensor tx = Tensor::fromFloats(dims, x, type), tdy = Tensor::fromFloats(dims, dy, type);
    Tensor y = backend->empty(dims, type), dx = backend->empty(dims, type);
    Tensor dgamma = backend->empty({shape.channels}, DType::F32), dbeta = backend->empty({shape.channels}, DType::F32);
    const float momentum = 0.1f, epsilon = 1e-5f;
    backend->batchNormForward(tx, t.gamma, t.beta, y, t.state, true, momentum, epsilon);
    backend->batchNormBackward(tx, tdy, t.gamma, t.state, dx, dgamma, dbeta);

    const auto plane = [&](const std::vector<float>& v, std::int64_t i, std::size_t c) {
        return v.data() + (i * shape.channels + static_cast<std::int64_t>(c)) * spatial;
    };
    const double count = static_cast<double>(shape.n * spatial);
    const auto outY = y.toFloats(), outDx = dx.toFloats();
    for (std::size_t c = 0; c < channels; ++c) {
        double sum = 0, squares = 0, sumDy = 0, sumDyXmu = 0;
        for (std::int64_t i = 0; i < shape.n; ++i)
            sum += cpu::sumFloats(plane(x, i, c), spatial);
        const double batchMean = sum / count;
        const auto mean = static_cast<float>(batchMean);
        for (std::int64_t i = 0; i < shape.n; ++i)
            squares += cpu::sumSquaredDeviations(plane(x, i, c), spatial, mean);
        const double batchVar = squares / count;
        const auto invStd = static_cast<float>(1.0 / std::sqrt(batchVar + epsilon));
        ASSERT_EQ(t.state.savedMean.f32()[c], mean) << "channel " << c;
        ASSERT_EQ(t.state.savedInvStd.f32()[c], invStd) << "channel " << c;
        ASSERT_EQ(t.state.runningMean.f32()[c], static_cast<float>(momentum * batchMean)) << "channel " << c;
        const float scale = gamma[c] * invStd;
        for (std::int64_t i = 0; i < shape.n; ++i) {
            sumDy += cpu::sumFloats(plane(dy, i, c), spatial);
            sumDyXmu += cpu::dotDeviations(plane(dy, i, c), plane(x, i, c), spatial, mean);
        }
        ASSERT_EQ(dbeta.f32()[c], static_cast<float>(sumDy)) << "channel " << c;
        ASSERT_EQ(dgamma.f32()[c], static_cast<float>(sumDyXmu * invStd)) << "channel " << c;
        const double k = static_cast<double>(gamma[c]) * invStd;
        const auto a = static_cast<float>(k);
        const auto b = static_cast<float>(-k * invStd * invStd * sumDyXmu / count);
        const auto shift = static_cast<float>(-k * sumDy / count);
        for (std::int64_t i = 0; i < shape.n; ++i) {
            const auto at = static_cast<std::size_t>(plane(x, i, c) - x.data());
            for (std::size_t j = 0; j < static_cast<std::size_t>(spatial); ++j) {
                ASSERT_EQ(outY[at + j], roundToDType((x[at + j] - mean) * scale + beta[c], type))
                    << "y, channel " << c << ", sample " << i << ", element " << j;
                ASSERT_EQ(outDx[at + j], roundToDType(dy[at + j] * a + (x[at + j] - mean) * b + shift, type))
                    << "dx, channel " << c << ", sample " << i << ", element " << j;
            }
        }
    }
}

// Small enough for one thread; large enough for two, 28x28 planes; planes longer than one
// reductions.h block (40x40 = 1600 values), whose sums carry from block to block.
INSTANTIATE_TEST_SUITE_P(Shapes, BatchNormBits,
                         ::testing::Combine(::testing::Values(DType::F32, DType::BF16, DType::F16),
                                            ::testing::Values(BatchNormShape{2, 3, 4, 4}, BatchNormShape{32, 5, 28, 28},
                                                              BatchNormShape{4, 3, 40, 40})),
                         [](const auto& info) {
                             const BatchNormShape s = std::get<1>(info.param);
                             return std::string(dtypeName(std::get<0>(info.param))) + "_" + std::to_string(s.n) + "x" +
                                    std::to_string(s.channels) + "x" + std::to_string(s.h) + "x" + std::to_string(s.w);
                         });

// --- element-wise sum ------------------------------------------------------------------------------

// add() on 16-bit tensors: each sum formed in fp32 and rounded once into the output's type (bf16
// reads its inputs where they lie, the others through fp32 chunks), over a tensor long enough for
// two threads and a short last chunk, with values that overflow to infinity, and into one of its
// own inputs.
TEST(Add, SixteenBitSumsAreTheFp32SumsRoundedOnce)
{
    auto backend = makeCpuBackend(2);
    const std::int64_t n = 200003;
    for (const DType type : {DType::BF16, DType::F16}) {
        std::vector<float> a = randomValues(n, 21, type), b = randomValues(n, 22, type);
        const float big = type == DType::BF16 ? 3.0e38f : 60000.0f;
        a[5] = roundToDType(big, type), b[5] = roundToDType(big, type); // overflows to inf
        a[6] = -INFINITY, b[6] = 1.0f;
        const Tensor ta = Tensor::fromFloats({n}, a, type), tb = Tensor::fromFloats({n}, b, type);
        Tensor out = backend->empty({n}, type);
        backend->add(ta, tb, out);
        Tensor inPlace = Tensor::fromFloats({n}, a, type);
        backend->add(inPlace, tb, inPlace);
        const auto got = out.toFloats(), gotInPlace = inPlace.toFloats();
        for (std::size_t i = 0; i < a.size(); ++i) {
            const float want = roundToDType(a[i] + b[i], type);
            ASSERT_EQ(std::memcmp(&got[i], &want, sizeof(float)), 0)
                << dtypeName(type) << " element " << i << ": " << got[i] << ", want " << want;
            ASSERT_EQ(std::memcmp(&gotInPlace[i], &want, sizeof(float)), 0) << dtypeName(type) << " in place, " << i;
        }
        EXPECT_EQ(got[5], INFINITY) << dtypeName(type);
    }
}

// --- pooling ---------------------------------------------------------------------------------------

PoolGeometry poolGeometry(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t k,
                          std::int64_t stride, std::int64_t pad)
{
    PoolGeometry g;
    g.n = n, g.channels = c, g.inH = h, g.inW = w, g.kH = k, g.kW = k;
    g.strideH = stride, g.strideW = stride, g.padH = pad, g.padW = pad;
    g.outH = slidingOutput(h, k, stride, pad);
    g.outW = slidingOutput(w, k, stride, pad);
    return g;
}

struct PoolCase {
    std::string name;
    std::int64_t h, w, kernel, stride, pad;
};

void PrintTo(const PoolCase& c, std::ostream* os) { *os << c.name; }

// The pools against a direct loop over each window, on random values drawn from a few
// levels (so windows tie) with some NaNs, for widths that leave partial vectors.
class PoolAgainstNaive : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolAgainstNaive, MatchesDirectLoops)
{
    const PoolCase& pc = GetParam();
    const std::int64_t n = 2, c = 3;
    const PoolGeometry g = poolGeometry(n, c, pc.h, pc.w, pc.kernel, pc.stride, pc.pad);
    std::mt19937 generator(21);
    std::uniform_int_distribution<int> level(-3, 3);
    std::vector<float> x(static_cast<std::size_t>(n * c * pc.h * pc.w));
    for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = i % 37 == 5 ? std::numeric_limits<float>::quiet_NaN() : 0.5f * static_cast<float>(level(generator));
    const auto dy = randomValues(n * c * g.outH * g.outW, 22);
    const std::int64_t in = pc.h * pc.w, out = g.outH * g.outW;

    std::vector<float> maxY(static_cast<std::size_t>(n * c * out)), avgY(maxY.size()), where(maxY.size());
    std::vector<double> maxDx(x.size(), 0.0), avgDx(x.size(), 0.0);
    for (std::int64_t p = 0; p < n * c; ++p) {
        for (std::int64_t oh = 0; oh < g.outH; ++oh) {
            for (std::int64_t ow = 0; ow < g.outW; ++ow) {
                float best = -std::numeric_limits<float>::infinity();
                std::int64_t at = -1, count = 0;
                double sum = 0;
                for (std::int64_t ih = oh * g.strideH - g.padH; ih < oh * g.strideH - g.padH + g.kH; ++ih) {
                    for (std::int64_t iw = ow * g.strideW - g.padW; iw < ow * g.strideW - g.padW + g.kW; ++iw) {
                        if (ih < 0 || ih >= pc.h || iw < 0 || iw >= pc.w)
                            continue;
                        const float v = x[static_cast<std::size_t>(p * in + ih * pc.w + iw)];
                        if (at < 0 || v > best || (std::isnan(v) && !std::isnan(best))) {
                            best = v;
                            at = ih * pc.w + iw;
                        }
                        sum += v;
                        ++count;
                    }
                }
                const auto o = static_cast<std::size_t>(p * out + oh * g.outW + ow);
                maxY[o] = best;
                where[o] = static_cast<float>(at);
                avgY[o] = static_cast<float>(sum / static_cast<double>(count));
                maxDx[static_cast<std::size_t>(p * in + at)] += dy[o];
                for (std::int64_t ih = std::max<std::int64_t>(oh * g.strideH - g.padH, 0);
                     ih < std::min(oh * g.strideH - g.padH + g.kH, pc.h); ++ih)
                    for (std::int64_t iw = std::max<std::int64_t>(ow * g.strideW - g.padW, 0);
                         iw < std::min(ow * g.strideW - g.padW + g.kW, pc.w); ++iw)
                        avgDx[static_cast<std::size_t>(p * in + ih * pc.w + iw)] += dy[o] / static_cast<double>(count);
            }
        }
    }

    auto backend = makeCpuBackend(2);
    Tensor tx = Tensor::fromFloats({n, c, pc.h, pc.w}, x);
    Tensor tdy = Tensor::fromFloats({n, c, g.outH, g.outW}, dy);
    Tensor y = backend->empty(tdy.shape(), DType::F32), argmax = backend->empty(tdy.shape(), DType::F32);
    Tensor dx = backend->empty(tx.shape(), DType::F32);
    backend->maxPoolForward(tx, y, argmax, g);
    const auto gotY = y.toFloats(), gotWhere = argmax.toFloats();
    for (std::size_t i = 0; i < maxY.size(); ++i) {
        ASSERT_EQ(gotWhere[i], where[i]) << "argmax of output " << i;
        ASSERT_TRUE(gotY[i] == maxY[i] || (std::isnan(gotY[i]) && std::isnan(maxY[i]))) << "max of output " << i;
    }
    backend->maxPoolBackward(tdy, argmax, dx, g);
    const auto gotMaxDx = dx.toFloats();
    for (std::size_t i = 0; i < x.size(); ++i)
        ASSERT_NEAR(gotMaxDx[i], maxDx[i], 1e-6) << "max-pool dx " << i;

    for (float& v : x) // averages of NaN are NaN; check them on numbers
        v = std::isnan(v) ? 1.25f : v;
    tx = Tensor::fromFloats({n, c, pc.h, pc.w}, x);
    backend->avgPoolForward(tx, y, g);
    const auto gotAvg = y.toFloats();
    for (std::size_t i = 0; i < x.size() && i < avgY.size(); ++i) {
        if (std::isnan(avgY[i]))
            continue; // the reference averaged a NaN
        ASSERT_NEAR(gotAvg[i], avgY[i], 1e-6) << "average of output " << i;
    }
    backend->avgPoolBackward(tdy, dx, g);
    const auto gotAvgDx = dx.toFloats();
    for (std::size_t i = 0; i < x.size(); ++i)
        ASSERT_NEAR(gotAvgDx[i], avgDx[i], 1e-5) << "average-pool dx " << i;
}

INSTANTIATE_TEST_SUITE_P(Shapes, PoolAgainstNaive,
                         ::testing::Values(PoolCase{"k2s2", 28, 28, 2, 2, 0}, PoolCase{"k2s2OddWidth", 9, 23, 2, 2, 0},
                                           PoolCase{"k3s1p1", 11, 19, 3, 1, 1}, PoolCase{"k3s2p1", 13, 17, 3, 2, 1},
                                           PoolCase{"k2s3p1", 10, 20, 2, 3, 1}, PoolCase{"k4s4p2", 10, 10, 4, 4, 2},
                                           PoolCase{"k5s1p2", 7, 9, 5, 1, 2}, PoolCase{"k3s3", 31, 40, 3, 3, 0}),
                         [](const ::testing::TestParamInfo<PoolCase>& info) { return info.param.name; });

TEST(Pooling, MaxPoolTiesKeepTheFirstMaximumAndRouteTheWholeGradient)
{
    auto backend = makeCpuBackend(2);
    // Two 2x2 windows: the first all equal, the second tied between its last two.
    Tensor x = Tensor::fromFloats({1, 1, 2, 4}, {5, 5, 1, 2, 5, 5, 3, 3});
    const PoolGeometry g = poolGeometry(1, 1, 2, 4, 2, 2, 0);
    Tensor y = backend->empty({1, 1, 1, 2}, DType::F32), argmax = backend->empty({1, 1, 1, 2}, DType::F32);
    backend->maxPoolForward(x, y, argmax, g);
    EXPECT_EQ(y.toFloats(), (std::vector<float>{5, 3}));
    EXPECT_EQ(argmax.toFloats(), (std::vector<float>{0, 6})); // row-major first: (0,0) and (1,2)
    Tensor dy = Tensor::fromFloats({1, 1, 1, 2}, {1.5f, -2.0f});
    Tensor dx = backend->empty(x.shape(), DType::F32);
    backend->maxPoolBackward(dy, argmax, dx, g);
    EXPECT_EQ(dx.toFloats(), (std::vector<float>{1.5f, 0, 0, 0, 0, 0, -2.0f, 0}));
}

TEST(Pooling, MaxPoolPaddingNeverWinsAndOverlapsAccumulate)
{
    auto backend = makeCpuBackend(2);
    // All negative: a zero from the padding would win if padding were not -inf.
    Tensor x = Tensor::fromFloats({1, 1, 3, 3}, {-9, -8, -7, -6, -1, -5, -4, -3, -2});
    const PoolGeometry g = poolGeometry(1, 1, 3, 3, 3, 1, 1);
    Tensor y = backend->empty({1, 1, 3, 3}, DType::F32), argmax = backend->empty({1, 1, 3, 3}, DType::F32);
    backend->maxPoolForward(x, y, argmax, g);
    EXPECT_EQ(y.toFloats(), std::vector<float>(9, -1.0f));
    Tensor dy = Tensor::fromFloats({1, 1, 3, 3}, std::vector<float>(9, 1.0f));
    Tensor dx = backend->empty(x.shape(), DType::F32);
    backend->maxPoolBackward(dy, argmax, dx, g);
    EXPECT_EQ(dx.toFloats(), (std::vector<float>{0, 0, 0, 0, 9, 0, 0, 0, 0}));
}

TEST(Pooling, AvgPoolExcludesPadding)
{
    auto backend = makeCpuBackend(2);
    Tensor x = Tensor::fromFloats({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
    const PoolGeometry g = poolGeometry(1, 1, 3, 3, 3, 2, 1);
    Tensor y = backend->empty({1, 1, 2, 2}, DType::F32);
    backend->avgPoolForward(x, y, g);
    // Each corner window holds four real inputs: (1+2+4+5)/4 etc., not divided by 9.
    EXPECT_EQ(y.toFloats(), (std::vector<float>{3, 4, 6, 7}));
    Tensor dy = Tensor::fromFloats({1, 1, 2, 2}, {4, 8, 12, 16});
    Tensor dx = backend->empty(x.shape(), DType::F32);
    backend->avgPoolBackward(dy, dx, g);
    EXPECT_EQ(dx.toFloats(), (std::vector<float>{1, 3, 2, 4, 10, 6, 3, 7, 4}));
}

// Global average pooling (one window per plane, no padding) sums 16 planes at a time; each
// plane's sum must still be the row-major fp32 sum of its window, to the bit, for every storage
// type, a plane count that leaves a short last group, and a window that leaves rows and columns
// unread. The values span 2^-12 to 2^12, so a sum in any other order differs.
TEST(Pooling, GlobalAvgPoolIsTheRowMajorSumOfEachWindow)
{
    struct Case {
        std::int64_t n, c, size, kernel;
    };
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> exponent(-12, 12);
    int checked = 0;
    for (int threads : {1, 2})
        for (DType type : {DType::F32, DType::BF16, DType::F16})
            for (const Case& c : {Case{3, 13, 7, 7}, Case{2, 64, 14, 14}, Case{1, 5, 9, 6}}) {
                auto backend = makeCpuBackend(threads);
                const PoolGeometry g = poolGeometry(c.n, c.c, c.size, c.size, c.kernel, c.kernel, 0);
                ASSERT_EQ(g.outH * g.outW, 1);
                std::vector<float> values(static_cast<std::size_t>(c.n * c.c * c.size * c.size));
                for (float& v : values)
                    v = roundToDType(std::ldexp(normal(rng), exponent(rng)), type);
                Tensor x = Tensor::fromFloats({c.n, c.c, c.size, c.size}, values, type);
                Tensor y = backend->empty({c.n, c.c, 1, 1}, type);
                backend->avgPoolForward(x, y, g);
                const std::vector<float> got = y.toFloats();
                std::size_t differing = 0;
                for (std::int64_t p = 0; p < c.n * c.c; ++p) {
                    float sum = 0.0f;
                    for (std::int64_t h = 0; h < c.kernel; ++h)
                        for (std::int64_t w = 0; w < c.kernel; ++w)
                            sum += values[static_cast<std::size_t>((p * c.size + h) * c.size + w)];
                    const float want = roundToDType(sum / static_cast<float>(c.kernel * c.kernel), type);
                    differing += std::memcmp(&want, &got[static_cast<std::size_t>(p)], sizeof(float)) != 0;
                }
                EXPECT_EQ(differing, 0u) << dtypeName(type) << " " << c.n * c.c << " planes of " << c.size << "x"
                                         << c.size << ", window " << c.kernel << ", " << threads << " threads";
                ++checked;
            }
    EXPECT_EQ(checked, 18);
}

// --- dropout ------------------------------------------------------------------------------------------

std::vector<float> dropoutMask(Backend& backend, const Tensor& x, float p, std::uint64_t seed, std::uint64_t counter)
{
    Tensor y = backend.empty(x.shape(), DType::F32), mask = backend.empty(x.shape(), DType::F32);
    backend.dropoutForward(x, y, mask, p, seed, counter);
    return mask.toFloats();
}

TEST(Dropout, MaskRepeatsForASeedAndIsThreadIndependent)
{
    Tensor x = Tensor::fromFloats({1 << 17}, randomValues(1 << 17, 5));
    auto single = makeCpuBackend(1);
    const auto a = dropoutMask(*single, x, 0.3f, 42, 7);
    auto dual = makeCpuBackend(2);
    const auto b = dropoutMask(*dual, x, 0.3f, 42, 7);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, dropoutMask(*dual, x, 0.3f, 42, 8)) << "the counter must change the mask";
    EXPECT_NE(a, dropoutMask(*dual, x, 0.3f, 43, 7)) << "the seed must change the mask";
}

TEST(Dropout, InvertedScalingKeepsTheMean)
{
    auto backend = makeCpuBackend(2);
    const std::int64_t n = 1 << 18;
    for (float p : {0.1f, 0.5f, 0.8f}) {
        Tensor x = Tensor::fromFloats({n}, randomValues(n, 6));
        Tensor y = backend->empty(x.shape(), DType::F32), mask = backend->empty(x.shape(), DType::F32);
        backend->dropoutForward(x, y, mask, p, 1, 0);
        const auto m = mask.toFloats();
        const auto in = x.toFloats();
        const auto out = y.toFloats();
        double sum = 0;
        std::int64_t dropped = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            const auto at = static_cast<std::size_t>(i);
            ASSERT_TRUE(m[at] == 0.0f || m[at] == 1.0f / (1.0f - p)) << m[at];
            ASSERT_EQ(out[at], in[at] * m[at]);
            sum += m[at];
            dropped += m[at] == 0.0f;
        }
        // Binomial: the dropped fraction's standard deviation is sqrt(p(1-p)/n) < 0.001.
        EXPECT_NEAR(static_cast<double>(dropped) / static_cast<double>(n), p, 0.005) << "p = " << p;
        EXPECT_NEAR(sum / static_cast<double>(n), 1.0, 0.02) << "p = " << p;

        Tensor dy = Tensor::fromFloats({n}, randomValues(n, 7));
        Tensor dx = backend->empty(x.shape(), DType::F32);
        backend->dropoutBackward(dy, mask, dx);
        const auto g = dy.toFloats();
        const auto d = dx.toFloats();
        for (std::size_t i = 0; i < d.size(); i += 997)
            ASSERT_EQ(d[i], g[i] * m[i]);
    }
}

TEST(Dropout, RateZeroKeepsEverything)
{
    auto backend = makeCpuBackend(2);
    Tensor x = Tensor::fromFloats({1000}, randomValues(1000, 8));
    const auto m = dropoutMask(*backend, x, 0.0f, 3, 3);
    EXPECT_EQ(m, std::vector<float>(1000, 1.0f));
}

} // namespace
