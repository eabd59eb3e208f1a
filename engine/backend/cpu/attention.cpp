// The ops attention is built from: strided-batched GEMMs (one batched oneDNN matmul, under
// gemm's rules: compute-type inputs, fp32 accumulation, one rounding into C's type), the axis
// swap that moves heads out of the token axis, and the softmax with its causal mask, in fp32
// (oneDNN's softmax) or, when a layer asks for it, rounded step by step to a 16-bit type
// (backend.h; the loop below, which rounds where a 16-bit softmax would).
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/backend/cpu/onednn_matmul.h"
#include "engine/backend/cpu/onednn_softmax.h"
#include "engine/backend/cpu/row_chunks.h"
#include "engine/numerics/conversions.h"
#include "engine/util/check.h"

#include <cmath>
#include <limits>
#include <optional>

namespace mantissa {

void CpuBackend::gemmStridedBatched(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
                                    float alpha, const Tensor& a, std::int64_t strideA, const Tensor& b,
                                    std::int64_t strideB, float beta, Tensor& c, std::int64_t strideC,
                                    std::int64_t batch)
{
    MANTISSA_ASSERT(cpu::sameOrWidened(a, b) && batch >= 1);
    MANTISSA_ASSERT(a.numel() >= (batch - 1) * strideA + m * k && b.numel() >= (batch - 1) * strideB + k * n);
    MANTISSA_ASSERT(c.numel() >= (batch - 1) * strideC + m * n);
    const bool native = a.dtype() == DType::BF16 && b.dtype() == DType::BF16 && m_plan.nativeBf16;
    const cpu::KernelInput fa(a, native);
    const cpu::KernelInput fb(b, native);
    cpu::KernelOutput fc(c, native, beta != 0.0f);
    cpu::MatmulShape shape{ta, tb, m, n, k, native, false, alpha, beta, batch, strideA, strideB, strideC};
    shape.bf16Output = fc.kernelRounds();
    m_matmul->run(shape, fa.data(), fb.data(), nullptr, fc.data());
    fc.commit();
}

namespace {

// A permutation moves values without arithmetic, so it moves the stored words themselves: no
// widening of 16-bit tensors and no rounding back.
template <typename Word>
void swapMiddleAxes(const Word* in, Word* out, std::int64_t outer, std::int64_t rows, std::int64_t cols,
                    std::int64_t inner)
{
#pragma omp parallel for collapse(2) schedule(static) if (outer * rows * cols * inner > 65536)
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < cols; ++c) {
                const Word* src = in + ((o * rows + r) * cols + c) * inner;
                Word* dst = out + ((o * cols + c) * rows + r) * inner;
                for (std::int64_t i = 0; i < inner; ++i)
                    dst[i] = src[i];
            }
}

} // namespace

void CpuBackend::swapAxes(const Tensor& x, Tensor& y, std::int64_t outer, std::int64_t rows, std::int64_t cols,
                          std::int64_t inner)
{
    MANTISSA_ASSERT(x.numel() == outer * rows * cols * inner && y.numel() == x.numel());
    if (x.dtype() == y.dtype() && x.dtype() != DType::F32) {
        swapMiddleAxes(x.u16(), y.u16(), outer, rows, cols, inner);
        return;
    }
    cpu::FloatInput fx(x);
    cpu::FloatOutput fy(y);
    swapMiddleAxes(fx.data(), fy.data(), outer, rows, cols, inner);
    fy.commit();
}

namespace {

// One row in 16-bit arithmetic: the max of the visible scores, exp of each difference, their
// sum, the quotients, each step rounded by `round` to the 16-bit type.
template <typename Round>
void softmaxRow(const float* s, float* p, std::int64_t visible, std::int64_t keys, Round round)
{
    float max = -std::numeric_limits<float>::infinity();
    for (std::int64_t j = 0; j < visible; ++j)
        max = std::max(max, s[j]);
    float sum = 0;
    for (std::int64_t j = 0; j < visible; ++j) {
        p[j] = round(std::exp(round(s[j] - max)));
        sum = round(sum + p[j]);
    }
    for (std::int64_t j = 0; j < visible; ++j)
        p[j] = round(p[j] / sum);
    for (std::int64_t j = visible; j < keys; ++j)
        p[j] = 0.0f;
}

// Rows per oneDNN softmax call: 16K floats (64 KiB an operand) stay in L2 and make each
// call's fixed cost small against its work.
constexpr std::size_t kSoftmaxBlockFloats = 16384;

// The primitives for whole blocks and for the shorter last one.
void prepareSoftmax(cpu::OneDnnSoftmax& softmax, std::int64_t rows, std::int64_t keys, std::int64_t blockRows)
{
    softmax.prepare(std::min(rows, blockRows), keys);
    if (rows > blockRows && rows % blockRows != 0)
        softmax.prepare(rows % blockRows, keys);
}

} // namespace

void CpuBackend::softmaxForward(const Tensor& scores, Tensor& probs, std::int64_t queries, std::int64_t keys,
                                bool causal, DType arithmetic)
{
    MANTISSA_ASSERT(scores.numel() == probs.numel() && scores.numel() % (queries * keys) == 0);
    MANTISSA_ASSERT(!causal || queries <= keys);
    const std::int64_t rows = scores.numel() / keys;
    // A causal query sees itself and the keys before it (keys - queries more when the keys are
    // longer, as with a cache; here they are equal).
    const auto visibleKeys = [&](std::int64_t row) { return causal ? (row % queries) + 1 + (keys - queries) : keys; };
    if (arithmetic == DType::F32) {
        const std::int64_t blockRows = cpu::rowsPerBlock(keys, kSoftmaxBlockFloats);
        prepareSoftmax(*m_softmax, rows, keys, blockRows);
        // Hidden keys become -inf, so oneDNN's softmax gives them exactly 0 and never reads them.
        cpu::forRowBlocks<1, 1>(rows, keys, blockRows, {&scores}, {&probs}, true,
                                [&](auto in, auto out, std::int64_t first, std::int64_t count) {
                                    for (std::int64_t i = 0; i < count; ++i) {
                                        const std::int64_t visible = visibleKeys(first + i);
                                        const float* src = in[0] + i * keys;
                                        float* dst = out[0] + i * keys;
                                        for (std::int64_t j = 0; j < visible; ++j)
                                            dst[j] = src[j];
                                        for (std::int64_t j = visible; j < keys; ++j)
                                            dst[j] = -std::numeric_limits<float>::infinity();
                                    }
                                    m_softmax->forward(count, keys, out[0]);
                                });
    } else {
        cpu::forRowBlocks<1, 1>(rows, keys, cpu::rowsPerBlock(keys), {&scores}, {&probs}, true,
                                [&](auto in, auto out, std::int64_t first, std::int64_t count) {
                                    for (std::int64_t i = 0; i < count; ++i)
                                        softmaxRow(in[0] + i * keys, out[0] + i * keys, visibleKeys(first + i), keys,
                                                   [arithmetic](float v) { return roundToDType(v, arithmetic); });
                                });
    }
}

void CpuBackend::softmaxBackward(const Tensor& probs, const Tensor& dprobs, Tensor& dscores, std::int64_t keys)
{
    MANTISSA_ASSERT(probs.numel() == dprobs.numel() && dscores.numel() == probs.numel() && probs.numel() % keys == 0);
    const std::int64_t rows = probs.numel() / keys;
    const std::int64_t blockRows = cpu::rowsPerBlock(keys, kSoftmaxBlockFloats);
    prepareSoftmax(*m_softmax, rows, keys, blockRows);
    cpu::forRowBlocks<2, 1>(rows, keys, blockRows, {&probs, &dprobs}, {&dscores}, true,
                            [&](auto in, auto out, std::int64_t, std::int64_t count) {
                                m_softmax->backward(count, keys, in[0], in[1], out[0]);
                            });
}

} // namespace mantissa
