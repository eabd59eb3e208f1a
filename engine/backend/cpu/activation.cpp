// Activations compute in fp32 and round to the output's dtype, as GPU kernels do.
// GELU is the exact erf form (PyTorch's default), not the tanh approximation.
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/util/check.h"

#include <cmath>

namespace mantissa {

namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

inline float forwardValue(Activation kind, float x)
{
    switch (kind) {
    case Activation::Relu: return x > 0 ? x : 0.0f;
    case Activation::Gelu: return 0.5f * x * (1.0f + std::erf(x * kInvSqrt2));
    case Activation::Tanh: return std::tanh(x);
    case Activation::Sigmoid: return 1.0f / (1.0f + std::exp(-x));
    }
    return x;
}

// Derivative from the input x and the (rounded) output y; tanh and sigmoid use y,
// as frameworks do, so backward sees the same stored activation.
inline float derivative(Activation kind, float x, float y)
{
    switch (kind) {
    case Activation::Relu: return x > 0 ? 1.0f : 0.0f;
    case Activation::Gelu:
        return 0.5f * (1.0f + std::erf(x * kInvSqrt2)) + x * kInvSqrt2Pi * std::exp(-0.5f * x * x);
    case Activation::Tanh: return 1.0f - y * y;
    case Activation::Sigmoid: return y * (1.0f - y);
    }
    return 1.0f;
}

} // namespace

void CpuBackend::activationForward(Activation kind, const Tensor& x, Tensor& y)
{
    MANTISSA_ASSERT(x.numel() == y.numel());
    cpu::FloatInput fx(x);
    cpu::FloatOutput fy(y);
    const float* in = fx.data();
    float* out = fy.data();
    const auto n = static_cast<std::int64_t>(fx.size());
#pragma omp parallel for schedule(static) if (n > 65536)
    for (std::int64_t i = 0; i < n; ++i)
        out[i] = forwardValue(kind, in[i]);
    fy.commit();
}

void CpuBackend::activationBackward(Activation kind, const Tensor& x, const Tensor& y, const Tensor& dy,
                                    Tensor& dx)
{
    MANTISSA_ASSERT(x.numel() == dy.numel() && dx.numel() == dy.numel());
    cpu::FloatInput fx(x);
    cpu::FloatInput fy(y);
    cpu::FloatInput fdy(dy);
    cpu::FloatOutput fdx(dx);
    const float* in = fx.data();
    const float* out = fy.data();
    const float* g = fdy.data();
    float* result = fdx.data();
    const auto n = static_cast<std::int64_t>(fdy.size());
#pragma omp parallel for schedule(static) if (n > 65536)
    for (std::int64_t i = 0; i < n; ++i)
        result[i] = g[i] * derivative(kind, in[i], out[i]);
    fdx.commit();
}

} // namespace mantissa
