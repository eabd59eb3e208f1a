// Activations compute in fp32 and round to the output's dtype, as GPU kernels do. GELU is
// the exact erf form (PyTorch's default), not the tanh approximation; it runs on oneDNN's
// vectorised eltwise kernel (onednn_gelu.h), the others on the loops below. tanh and
// sigmoid stay on libm: they are the underflow presets' activations (docs/underflow.md), whose
// measured fp16 outcomes depend on every rounded value, and no transformer uses them.
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_chunks.h"
#include "engine/backend/cpu/onednn_gelu.h"
#include "engine/backend/cpu/relu_words.h"
#include "engine/backend/cpu/row_chunks.h"
#include "engine/util/check.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace mantissa {

namespace {

// ReLU between tensors of one 16-bit type selects stored words (relu_words.h).
bool reluOnWords(std::initializer_list<const Tensor*> tensors)
{
    const DType type = (*tensors.begin())->dtype();
    return type != DType::F32 &&
           std::all_of(tensors.begin(), tensors.end(), [type](const Tensor* t) { return t->dtype() == type; });
}

inline float forwardValue(Activation kind, float x)
{
    switch (kind) {
    case Activation::Relu: return x > 0 ? x : 0.0f;
    case Activation::Tanh: return std::tanh(x);
    case Activation::Sigmoid: return 1.0f / (1.0f + std::exp(-x));
    case Activation::Gelu: break; // oneDNN's (CpuBackend::activationForward)
    }
    return x;
}

// Derivative from the input x and the (rounded) output y; tanh and sigmoid use y,
// as frameworks do, so backward sees the same stored activation.
inline float derivative(Activation kind, float x, float y)
{
    switch (kind) {
    case Activation::Relu: return x > 0 ? 1.0f : 0.0f;
    case Activation::Tanh: return 1.0f - y * y;
    case Activation::Sigmoid: return y * (1.0f - y);
    case Activation::Gelu: break; // oneDNN's (CpuBackend::activationBackward)
    }
    return 1.0f;
}

// dy * f'(x). ReLU selects dy rather than multiplying it by a 0/1 derivative, as PyTorch's
// threshold_backward does: the select vectorises, and an inf in dy stays inf where the unit
// is on instead of also becoming 0 * inf = NaN where it is off.
inline float gradient(Activation kind, float x, float y, float dy)
{
    if (kind == Activation::Relu)
        return x > 0 ? dy : 0.0f;
    return dy * derivative(kind, x, y);
}

// The kind is a template argument so that each loop is compiled for one activation: with the
// switch inside the loop, ReLU ran as a scalar loop whose branch on the sign of random data
// mispredicted half the time (about 10x slower than the vectorised select).
template <Activation Kind>
void forwardLoop(const Tensor& x, Tensor& y)
{
    cpu::forFloatChunks<1, 1>(static_cast<std::size_t>(x.numel()), {&x}, {&y}, [](auto in, auto out, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i)
            out[0][i] = forwardValue(Kind, in[0][i]);
    });
}

// ReLU's gradient needs only x, so y is not read (nor widened) for it.
template <Activation Kind>
void backwardLoop(const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx)
{
    const auto n = static_cast<std::size_t>(dy.numel());
    if constexpr (Kind == Activation::Relu) {
        cpu::forFloatChunks<2, 1>(n, {&x, &dy}, {&dx}, [](auto in, auto out, std::size_t count) {
            for (std::size_t i = 0; i < count; ++i)
                out[0][i] = gradient(Kind, in[0][i], 0.0f, in[1][i]);
        });
    } else {
        cpu::forFloatChunks<3, 1>(n, {&x, &y, &dy}, {&dx}, [](auto in, auto out, std::size_t count) {
            for (std::size_t i = 0; i < count; ++i)
                out[0][i] = gradient(Kind, in[0][i], in[1][i], in[2][i]);
        });
    }
}

// The non-native GELU (fp16, or bf16 where oneDNN has no vectorised bf16 kernel) runs oneDNN's
// fp32 kernel on blocks of 16K values widened in cache (row_chunks.h with rows of one value), a
// call per block on each thread of the team; GELU is element-wise, so the blocks do not change
// any value. Returns the block length, its primitives (and the shorter last block's) built.
std::int64_t prepareGeluBlocks(cpu::OneDnnGelu& gelu, std::int64_t n)
{
    constexpr std::int64_t kBlock = 16384;
    gelu.prepare(false, std::min(n, kBlock));
    if (n > kBlock && n % kBlock != 0)
        gelu.prepare(false, n % kBlock);
    return kBlock;
}

} // namespace

void CpuBackend::activationForward(Activation kind, const Tensor& x, Tensor& y)
{
    MANTISSA_ASSERT(x.numel() == y.numel());
    if (kind == Activation::Gelu) {
        const auto n = static_cast<std::int64_t>(x.numel());
        if (x.dtype() == DType::BF16 && y.dtype() == DType::BF16 && m_gelu->runsBf16()) {
            m_gelu->prepare(true, n);
            m_gelu->forward(true, n, x.data(), y.data());
            return;
        }
        const std::int64_t block = prepareGeluBlocks(*m_gelu, n);
        cpu::forRowBlocks<1, 1>(
            n, 1, block, {&x}, {&y}, true,
            [&](auto in, auto out, std::int64_t, std::int64_t count) { m_gelu->forward(false, count, in[0], out[0]); });
        return;
    }
    if (kind == Activation::Relu && reluOnWords({&x, &y})) {
        cpu::reluForwardWords(x.u16(), y.u16(), static_cast<std::size_t>(x.numel()), x.dtype());
        return;
    }
    switch (kind) {
    case Activation::Relu: forwardLoop<Activation::Relu>(x, y); break;
    case Activation::Gelu: break; // above
    case Activation::Tanh: forwardLoop<Activation::Tanh>(x, y); break;
    case Activation::Sigmoid: forwardLoop<Activation::Sigmoid>(x, y); break;
    }
}

void CpuBackend::activationBackward(Activation kind, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx)
{
    MANTISSA_ASSERT(x.numel() == dy.numel() && dx.numel() == dy.numel());
    if (kind == Activation::Gelu) {
        const auto n = static_cast<std::int64_t>(dy.numel());
        const auto bf16 = [](const Tensor& t) { return t.dtype() == DType::BF16; };
        if (bf16(x) && bf16(dy) && bf16(dx) && m_gelu->runsBf16()) {
            m_gelu->prepare(true, n);
            m_gelu->backward(true, n, x.data(), dy.data(), dx.data());
            return;
        }
        const std::int64_t block = prepareGeluBlocks(*m_gelu, n);
        cpu::forRowBlocks<2, 1>(n, 1, block, {&x, &dy}, {&dx}, true,
                                [&](auto in, auto out, std::int64_t, std::int64_t count) {
                                    m_gelu->backward(false, count, in[0], in[1], out[0]);
                                });
        return;
    }
    if (kind == Activation::Relu && reluOnWords({&x, &dy, &dx})) {
        cpu::reluBackwardWords(x.u16(), dy.u16(), dx.u16(), static_cast<std::size_t>(dx.numel()), dx.dtype());
        return;
    }
    switch (kind) {
    case Activation::Relu: backwardLoop<Activation::Relu>(x, y, dy, dx); break;
    case Activation::Gelu: break; // above
    case Activation::Tanh: backwardLoop<Activation::Tanh>(x, y, dy, dx); break;
    case Activation::Sigmoid: backwardLoop<Activation::Sigmoid>(x, y, dy, dx); break;
    }
}

} // namespace mantissa
