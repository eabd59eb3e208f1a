// The CPU backend's transformer ops (backend.h) against plain loops in double: strided-batched
// GEMMs, the axis swap, the attention softmax with its causal mask and its backward, the
// embedding gather and scatter, the broadcast addition of positions, and the row norms.
#include "engine/backend/backend.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace mantissa {
namespace {

std::vector<float> randomValues(std::size_t n, unsigned seed)
{
    std::mt19937 generator(seed);
    std::normal_distribution<float> normal;
    std::vector<float> v(n);
    for (float& x : v)
        x = normal(generator);
    return v;
}

TEST(TransformerOps, StridedBatchedGemmIsOneGemmPerMatrix)
{
    auto backend = makeCpuBackend(2);
    const std::int64_t batch = 3, m = 4, n = 5, k = 6;
    const auto a = randomValues(batch * k * m, 1), b = randomValues(batch * n * k, 2);
    Tensor ta = Tensor::fromFloats({batch, k, m}, a), tb = Tensor::fromFloats({batch, n, k}, b);
    Tensor c = Tensor::zeros({batch, m, n});
    // C_i = 0.5 A_i^T B_i^T
    backend->gemmStridedBatched(Transpose::Yes, Transpose::Yes, m, n, k, 0.5f, ta, k * m, tb, n * k, 0.0f, c, m * n,
                                batch);
    const auto out = c.toFloats();
    for (std::int64_t i = 0; i < batch; ++i)
        for (std::int64_t r = 0; r < m; ++r)
            for (std::int64_t col = 0; col < n; ++col) {
                double sum = 0;
                for (std::int64_t j = 0; j < k; ++j)
                    sum += double(a[i * k * m + j * m + r]) * b[i * n * k + col * k + j];
                EXPECT_NEAR(out[i * m * n + r * n + col], 0.5 * sum, 1e-5);
            }
}

TEST(TransformerOps, SwapAxesExchangesTheMiddleAxes)
{
    auto backend = makeCpuBackend(1);
    const std::int64_t outer = 2, rows = 3, cols = 4, inner = 2;
    std::vector<float> x(outer * rows * cols * inner);
    for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = float(i);
    Tensor tx = Tensor::fromFloats({outer, rows, cols, inner}, x), ty = Tensor::zeros({outer, cols, rows, inner});
    backend->swapAxes(tx, ty, outer, rows, cols, inner);
    const auto y = ty.toFloats();
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < cols; ++c)
                for (std::int64_t i = 0; i < inner; ++i)
                    EXPECT_EQ(y[((o * cols + c) * rows + r) * inner + i], x[((o * rows + r) * cols + c) * inner + i]);
}

// 16-bit tensors are permuted word for word at attention's size (threads split the work):
// every bit pattern arrives unchanged, signalling NaNs and subnormals included.
TEST(TransformerOps, SwapAxesMovesSixteenBitWordsUnchanged)
{
    auto backend = makeCpuBackend(2);
    const std::int64_t outer = 32, rows = 128, cols = 4, inner = 32;
    for (DType type : {DType::BF16, DType::F16}) {
        Tensor tx = backend->empty({outer, rows, cols, inner}, type),
               ty = backend->empty({outer, cols, rows, inner}, type);
        std::uint16_t* words = tx.u16();
        for (std::int64_t i = 0; i < tx.numel(); ++i)
            words[i] = static_cast<std::uint16_t>(i * 40503u);
        backend->swapAxes(tx, ty, outer, rows, cols, inner);
        const std::uint16_t* out = ty.u16();
        std::int64_t wrong = 0;
        for (std::int64_t o = 0; o < outer; ++o)
            for (std::int64_t r = 0; r < rows; ++r)
                for (std::int64_t c = 0; c < cols; ++c)
                    for (std::int64_t i = 0; i < inner; ++i)
                        wrong += out[((o * cols + c) * rows + r) * inner + i] !=
                                 words[((o * rows + r) * cols + c) * inner + i];
        EXPECT_EQ(wrong, 0) << dtypeName(type);
    }
}

TEST(TransformerOps, CausalSoftmaxMasksLaterKeysAndSumsToOne)
{
    auto backend = makeCpuBackend(1);
    const std::int64_t t = 4;
    const auto s = randomValues(2 * t * t, 3);
    Tensor scores = Tensor::fromFloats({2, t, t}, s), probs = Tensor::zeros({2, t, t});
    backend->softmaxForward(scores, probs, t, t, true, DType::F32);
    const auto p = probs.toFloats();
    for (std::int64_t row = 0; row < 2 * t; ++row) {
        const std::int64_t q = row % t;
        double max = -1e30, sum = 0;
        for (std::int64_t j = 0; j <= q; ++j)
            max = std::max<double>(max, s[row * t + j]);
        for (std::int64_t j = 0; j <= q; ++j)
            sum += std::exp(s[row * t + j] - max);
        for (std::int64_t j = 0; j < t; ++j) {
            const double expected = j <= q ? std::exp(s[row * t + j] - max) / sum : 0.0;
            EXPECT_NEAR(p[row * t + j], expected, 1e-6) << row << "," << j;
        }
    }
}

// At a transformer's size (8 planes of 128 x 128 scores, past the point where the work is
// split over threads), forward and backward against the formulas in double.
TEST(TransformerOps, CausalSoftmaxAndItsBackwardAtAttentionSizeMatchDouble)
{
    auto backend = makeCpuBackend(2);
    const std::int64_t t = 128, planes = 8, n = planes * t * t;
    auto s = randomValues(n, 5);
    for (float& v : s)
        v *= 12.0f;
    const auto dp = randomValues(n, 6);
    Tensor scores = Tensor::fromFloats({planes, t, t}, s), probs = Tensor::zeros({planes, t, t});
    backend->softmaxForward(scores, probs, t, t, true, DType::F32);
    Tensor tdp = Tensor::fromFloats({planes, t, t}, dp), ds = Tensor::zeros({planes, t, t});
    backend->softmaxBackward(probs, tdp, ds, t);
    const auto p = probs.toFloats(), g = ds.toFloats();
    int reported = 0;
    for (std::int64_t row = 0; row < planes * t && reported < 5; ++row) {
        const std::int64_t visible = row % t + 1;
        const float* sr = s.data() + row * t;
        const double max = *std::max_element(sr, sr + visible);
        double sum = 0, dot = 0;
        for (std::int64_t j = 0; j < visible; ++j)
            sum += std::exp(sr[j] - max);
        for (std::int64_t j = 0; j < visible; ++j)
            dot += std::exp(sr[j] - max) / sum * dp[row * t + j];
        for (std::int64_t j = 0; j < t && reported < 5; ++j) {
            const double expected = j < visible ? std::exp(sr[j] - max) / sum : 0.0;
            const double expectedGrad = expected * (dp[row * t + j] - dot);
            // exp(s - max) in fp32 is relatively as exact as s - max is: |s - max| ulps of 1;
            // the row's dot product sums up to 128 fp32 terms.
            const double eps = std::numeric_limits<float>::epsilon();
            const double pTolerance = expected * eps * (std::abs(sr[j] - max) + 16);
            const double gradTolerance = pTolerance * (std::abs(dp[row * t + j]) + std::abs(dot)) + expected * 64 * eps;
            if (!(std::abs(p[row * t + j] - expected) <= pTolerance) ||
                !(std::abs(g[row * t + j] - expectedGrad) <= gradTolerance)) {
                ADD_FAILURE() << "row " << row << ", key " << j << ": p " << p[row * t + j] << " vs " << expected
                              << ", ds " << g[row * t + j] << " vs " << expectedGrad;
                ++reported;
            }
        }
    }
}

TEST(TransformerOps, SoftmaxInFp16TurnsAnInfiniteScoreIntoNaNAndFp32DoesNotOverflow)
{
    auto backend = makeCpuBackend(1);
    // 70000 is past fp16's largest value: stored in fp16 it is inf, and inf - inf is NaN.
    Tensor wide = Tensor::fromFloats({1, 1, 3}, {70000.0f, 69999.0f, 0.0f});
    Tensor narrow = Tensor::fromFloats({1, 1, 3}, {70000.0f, 69999.0f, 0.0f}, DType::F16);
    Tensor p32 = Tensor::zeros({1, 1, 3}, DType::F16), p16 = Tensor::zeros({1, 1, 3}, DType::F16);
    backend->softmaxForward(wide, p32, 1, 3, false, DType::F32);
    backend->softmaxForward(narrow, p16, 1, 3, false, DType::F16);
    const auto good = p32.toFloats(), bad = p16.toFloats();
    EXPECT_NEAR(good[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-3);
    EXPECT_EQ(good[2], 0.0f);
    EXPECT_TRUE(std::isnan(bad[0]) && std::isnan(bad[1]) && std::isnan(bad[2]));
}

TEST(TransformerOps, SoftmaxBackwardIsTheJacobianProduct)
{
    auto backend = makeCpuBackend(1);
    const std::vector<float> p{0.2f, 0.5f, 0.3f}, dp{1.0f, -2.0f, 0.5f};
    Tensor tp = Tensor::fromFloats({1, 3}, p), tdp = Tensor::fromFloats({1, 3}, dp), ds = Tensor::zeros({1, 3});
    backend->softmaxBackward(tp, tdp, ds, 3);
    const double dot = 0.2 * 1.0 + 0.5 * -2.0 + 0.3 * 0.5;
    const auto out = ds.toFloats();
    for (std::size_t j = 0; j < 3; ++j)
        EXPECT_NEAR(out[j], p[j] * (dp[j] - dot), 1e-7);
}

TEST(TransformerOps, EmbeddingGathersRowsAndScatterAddsRepeatedTokens)
{
    auto backend = makeCpuBackend(1);
    const std::vector<float> table{0, 1, 10, 11, 20, 21};
    Tensor t = Tensor::fromFloats({3, 2}, table), ids = Tensor::fromFloats({4}, {2, 0, 2, 1});
    Tensor y = Tensor::zeros({4, 2});
    backend->embeddingForward(ids, t, y);
    EXPECT_EQ(y.toFloats(), (std::vector<float>{20, 21, 0, 1, 20, 21, 10, 11}));
    Tensor dy = Tensor::fromFloats({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
    Tensor dt = Tensor::fromFloats({3, 2}, {100, 100, 100, 100, 100, 100});
    backend->embeddingBackward(ids, dy, dt, false);
    EXPECT_EQ(dt.toFloats(), (std::vector<float>{3, 4, 7, 8, 6, 8}));
    backend->embeddingBackward(ids, dy, dt, true); // a tied head's gradient is kept and added to
    EXPECT_EQ(dt.toFloats(), (std::vector<float>{6, 8, 14, 16, 12, 16}));
    Tensor one = Tensor::zeros({1, 2});
    Tensor fraction = Tensor::fromFloats({1}, {1.5f}), outside = Tensor::fromFloats({1}, {3.0f});
    EXPECT_THROW(backend->embeddingForward(fraction, t, one), DataError);
    EXPECT_THROW(backend->embeddingForward(outside, t, one), DataError);
}

TEST(TransformerOps, BroadcastAdditionUsesTheTablesFirstRowsAndSumsTheirGradient)
{
    auto backend = makeCpuBackend(1);
    Tensor x = Tensor::fromFloats({2, 2}, {1, 2, 3, 4}), table = Tensor::fromFloats({3}, {10, 20, 30});
    Tensor y = Tensor::zeros({2, 2});
    backend->addBroadcast(x, table, y, 2);
    EXPECT_EQ(y.toFloats(), (std::vector<float>{11, 22, 13, 24}));
    Tensor dt = Tensor::fromFloats({3}, {9, 9, 9});
    backend->addBroadcastBackward(x, dt, 2);
    EXPECT_EQ(dt.toFloats(), (std::vector<float>{4, 6, 0}));
}

TEST(TransformerOps, RowNormsMatchTheirDefinitions)
{
    auto backend = makeCpuBackend(1);
    const std::int64_t rows = 3, width = 5;
    const auto x = randomValues(rows * width, 4), gain = randomValues(width, 5), bias = randomValues(width, 6);
    Tensor tx = Tensor::fromFloats({rows, width}, x), tg = Tensor::fromFloats({width}, gain),
           tb = Tensor::fromFloats({width}, bias);
    for (RowNormKind kind : {RowNormKind::LayerNorm, RowNormKind::RmsNorm}) {
        Tensor y = Tensor::zeros({rows, width}), mean = Tensor::zeros({rows}), invStd = Tensor::zeros({rows});
        const bool layer = kind == RowNormKind::LayerNorm;
        backend->rowNormForward(kind, tx, tg, layer ? &tb : nullptr, y, mean, invStd, 1e-5f, DType::F32);
        const auto out = y.toFloats();
        for (std::int64_t r = 0; r < rows; ++r) {
            double mu = 0, second = 0;
            for (std::int64_t c = 0; c < width; ++c)
                mu += x[r * width + c] / double(width);
            if (!layer)
                mu = 0;
            for (std::int64_t c = 0; c < width; ++c)
                second += (x[r * width + c] - mu) * (x[r * width + c] - mu) / double(width);
            const double inv = 1.0 / std::sqrt(second + 1e-5);
            for (std::int64_t c = 0; c < width; ++c)
                EXPECT_NEAR(out[r * width + c], (x[r * width + c] - mu) * inv * gain[c] + (layer ? bias[c] : 0.0),
                            1e-5);
        }
    }
}

} // namespace
} // namespace mantissa
