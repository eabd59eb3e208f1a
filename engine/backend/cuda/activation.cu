// Activation forward and backward, one kernel per kind, with engine/backend/cpu/activation.cpp's
// formulas written in the same order: GELU is the exact erf form, tanh and sigmoid
// differentiate from the stored (rounded) output y, and ReLU backward selects dy rather than
// multiplying by a 0/1 derivative so an inf in dy does not become NaN where the unit is off.
// erff, tanhf and expf are CUDA's, within a couple of ulps of glibc's but not bit-identical,
// so GELU, tanh and sigmoid match the CPU to fp32 tolerance; ReLU matches exactly.
#include "engine/backend/cuda/device_numerics.cuh"
#include "engine/backend/cuda/kernels.h"

namespace mantissa::cuda {

namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

template <Activation Kind>
__device__ __forceinline__ float forwardValue(float x)
{
    if constexpr (Kind == Activation::Relu)
        return x > 0 ? x : 0.0f; // a NaN input gives 0, as on the CPU
    else if constexpr (Kind == Activation::Gelu)
        return 0.5f * x * (1.0f + erff(x * kInvSqrt2));
    else if constexpr (Kind == Activation::Tanh)
        return tanhf(x);
    else
        return 1.0f / (1.0f + expf(-x));
}

template <Activation Kind>
__device__ __forceinline__ float gradient(float x, float y, float dy)
{
    if constexpr (Kind == Activation::Relu)
        return x > 0 ? dy : 0.0f;
    else if constexpr (Kind == Activation::Gelu)
        return dy * (0.5f * (1.0f + erff(x * kInvSqrt2)) + x * kInvSqrt2Pi * expf(-0.5f * x * x));
    else if constexpr (Kind == Activation::Tanh)
        return dy * (1.0f - y * y);
    else
        return dy * (y * (1.0f - y));
}

// Which forward tensor a kind's derivative reads; the other one is never loaded.
template <Activation Kind>
constexpr bool kReadsInput = Kind == Activation::Relu || Kind == Activation::Gelu;

template <Activation Kind>
__global__ void forwardKernel(const void* x, DType xType, void* y, DType yType, std::int64_t n)
{
    for (std::int64_t i = firstIndex(); i < n; i += gridStride())
        storeAs(y, yType, i, forwardValue<Kind>(loadAs(x, xType, i)));
}

template <Activation Kind>
__global__ void backwardKernel(const void* x, DType xType, const void* y, DType yType, const void* dy, DType dyType,
                               void* dx, DType dxType, std::int64_t n)
{
    for (std::int64_t i = firstIndex(); i < n; i += gridStride()) {
        const float in = kReadsInput<Kind> ? loadAs(x, xType, i) : 0.0f;
        const float out = kReadsInput<Kind> ? 0.0f : loadAs(y, yType, i);
        storeAs(dx, dxType, i, gradient<Kind>(in, out, loadAs(dy, dyType, i)));
    }
}

template <Activation Kind>
void forward(const void* x, DType xType, void* y, DType yType, std::int64_t n, cudaStream_t stream)
{
    forwardKernel<Kind><<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(x, xType, y, yType, n);
}

template <Activation Kind>
void backward(const void* x, DType xType, const void* y, DType yType, const void* dy, DType dyType, void* dx,
              DType dxType, std::int64_t n, cudaStream_t stream)
{
    backwardKernel<Kind><<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(x, xType, y, yType, dy, dyType, dx, dxType, n);
}

} // namespace

void launchActivationForward(Activation kind, const void* x, DType xType, void* y, DType yType, std::int64_t n,
                             cudaStream_t stream)
{
    if (n <= 0)
        return;
    switch (kind) {
    case Activation::Relu: forward<Activation::Relu>(x, xType, y, yType, n, stream); break;
    case Activation::Gelu: forward<Activation::Gelu>(x, xType, y, yType, n, stream); break;
    case Activation::Tanh: forward<Activation::Tanh>(x, xType, y, yType, n, stream); break;
    case Activation::Sigmoid: forward<Activation::Sigmoid>(x, xType, y, yType, n, stream); break;
    }
}

void launchActivationBackward(Activation kind, const void* x, DType xType, const void* y, DType yType, const void* dy,
                              DType dyType, void* dx, DType dxType, std::int64_t n, cudaStream_t stream)
{
    if (n <= 0)
        return;
    switch (kind) {
    case Activation::Relu: backward<Activation::Relu>(x, xType, y, yType, dy, dyType, dx, dxType, n, stream); break;
    case Activation::Gelu: backward<Activation::Gelu>(x, xType, y, yType, dy, dyType, dx, dxType, n, stream); break;
    case Activation::Tanh: backward<Activation::Tanh>(x, xType, y, yType, dy, dyType, dx, dxType, n, stream); break;
    case Activation::Sigmoid:
        backward<Activation::Sigmoid>(x, xType, y, yType, dy, dyType, dx, dxType, n, stream);
        break;
    }
}

} // namespace mantissa::cuda
