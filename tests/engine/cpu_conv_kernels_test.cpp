// The CPU backend's two paths for bf16 convolutions (training.cpu_kernels), as
// cpu_kernels_test.cpp holds them for matrix products: oneDNN's native bf16 convolution
// kernels against the emulated oracle (inputs widened exactly to fp32, convolved in fp32), per
// op (forward with bias, backward data, backward weights with dbias) and per training run of
// a convolutional network. Linked into cpu_kernels_test, so CTest runs it as the machine is and
// again with ONEDNN_MAX_CPU_ISA=AVX2; native cases skip, saying why, where there is no native bf16.
#include "engine/backend/backend.h"
#include "engine/backend/cpu/cpu_kernel_plan.h"
#include "engine/backend/cpu/onednn_conv.h"
#include "engine/numerics/conversions.h"
#include "engine/train/trainer.h"
#include "random_tensor.h"
#include "run_comparison.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

using namespace mantissa;

namespace {

bool nativeBf16Here() { return cpu::planCpuKernels(CpuKernels::Auto).nativeBf16; }

#define SKIP_WITHOUT_NATIVE_BF16()                                                                                     \
    if (!nativeBf16Here())                                                                                             \
    GTEST_SKIP() << "no native bf16 kernels here: " << cpu::planCpuKernels(CpuKernels::Auto).bf16Path

std::unique_ptr<Backend> backendWith(CpuKernels kernels) { return makeCpuBackend(CpuOptions{2, kernels}); }

using test_support::uploadRandom;

std::vector<float> download(Backend& b, const Tensor& t)
{
    std::vector<float> out(static_cast<std::size_t>(t.numel()));
    b.download(t, out.data());
    return out;
}

struct ConvKernelCase {
    std::string name;
    std::int64_t n, c, size, oc, k, stride, pad;
    bool bias;
    DType out;

    ConvGeometry geometry() const
    {
        ConvGeometry g;
        g.n = n, g.inChannels = c, g.inH = g.inW = size, g.outChannels = oc, g.kH = g.kW = k;
        g.strideH = g.strideW = stride, g.padH = g.padW = pad;
        g.outH = g.outW = slidingOutput(size, k, stride, pad);
        return g;
    }
};

void PrintTo(const ConvKernelCase& c, std::ostream* os) { *os << c.name; }

// The four results of one backend on the case's bf16 inputs (the same seeds on both paths).
struct ConvResults {
    std::vector<float> y, dx, dw, dbias;
    std::vector<float> x, w, dy; // the bf16 inputs as fp32, for the error scale
};

ConvResults runConv(Backend& b, const ConvKernelCase& c)
{
    const ConvGeometry g = c.geometry();
    const Shape xs{g.n, g.inChannels, g.inH, g.inW}, ws{g.outChannels, g.inChannels, g.kH, g.kW};
    const Shape ys{g.n, g.outChannels, g.outH, g.outW}, bs{g.outChannels};
    const Tensor x = uploadRandom(b, xs, DType::BF16, 1), w = uploadRandom(b, ws, DType::BF16, 2);
    const Tensor bias = uploadRandom(b, bs, DType::BF16, 3), dy = uploadRandom(b, ys, DType::BF16, 4);
    Tensor y = b.empty(ys, c.out), dx = b.empty(xs, c.out), dw = b.empty(ws, c.out), dbias = b.empty(bs, c.out);
    b.conv2dForward(x, w, c.bias ? &bias : nullptr, y, g);
    b.conv2dBackwardData(dy, w, dx, g);
    b.conv2dBackwardFilter(x, dy, dw, c.bias ? &dbias : nullptr, g);
    ConvResults r{download(b, y), download(b, dx), download(b, dw), {},
                  download(b, x), download(b, w),  download(b, dy)};
    if (c.bias)
        r.dbias = download(b, dbias);
    return r;
}

// Per result: the number of terms summed and the sum of their magnitudes, from the rounded
// inputs (the scale of fp32 accumulation error).
struct ErrorScale {
    std::vector<double> magnitude;
    std::vector<std::int64_t> terms;
    void resize(std::size_t n) { magnitude.assign(n, 0.0), terms.assign(n, 0); }
    void add(std::size_t i, double term) { magnitude[i] += std::fabs(term), ++terms[i]; }
};

struct ConvScales {
    ErrorScale y, dx, dw, dbias;
};

ConvScales errorScales(const ConvGeometry& g, const ConvResults& r)
{
    ConvScales s;
    s.y.resize(r.y.size()), s.dx.resize(r.dx.size()), s.dw.resize(r.dw.size());
    s.dbias.resize(static_cast<std::size_t>(g.outChannels));
    const auto at = [](std::int64_t a, std::int64_t b, std::int64_t bs, std::int64_t c, std::int64_t cs, std::int64_t d,
                       std::int64_t ds) { return static_cast<std::size_t>(((a * bs + b) * cs + c) * ds + d); };
    for (std::int64_t b = 0; b < g.n; ++b)
        for (std::int64_t o = 0; o < g.outChannels; ++o)
            for (std::int64_t oh = 0; oh < g.outH; ++oh)
                for (std::int64_t ow = 0; ow < g.outW; ++ow) {
                    const std::size_t yi = at(b, o, g.outChannels, oh, g.outH, ow, g.outW);
                    s.dbias.add(static_cast<std::size_t>(o), r.dy[yi]);
                    for (std::int64_t c = 0; c < g.inChannels; ++c)
                        for (std::int64_t kh = 0; kh < g.kH; ++kh)
                            for (std::int64_t kw = 0; kw < g.kW; ++kw) {
                                const std::int64_t ih = oh * g.strideH - g.padH + kh;
                                const std::int64_t iw = ow * g.strideW - g.padW + kw;
                                if (ih < 0 || ih >= g.inH || iw < 0 || iw >= g.inW)
                                    continue;
                                const std::size_t xi = at(b, c, g.inChannels, ih, g.inH, iw, g.inW);
                                const std::size_t wi = at(o, c, g.inChannels, kh, g.kH, kw, g.kW);
                                s.y.add(yi, double(r.x[xi]) * r.w[wi]);
                                s.dx.add(xi, double(r.dy[yi]) * r.w[wi]);
                                s.dw.add(wi, double(r.dy[yi]) * r.x[xi]);
                            }
                }
    return s;
}

// Both paths multiply exactly-representable bf16 values (their products are exact in fp32)
// and sum them in fp32; they differ only in the order of the additions (oneDNN's blocking and
// its per-thread partial sums, VDPBF16PS adding pairs). A sum of n terms in any order is
// within (n - 1) * 2^-24 * sum|terms| of the exact one (Higham, Accuracy and Stability of
// Numerical Algorithms, 3.1), so the two are within twice that; the bias (|bias| < 8 here)
// joins y's sum as one more term. A bf16 output is held to one bf16 unit in the last place
// on top: the two fp32 sums may straddle a rounding boundary.
void expectWithinAccumulationOrder(const std::vector<float>& got, const std::vector<float>& want,
                                   const ErrorScale& scale, double extra, DType out, const std::string& what)
{
    ASSERT_EQ(got.size(), want.size()) << what;
    ASSERT_EQ(got.size(), scale.terms.size()) << what;
    int reported = 0;
    for (std::size_t i = 0; i < got.size() && reported < 5; ++i) {
        double bound = 2.0 * double(scale.terms[i] + 1) * std::ldexp(1.0, -24) * (scale.magnitude[i] + extra);
        if (out == DType::BF16)
            bound += std::ldexp(std::fabs(double(want[i])), -7);
        bound += 1e-30; // VDPBF16PS flushes subnormal results to zero
        if (!(std::fabs(double(got[i]) - want[i]) <= bound)) {
            ADD_FAILURE() << what << "[" << i << "]: native " << got[i] << ", emulated " << want[i] << ", allowed "
                          << bound;
            ++reported;
        }
    }
}

class NativeBf16Conv : public ::testing::TestWithParam<ConvKernelCase> {};

TEST_P(NativeBf16Conv, MatchesTheEmulatedOracleWithinAccumulationOrder)
{
    SKIP_WITHOUT_NATIVE_BF16();
    const ConvKernelCase c = GetParam();
    auto native = backendWith(CpuKernels::Native);
    auto emulated = backendWith(CpuKernels::Emulated);
    const ConvResults got = runConv(*native, c);
    const ConvResults want = runConv(*emulated, c);
    const ConvScales scales = errorScales(c.geometry(), want);
    expectWithinAccumulationOrder(got.y, want.y, scales.y, c.bias ? 8.0 : 0.0, c.out, "y");
    expectWithinAccumulationOrder(got.dx, want.dx, scales.dx, 0.0, c.out, "dx");
    expectWithinAccumulationOrder(got.dw, want.dw, scales.dw, 0.0, c.out, "dw");
    if (c.bias)
        expectWithinAccumulationOrder(got.dbias, want.dbias, scales.dbias, 0.0, c.out, "dbias");
    // The native backend ran oneDNN's bf16 convolutions, the emulated one its fp32 ones.
    const std::string nativePaths = native->kernelPaths(), emulatedPaths = emulated->kernelPaths();
    for (const char* op : {"bf16 conv forward", "bf16 conv backward data", "bf16 conv backward weights"}) {
        EXPECT_NE(nativePaths.find(op), std::string::npos) << nativePaths;
        EXPECT_EQ(emulatedPaths.find(op), std::string::npos) << emulatedPaths;
    }
    EXPECT_NE(emulatedPaths.find("fp32 conv forward"), std::string::npos) << emulatedPaths;
}

INSTANTIATE_TEST_SUITE_P(Shapes, NativeBf16Conv,
                         ::testing::Values(
                             //             name               n   c  size oc  k  s  p  bias   out
                             ConvKernelCase{"firstLayer", 4, 1, 28, 32, 3, 1, 1, true, DType::F32},
                             ConvKernelCase{"same3x3", 8, 32, 14, 32, 3, 1, 1, false, DType::BF16},
                             ConvKernelCase{"widening", 8, 32, 14, 64, 3, 1, 1, true, DType::F32},
                             ConvKernelCase{"strided", 4, 32, 28, 64, 3, 2, 1, false, DType::BF16},
                             ConvKernelCase{"pointwiseS2", 4, 32, 28, 64, 1, 2, 0, false, DType::F32},
                             ConvKernelCase{"oddSizes", 3, 5, 9, 7, 5, 2, 2, true, DType::BF16},
                             // oneDNN's right padding below the left one, then negative: the last input columns unread.
                             ConvKernelCase{"rightPaddingBelowLeft", 2, 3, 11, 6, 3, 3, 1, true, DType::F32},
                             ConvKernelCase{"negativeRightPadding", 2, 3, 10, 6, 3, 3, 0, false, DType::BF16}),
                         [](const ::testing::TestParamInfo<ConvKernelCase>& info) { return info.param.name; });

// Products of bf16 values are exact in fp32, and sums of small multiples of 1/4 are exact in
// any order, so here every native result must be the oracle's to the bit.
TEST(NativeBf16Conv, ExactSumsAgreeToTheBit)
{
    SKIP_WITHOUT_NATIVE_BF16();
    const ConvKernelCase c{"exact", 4, 16, 12, 32, 3, 1, 1, true, DType::F32};
    const ConvGeometry g = c.geometry();
    const auto pattern = [](std::int64_t n, int period, float step) {
        std::vector<float> v(static_cast<std::size_t>(n));
        for (std::size_t i = 0; i < v.size(); ++i)
            v[i] = static_cast<float>(static_cast<int>(i % static_cast<std::size_t>(period)) - period / 2) * step;
        return v;
    };
    std::vector<std::vector<float>> results[2];
    int index = 0;
    for (CpuKernels kernels : {CpuKernels::Native, CpuKernels::Emulated}) {
        auto b = backendWith(kernels);
        const auto upload = [&](const Shape& shape, const std::vector<float>& values) {
            Tensor t = b->empty(shape, DType::BF16);
            b->upload(values.data(), t);
            return t;
        };
        const Shape xs{g.n, g.inChannels, g.inH, g.inW}, ws{g.outChannels, g.inChannels, g.kH, g.kW};
        const Shape ys{g.n, g.outChannels, g.outH, g.outW}, bs{g.outChannels};
        const Tensor x = upload(xs, pattern(xs.numel(), 7, 1.0f)), w = upload(ws, pattern(ws.numel(), 5, 0.5f));
        const Tensor bias = upload(bs, pattern(bs.numel(), 3, 1.0f)), dy = upload(ys, pattern(ys.numel(), 9, 0.25f));
        Tensor y = b->empty(ys, DType::F32), dx = b->empty(xs, DType::F32), dw = b->empty(ws, DType::F32);
        Tensor dbias = b->empty(bs, DType::F32);
        b->conv2dForward(x, w, &bias, y, g);
        b->conv2dBackwardData(dy, w, dx, g);
        b->conv2dBackwardFilter(x, dy, dw, &dbias, g);
        results[index++] = {download(*b, y), download(*b, dx), download(*b, dw), download(*b, dbias)};
    }
    EXPECT_EQ(results[0][0], results[1][0]) << "y";
    EXPECT_EQ(results[0][1], results[1][1]) << "dx";
    EXPECT_EQ(results[0][2], results[1][2]) << "dw";
    EXPECT_EQ(results[0][3], results[1][3]) << "dbias";
}

// A bf16 y or dx on the native path is rounded by oneDNN's kernel, so that the fp32 result never
// crosses memory (onednn_conv.h): that rounding must be ours, round to nearest even from the
// same fp32 sums, which the same case with an fp32 output gives (values near 1 here, far from
// the range below 2^-126 that the kernel flushes).
TEST(NativeBf16Conv, KernelRoundedOutputsAreTheFp32ResultsRoundedToNearestEven)
{
    SKIP_WITHOUT_NATIVE_BF16();
    auto native = backendWith(CpuKernels::Native);
    for (const char* name : {"same3x3", "strided", "oddSizes"}) {
        ConvKernelCase c{name, 8, 32, 14, 32, 3, 1, 1, false, DType::BF16};
        if (std::string(name) == "strided")
            c = {name, 4, 32, 28, 64, 3, 2, 1, true, DType::BF16};
        if (std::string(name) == "oddSizes")
            c = {name, 3, 5, 9, 7, 5, 2, 2, true, DType::BF16};
        const ConvResults rounded = runConv(*native, c);
        c.out = DType::F32;
        const ConvResults wide = runConv(*native, c);
        for (const auto& [got, fp32, what] :
             {std::tuple{&rounded.y, &wide.y, "y"}, std::tuple{&rounded.dx, &wide.dx, "dx"}}) {
            ASSERT_EQ(got->size(), fp32->size());
            std::size_t differing = 0;
            for (std::size_t i = 0; i < got->size(); ++i)
                differing += (*got)[i] != roundToDType((*fp32)[i], DType::BF16);
            EXPECT_EQ(differing, 0u) << name << " " << what << ": of " << got->size();
        }
    }
    EXPECT_NE(native->kernelPaths().find("bf16 conv forward"), std::string::npos) << native->kernelPaths();
}

// Where oneDNN has no bf16 convolution (ONEDNN_MAX_CPU_ISA=AVX2, an AVX2-only CPU), asking it
// for one is a typed error naming the op, its shape and type, and what avoids it; the backend
// never asks there (auto plans emulation), so this drives the oneDNN layer directly.
TEST(NativeBf16Conv, APrimitiveOneDnnCannotCreateIsAnUnsupportedError)
{
    cpu::OneDnnRuntime runtime;
    cpu::OneDnnConv conv(runtime);
    const ConvGeometry g = ConvKernelCase{"", 2, 8, 10, 16, 3, 1, 1, false, DType::F32}.geometry();
    std::vector<std::uint16_t> x(static_cast<std::size_t>(g.n * g.inChannels * g.inH * g.inW));
    std::vector<std::uint16_t> w(static_cast<std::size_t>(g.outChannels * g.inChannels * g.kH * g.kW));
    std::vector<float> y(static_cast<std::size_t>(g.n * g.outChannels * g.outH * g.outW));
    try {
        conv.forward({g, true, false}, x.data(), w.data(), nullptr, y.data());
    } catch (const UnsupportedError& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("bf16 convolution forward"), std::string::npos) << message;
        EXPECT_NE(message.find("x [2, 8, 10, 10], w [16, 8, 3, 3]"), std::string::npos) << message;
        EXPECT_NE(message.find("emulated"), std::string::npos) << message;
        RecordProperty("message", message);
        return;
    }
    GTEST_SKIP() << "oneDNN has bf16 convolutions here (" << cpu::oneDnnIsaName() << "): nothing to refuse";
}

// conv2dBackward computes both gradients from one dy (the CPU reorders dy once for both
// kernels); its dx, dw and dbias must be the bits of the two separate calls, on every path: native
// and emulated bf16, fp16, fp32, a 16-bit or fp32 dx, with and without operand scales, and on
// the shapes whose two kernels choose different layouts for dy (1x1 strided, few channels).
TEST(ConvBackward, BothGradientsAtOnceAreTheBitsOfTheSeparateCalls)
{
    const std::vector<ConvKernelCase> cases{{"same3x3", 4, 32, 14, 32, 3, 1, 1, false, DType::BF16},
                                            {"strided", 2, 32, 28, 64, 3, 2, 1, true, DType::BF16},
                                            {"pointwiseS2", 2, 32, 28, 64, 1, 2, 0, true, DType::F32},
                                            {"oddSizes", 3, 5, 9, 7, 5, 2, 2, true, DType::F32}};
    std::vector<CpuKernels> paths{CpuKernels::Emulated};
    if (nativeBf16Here())
        paths.push_back(CpuKernels::Native);
    int compared = 0;
    for (CpuKernels kernels : paths) {
        auto b = backendWith(kernels);
        for (DType type : {DType::BF16, DType::F16, DType::F32}) {
            for (const ConvKernelCase& c : cases) {
                for (const OperandScales& dataScales : {OperandScales{}, OperandScales{0.5f, 3.0f}}) {
                    const ConvGeometry g = c.geometry();
                    const Shape xs{g.n, g.inChannels, g.inH, g.inW}, ws{g.outChannels, g.inChannels, g.kH, g.kW};
                    const Shape ys{g.n, g.outChannels, g.outH, g.outW}, bs{g.outChannels};
                    const Tensor x = uploadRandom(*b, xs, type, 1), w = uploadRandom(*b, ws, type, 2);
                    const Tensor dy = uploadRandom(*b, ys, type, 4);
                    const DType out = type == DType::F32 ? DType::F32 : c.out;
                    const OperandScales filterScales = dataScales.unit() ? OperandScales{} : OperandScales{2.0f, 0.25f};
                    std::vector<std::vector<float>> results[2];
                    for (int together = 0; together < 2; ++together) {
                        Tensor dx = b->empty(xs, out), dw = b->empty(ws, out), dbias = b->empty(bs, out);
                        Tensor* db = c.bias ? &dbias : nullptr;
                        if (together)
                            b->conv2dBackward(x, dy, w, dw, db, dx, g, filterScales, dataScales);
                        else {
                            b->conv2dBackwardFilter(x, dy, dw, db, g, filterScales);
                            b->conv2dBackwardData(dy, w, dx, g, dataScales);
                        }
                        results[together] = {download(*b, dx), download(*b, dw),
                                             c.bias ? download(*b, dbias) : std::vector<float>{}};
                    }
                    const std::string where = c.name + " " + std::string(dtypeName(type)) +
                                              (dataScales.unit() ? "" : " scaled") +
                                              (kernels == CpuKernels::Native ? " native" : " emulated");
                    for (std::size_t r = 0; r < 3; ++r) {
                        const auto& separate = results[0][r];
                        const auto& together = results[1][r];
                        ASSERT_EQ(separate.size(), together.size()) << where;
                        std::size_t differing = 0;
                        for (std::size_t i = 0; i < separate.size(); ++i)
                            differing += std::memcmp(&separate[i], &together[i], sizeof(float)) != 0;
                        EXPECT_EQ(differing, 0u) << where << (r == 0 ? " dx" : r == 1 ? " dw" : " dbias");
                    }
                    ++compared;
                }
            }
        }
    }
    EXPECT_EQ(compared, 24 * static_cast<int>(paths.size()));
}

// What a training forward keeps (ConvKeep: x already in the kernel's blocked layout) stands in
// for reordering x again in the filter gradient: dw and dbias are the bits computed from x alone,
// in conv2dBackward and conv2dBackwardFilter, fp32 and bf16 on every path. A forward on a
// blocked kernel keeps something (else nothing would be tested), and the kept copy of one x is
// never used for another x of the same shape.
TEST(ConvBackward, WhatTheForwardKeptGivesTheBitsOfTheInputAlone)
{
    const ConvKernelCase c{"same3x3", 4, 32, 14, 32, 3, 1, 1, true, DType::BF16};
    std::vector<CpuKernels> paths{CpuKernels::Emulated};
    if (nativeBf16Here())
        paths.push_back(CpuKernels::Native);
    for (CpuKernels kernels : paths) {
        auto b = backendWith(kernels);
        for (DType type : {DType::BF16, DType::F32}) {
            const ConvGeometry g = c.geometry();
            const Shape xs{g.n, g.inChannels, g.inH, g.inW}, ws{g.outChannels, g.inChannels, g.kH, g.kW};
            const Shape ys{g.n, g.outChannels, g.outH, g.outW}, bs{g.outChannels};
            const Tensor x = uploadRandom(*b, xs, type, 1), w = uploadRandom(*b, ws, type, 2);
            const Tensor other = uploadRandom(*b, xs, type, 3), dy = uploadRandom(*b, ys, type, 4);
            const Tensor bias = uploadRandom(*b, bs, DType::F32, 5);
            const bool readsInPlace = type == DType::F32 || kernels == CpuKernels::Native;
            const std::string where = std::string(dtypeName(type)) + (readsInPlace ? " in place" : " widened");
            Tensor y = b->empty(ys, type);
            ConvKeep keep;
            b->conv2dForward(x, w, &bias, y, g, {}, &keep);
            // Only x's own words can be kept: a widened copy is gone when the forward returns.
            EXPECT_EQ(keep.state != nullptr, readsInPlace) << where;
            const auto gradients = [&](const Tensor& input, const ConvKeep* kept, bool together) {
                Tensor dx = b->empty(xs, type), dw = b->empty(ws, DType::F32), db = b->empty(bs, DType::F32);
                if (together)
                    b->conv2dBackward(input, dy, w, dw, &db, dx, g, {}, {}, kept);
                else
                    b->conv2dBackwardFilter(input, dy, dw, &db, g, {}, kept);
                return std::vector<std::vector<float>>{download(*b, dw), download(*b, db)};
            };
            for (bool together : {false, true}) {
                EXPECT_EQ(gradients(x, &keep, together), gradients(x, nullptr, together)) << where << together;
                const auto otherAlone = gradients(other, nullptr, together);
                EXPECT_EQ(gradients(other, &keep, together), otherAlone) << where << together;
                EXPECT_NE(otherAlone, gradients(x, nullptr, together)) << where;
            }
        }
    }
}

// A whole mixed-bf16 training of a convolutional network (conv, batch norm, a residual block,
// max pooling) on both paths: the same steps and loss curves that drift apart only as
// accumulation order allows (run_comparison.h). Two epochs: on an AMD EPYC (Zen 5) the runs
// are bit-identical for 21 steps and differ from step 22 on, so the second epoch exercises the
// bound; with AMX they differ from step 10.
TEST(NativeBf16Training, ConvolutionalRunFollowsTheEmulatedRunWithinTolerance)
{
    SKIP_WITHOUT_NATIVE_BF16();
    RunConfig config = test_support::smallConvConfig(PrecisionMode::MixedBf16);
    config.training.epochs = 2;
    test_support::expectNativeRunFollowsEmulated(config, "bf16 conv backward weights", 32,
                                                 test_support::kNativeConvLossDrift);
}

} // namespace
