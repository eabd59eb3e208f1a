// oneDNN 2.6's gemm:jit kernels (the matmul of CPUs without brgemm: AVX2-only ones) read a B
// of [k, n] rows a multiple of 2 KiB apart at half speed, so OneDnnMatmul copies such a B into
// rows 64 bytes longer first (onednn_matmul.cpp). Part of cpu_kernels_test, which CTest also
// runs with ONEDNN_MAX_CPU_ISA=AVX2: there the copy must be taken (and said in the kernels a
// run records), elsewhere not; either way the products are the exact sums where every sum is
// exact, and within fp32's order bound otherwise, through gemm and gemmRowBias alike.
#include "engine/backend/backend.h"
#include "engine/backend/cpu/onednn_runtime.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

struct Product {
    Transpose ta, tb;
    std::int64_t m, n, k;
};

// op(X) [rows, cols] stored as the product reads it: transposed means a [cols, rows] buffer.
std::vector<float> stored(const std::vector<float>& x, std::int64_t rows, std::int64_t cols, bool transposed)
{
    if (!transposed)
        return x;
    std::vector<float> out(x.size());
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c)
            out[static_cast<std::size_t>(c * rows + r)] = x[static_cast<std::size_t>(r * cols + c)];
    return out;
}

std::vector<float> values(std::size_t count, std::uint32_t seed, bool integers)
{
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> small(-8, 8);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> out(count);
    for (float& v : out)
        v = integers ? static_cast<float>(small(rng)) : normal(rng);
    return out;
}

// C = op(A) op(B) (+ bias) on the backend, checked against the sums in double: equal to the
// bit where `integers` makes every sum exact in fp32, else within k 2^-24 sum |ab|.
void check(Backend& backend, const Product& p, bool integers, bool withBias)
{
    SCOPED_TRACE(std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k) +
                 (p.ta == Transpose::Yes ? " A^T" : "") + (p.tb == Transpose::Yes ? " B^T" : "") +
                 (integers ? " integers" : " normal") + (withBias ? " bias" : ""));
    const std::vector<float> a = values(static_cast<std::size_t>(p.m * p.k), 1, integers);
    const std::vector<float> b = values(static_cast<std::size_t>(p.k * p.n), 2, integers);
    const std::vector<float> bias = values(static_cast<std::size_t>(p.n), 3, integers);
    const Tensor ta = Tensor::fromFloats({p.m * p.k}, stored(a, p.m, p.k, p.ta == Transpose::Yes), DType::F32);
    const Tensor tb = Tensor::fromFloats({p.k * p.n}, stored(b, p.k, p.n, p.tb == Transpose::Yes), DType::F32);
    const Tensor tbias = Tensor::fromFloats({p.n}, bias, DType::F32);
    Tensor c = backend.empty({p.m, p.n}, DType::F32);
    if (withBias)
        backend.gemmRowBias(p.ta, p.tb, p.m, p.n, p.k, ta, tb, tbias, c);
    else
        backend.gemm(p.ta, p.tb, p.m, p.n, p.k, 1.0f, ta, tb, 0.0f, c);
    const std::vector<float> got = c.toFloats();
    int wrong = 0;
    for (std::int64_t i = 0; i < p.m; ++i)
        for (std::int64_t j = 0; j < p.n; ++j) {
            double sum = withBias ? bias[static_cast<std::size_t>(j)] : 0.0, magnitude = std::abs(sum);
            for (std::int64_t kk = 0; kk < p.k; ++kk) {
                const double term = static_cast<double>(a[static_cast<std::size_t>(i * p.k + kk)]) *
                                    b[static_cast<std::size_t>(kk * p.n + j)];
                sum += term;
                magnitude += std::abs(term);
            }
            const float value = got[static_cast<std::size_t>(i * p.n + j)];
            const bool ok =
                integers ? std::bit_cast<std::uint32_t>(value) == std::bit_cast<std::uint32_t>(static_cast<float>(sum))
                         : std::abs(value - sum) <= (p.k + 1) * std::ldexp(1.0, -24) * magnitude;
            if (!ok && ++wrong <= 3)
                ADD_FAILURE() << "C[" << i << ", " << j << "] = " << value << ", the sum is " << sum;
        }
    EXPECT_EQ(wrong, 0);
}

} // namespace

TEST(MatmulRowPadding, RowsOfBThatAliasAreCopiedWhereGemmJitRunsAndTheProductsAreRight)
{
    auto backend = makeCpuBackend(2);
    // B's rows 4 KiB, 2 KiB and 8 KiB apart (copied on gemm:jit), 3 KiB apart (not), a B read
    // transposed (its rows are K-contiguous: never copied), and an A read transposed.
    const Product products[] = {
        {Transpose::No, Transpose::No, 128, 1024, 1024}, {Transpose::No, Transpose::No, 37, 512, 200},
        {Transpose::No, Transpose::No, 16, 2048, 64},    {Transpose::No, Transpose::No, 64, 768, 300},
        {Transpose::No, Transpose::Yes, 64, 1024, 256},  {Transpose::Yes, Transpose::No, 256, 1024, 128}};
    for (const Product& p : products)
        for (const bool integers : {true, false})
            for (const bool withBias : {false, true})
                check(*backend, p, integers, withBias);
    const std::string paths = backend->kernelPaths();
    const bool padded = paths.find("(B copied into padded rows)") != std::string::npos;
    if (paths.find("fp32 matmul: brg:") != std::string::npos && paths.find("gemm:jit") == std::string::npos) {
        EXPECT_FALSE(padded) << paths; // brgemm reads aliasing rows at full speed: nothing copied
    }
    if (cpu::oneDnnIsaName() == "avx2") {
        EXPECT_TRUE(padded) << paths;
    }
}
