// A ReLU fused into a matrix product's or a convolution's epilogue (gemmRowBias and
// conv2dForward with relu, oneDNN's post-op on the CPU) gives the bits of the product followed
// by activationForward's ReLU, on every path: fp32, bf16 native and emulated, fp16, with and
// without a recipe's operand scales, and where the sign of a zero could differ (outputs that
// round to -0 in fp16) or a NaN meets the ReLU.
#include "engine/backend/backend.h"
#include "engine/backend/backend_factory.h"
#include "engine/backend/cpu/cpu_kernel_plan.h"
#include "random_tensor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace mantissa {
namespace {

using test_support::randomValues;

std::vector<float> download(Backend& b, const Tensor& t)
{
    Tensor wide = b.empty(t.shape(), DType::F32);
    b.cast(t, wide);
    std::vector<float> out(static_cast<std::size_t>(t.numel()));
    b.download(wide, out.data());
    return out;
}

Tensor upload(Backend& b, const std::vector<float>& values, const Shape& shape, DType type)
{
    Tensor wide = b.empty(shape, DType::F32);
    b.upload(values.data(), wide);
    Tensor t = b.empty(shape, type);
    b.cast(wide, t);
    return t;
}

std::size_t differingBits(const std::vector<float>& a, const std::vector<float>& b)
{
    std::size_t differing = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        differing += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return differing;
}

// Operand values with a row of products far below fp16's smallest subnormal (their sums round
// to +0 or -0) and, where `nan`, one NaN.
std::vector<float> operand(std::size_t rows, std::size_t columns, std::uint32_t seed, bool nan)
{
    std::vector<float> v = randomValues(rows * columns, seed);
    for (std::size_t c = 0; c < columns; ++c)
        v[1 * columns + c] *= 1e-12f;
    if (nan)
        v[3 * columns + 2] = std::numeric_limits<float>::quiet_NaN();
    return v;
}

std::vector<CpuKernels> paths()
{
    std::vector<CpuKernels> kernels{CpuKernels::Emulated};
    if (cpu::planCpuKernels(CpuKernels::Auto).nativeBf16)
        kernels.push_back(CpuKernels::Native);
    return kernels;
}

TEST(ReluEpilogue, GemmRowBiasGivesTheBitsOfTheProductThenAReLU)
{
    const std::int64_t m = 37, n = 45, k = 64;
    int compared = 0;
    for (CpuKernels kernels : paths()) {
        auto b = makeCpuBackend(CpuOptions{2, kernels});
        for (DType type : {DType::F32, DType::BF16, DType::F16}) {
            for (OperandScales scales : {OperandScales{}, OperandScales{0.5f, 3.0f}}) {
                const Tensor a = upload(*b, operand(m, k, 1, true), {m, k}, type);
                const Tensor w = upload(*b, operand(n, k, 2, false), {n, k}, type);
                const Tensor bias = upload(*b, randomValues(n, 3, 0.1f), {n}, DType::F32);
                Tensor separate = b->empty({m, n}, type), fused = b->empty({m, n}, type);
                b->gemmRowBias(Transpose::No, Transpose::Yes, m, n, k, a, w, bias, separate, scales);
                b->activationForward(Activation::Relu, separate, separate);
                b->gemmRowBias(Transpose::No, Transpose::Yes, m, n, k, a, w, bias, fused, scales, true);
                const std::vector<float> expected = download(*b, separate), got = download(*b, fused);
                const std::string where = std::string(dtypeName(type)) + (scales.unit() ? "" : " scaled") +
                                          (kernels == CpuKernels::Native ? " native" : " emulated");
                EXPECT_EQ(differingBits(expected, got), 0u) << where;
                EXPECT_EQ(*std::min_element(got.begin(), got.end()), 0.0f) << where; // the ReLU ran
                ++compared;
            }
        }
    }
    EXPECT_EQ(compared, 6 * static_cast<int>(paths().size()));
}

TEST(ReluEpilogue, ConvolutionGivesTheBitsOfTheConvolutionThenAReLU)
{
    struct Case {
        ConvGeometry g;
        const char* name;
    };
    // A 3x3 convolution on oneDNN's blocked layouts, and a strided 1x1 one straight on NCHW.
    const std::vector<Case> cases{{{2, 32, 14, 14, 32, 3, 3, 1, 1, 1, 1, 14, 14}, "3x3"},
                                  {{2, 32, 14, 14, 16, 1, 1, 2, 2, 0, 0, 7, 7}, "1x1 stride 2"}};
    for (CpuKernels kernels : paths()) {
        auto b = makeCpuBackend(CpuOptions{2, kernels});
        for (DType type : {DType::F32, DType::BF16, DType::F16}) {
            for (OperandScales scales : {OperandScales{}, OperandScales{0.5f, 3.0f}}) {
                for (const Case& c : cases) {
                    const ConvGeometry& g = c.g;
                    const Shape xs{g.n, g.inChannels, g.inH, g.inW}, ws{g.outChannels, g.inChannels, g.kH, g.kW};
                    const Shape ys{g.n, g.outChannels, g.outH, g.outW};
                    const Tensor x = upload(*b, operand(g.n * g.inChannels, g.inH * g.inW, 4, true), xs, type);
                    const Tensor w = upload(*b, randomValues(ws.numel(), 5), ws, type);
                    const Tensor bias = upload(*b, randomValues(g.outChannels, 6, 0.1f), {g.outChannels}, DType::F32);
                    Tensor separate = b->empty(ys, type), fused = b->empty(ys, type);
                    b->conv2dForward(x, w, &bias, separate, g, scales);
                    b->activationForward(Activation::Relu, separate, separate);
                    b->conv2dForward(x, w, &bias, fused, g, scales, nullptr, true);
                    const std::string where = std::string(c.name) + " " + std::string(dtypeName(type)) +
                                              (scales.unit() ? "" : " scaled") +
                                              (kernels == CpuKernels::Native ? " native" : " emulated");
                    EXPECT_EQ(differingBits(download(*b, separate), download(*b, fused)), 0u) << where;
                }
            }
        }
    }
}

} // namespace
} // namespace mantissa
