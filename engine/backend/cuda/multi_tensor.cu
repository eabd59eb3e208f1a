// Multi-tensor ops over every parameter in one launch: unscale-and-check, sum of squares,
// scaling, and the SGD and Adam/AdamW steps. A 2-D grid: blockIdx.y picks a tensor, the x
// blocks grid-stride over its elements, so one launch serves tensors of any sizes.
//
// Matches cpu/multi_tensor.cpp element for element: arithmetic in fp32 with the products the
// CPU's build fuses written as fma (explicit_rounding.cuh); master and optimizer state are
// loaded, updated in fp32 and rounded once to their own dtype at the end (16-bit in the pure
// modes, or bf16 stored stochastically or with Kahan compensation: update_rounding.h), and the
// working copy is refreshed from the rounded master in the same pass. Adam's
// bias corrections are computed on the host (adamCorrections, backend.h), as the CPU's are.
//
// Scalars (the unscale factor, the learning rate, the corrections, the clip factor) arrive
// as ScalarArg (kernels.h): device addresses the kernel reads, since these kernels serve the
// step on the device only; the optimizer kernels also take the step's Skipped flag and
// return at once on a skipped step.
//
// Two results are accumulated with atomics: the first non-finite tensor and the absolute
// maximum are integer atomics and repeat exactly; the sum of squares adds per-block double
// partials in whatever order blocks finish, so its last bits can vary between runs (the CPU
// also accumulates in double, in yet another order; the difference is far below what a
// gradient-norm clip can see).
#include "engine/backend/cuda/block_reduce.cuh"
#include "engine/backend/cuda/device_numerics.cuh"
#include "engine/backend/cuda/explicit_rounding.cuh"
#include "engine/backend/cuda/kernels.h"
#include "engine/backend/cuda/scalar_args.cuh"
#include "engine/backend/update_rounding.h"

#include <math_constants.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

namespace mantissa::cuda {

namespace {

// --- element formulas (host-callable so a host test can hold them to the CPU) ----------------

struct SgdResult {
    float weight, buffer;
};

// d = g + decay * w; with momentum b = momentum * b + d and d = Nesterov ? d + momentum * b : b;
// w -= lr * d. `buffer` is ignored (and returned unchanged) without momentum.
__host__ __device__ inline SgdResult sgdUpdate(float weight, float grad, float buffer, float decay,
                                               const SgdSettings& s, float lr)
{
    float d = exact::fma(decay, weight, grad);
    if (s.momentum != 0.0f) {
        buffer = exact::fma(s.momentum, buffer, d);
        d = s.nesterov ? exact::fma(s.momentum, buffer, d) : buffer;
    }
    return {exact::fma(-lr, d, weight), buffer};
}

struct AdamResult {
    float weight, m, v;
};

// Adam with L2 decay folded into the gradient, or AdamW's decoupled decay applied to the
// weight first; correction1/2 are 1 - beta^step.
__host__ __device__ inline AdamResult adamUpdate(float weight, float grad, float m, float v, float decay,
                                                 const AdamSettings& s, float lr, float correction1, float correction2)
{
    if (s.decoupledDecay)
        weight = exact::fma(-exact::mul(lr, decay), weight, weight);
    else
        grad = exact::fma(decay, weight, grad);
    m = exact::fma(s.beta1, m, exact::mul(1.0f - s.beta1, grad));
    v = exact::fma(s.beta2, v, exact::mul(exact::mul(1.0f - s.beta2, grad), grad));
    const float mHat = exact::div(m, correction1);
    const float vHat = exact::div(v, correction2);
    weight = exact::sub(weight, exact::div(exact::mul(lr, mHat), exact::add(exact::sqrt(vHat), s.epsilon)));
    return {weight, m, v};
}

// --- launch shape ---------------------------------------------------------------------------------

constexpr int kThreads = kThreadsPerBlock;
constexpr int kMaxTensorsPerLaunch = 65535; // gridDim.y limit; the tensor loop covers the rest

// Every tensor gets as many x blocks as the largest needs; the extra blocks of small tensors
// exit at once, but not for free, so the x extent shrinks as tensors multiply (about 64k
// blocks in all, never fewer than 64 per tensor).
dim3 tensorGrid(int count, std::int64_t maxElements)
{
    const int y = std::min(count, kMaxTensorsPerLaunch);
    const unsigned cap = std::max(64u, 65536u / static_cast<unsigned>(y));
    return {std::min(blocksFor(maxElements, kThreads), cap), static_cast<unsigned>(y), 1};
}

// --- kernels ----------------------------------------------------------------------------------------

__global__ void initUnscaleResults(int* firstNonFinite, float* absMax, double* sumOfSquares)
{
    if (firstNonFinite)
        *firstNonFinite = INT_MAX;
    if (absMax)
        *absMax = 0.0f;
    if (sumOfSquares)
        *sumOfSquares = 0.0;
}

// A value's magnitude as an orderable bit pattern: for non-negative floats the unsigned bits
// order as the values do. A non-finite value counts as +inf, whose bits exceed every finite
// magnitude's, so one max both finds the largest magnitude and flags the tensor.
constexpr unsigned kInfinityBits = 0x7f800000u;

// With `sumOfSquares` (the fused norm), each thread also sums the squares of the values it
// wrote, as sumOfSquaresKernel would read them back (same grid, same order per thread): one
// pass over the gradients instead of two.
__global__ void unscaleKernel(const TensorRef* grads, const TensorRef* fp32Out, int count, ScalarArg invScaleArg,
                              int* firstNonFinite, float* absMax, double* sumOfSquares)
{
    __shared__ unsigned slots[kReduceSlots];
    __shared__ double squareSlots[kReduceSlots];
    const float invScale = valueOf(invScaleArg);
    for (int t = blockIdx.y; t < count; t += gridDim.y) {
        const TensorRef in = grads[t];
        const TensorRef out = fp32Out[t];
        unsigned largest = 0;
        double squares = 0;
        for (std::int64_t i = firstIndex(); i < in.n; i += gridStride()) {
            const float v = exact::mul(loadAs(in.data, in.dtype, i), invScale);
            storeAs(out.data, out.dtype, i, v);
            largest = max(largest, isfinite(v) ? __float_as_uint(fabsf(v)) : kInfinityBits);
            if (sumOfSquares) {
                const double stored = out.dtype == DType::F32 ? v : loadAs(out.data, out.dtype, i);
                squares = exact::fma(stored, stored, squares);
            }
        }
        largest = blockReduce(
            largest, [](unsigned a, unsigned b) { return max(a, b); }, slots);
        if (threadIdx.x == 0 && largest != 0) {
            if (largest == kInfinityBits && firstNonFinite)
                atomicMin(firstNonFinite, t);
            if (absMax)
                atomicMax(reinterpret_cast<unsigned*>(absMax), largest);
        }
        if (sumOfSquares) { // uniform across the grid: every thread reaches the barriers
            squares = blockReduce(
                squares, [](double a, double b) { return a + b; }, squareSlots);
            if (threadIdx.x == 0 && squares != 0.0)
                atomicAdd(sumOfSquares, squares);
        }
    }
}

__global__ void sumOfSquaresKernel(const TensorRef* tensors, int count, double* result, SkipFlag skip)
{
    __shared__ double slots[kReduceSlots];
    if (skipRequested(skip))
        return; // uniform across the block: no thread reaches the reduction's barriers
    for (int t = blockIdx.y; t < count; t += gridDim.y) {
        const TensorRef tensor = tensors[t];
        double sum = 0;
        for (std::int64_t i = firstIndex(); i < tensor.n; i += gridStride()) {
            const double v = loadAs(tensor.data, tensor.dtype, i);
            sum = exact::fma(v, v, sum);
        }
        sum = blockReduce(
            sum, [](double a, double b) { return a + b; }, slots);
        if (threadIdx.x == 0 && sum != 0.0)
            atomicAdd(result, sum);
    }
}

__global__ void scaleKernel(const TensorRef* tensors, int count, ScalarArg factorArg, SkipFlag skip)
{
    if (skipRequested(skip))
        return;
    const float factor = valueOf(factorArg);
    for (int t = blockIdx.y; t < count; t += gridDim.y) {
        const TensorRef tensor = tensors[t];
        for (std::int64_t i = firstIndex(); i < tensor.n; i += gridStride())
            storeAs(tensor.data, tensor.dtype, i, exact::mul(loadAs(tensor.data, tensor.dtype, i), factor));
    }
}

// SkipFlag gates the other way round from the optimizer kernels: this one acts only on a skipped step.
__global__ void copyIfSkippedKernel(const unsigned char* src, unsigned char* dst, std::int64_t bytes, SkipFlag skipped)
{
    if (!skipRequested(skipped))
        return;
    for (std::int64_t i = firstIndex(); i < bytes; i += gridStride())
        dst[i] = src[i];
}

// The training step stochastic rounding draws by (StepInput::RoundingStepLow/High); read only
// where it draws, as the CPU does.
__device__ __forceinline__ std::uint64_t stepOf(const RoundingStepArg& step, const MasterStore& store)
{
    if (store.rounding != MasterRounding::Stochastic)
        return 0;
    return (static_cast<std::uint64_t>(valueOf(step.high)) << kRoundingStepLowBits) +
           static_cast<std::uint64_t>(valueOf(step.low));
}

// Stores `updated`, the step's fp32 result from `weight`, into the master as the MasterStore
// says (update_rounding.h, the CPU's storeMasterBlock element for element). The refreshed
// working copy is the master as stored, rounded again to the working dtype: the CPU casts the
// committed master.
__device__ __forceinline__ void storeWeight(const SlotRef& slot, std::int64_t i, float weight, float updated,
                                            MasterRounding rounding, dropout::Key key)
{
    using namespace update_rounding;
    float stored;
    if (rounding == MasterRounding::Nearest) {
        storeAs(slot.master.data, slot.master.dtype, i, updated);
        stored = roundedTo(slot.master.dtype, updated);
    } else {
        auto* w = static_cast<std::uint16_t*>(slot.master.data);
        if (rounding == MasterRounding::Stochastic) {
            w[i] = bf16Stochastic(updated, randomBits(key, static_cast<std::uint32_t>(i)));
        } else {
            auto* c = static_cast<std::uint16_t*>(slot.compensation.data);
            const KahanStore r = kahanStore(weight, updated, bf16Value(c[i]));
            w[i] = r.weight;
            c[i] = r.compensation;
        }
        stored = bf16Value(w[i]);
    }
    if (slot.working.data)
        storeAs(slot.working.data, slot.working.dtype, i, stored);
}

__global__ void sgdKernel(const SlotRef* slots, int count, SgdSettings settings, ScalarArg lrArg,
                          RoundingStepArg stepArg, SkipFlag skip)
{
    if (skipRequested(skip))
        return;
    const float lr = valueOf(lrArg);
    const std::uint64_t step = stepOf(stepArg, settings.store);
    const bool useMomentum = settings.momentum != 0.0f;
    for (int t = blockIdx.y; t < count; t += gridDim.y) {
        const SlotRef slot = slots[t];
        const float decay = slot.decay ? settings.weightDecay : 0.0f;
        const dropout::Key key = update_rounding::stepKey(settings.store.seed, step, slot.index);
        for (std::int64_t i = firstIndex(); i < slot.master.n; i += gridStride()) {
            const float buffer = useMomentum ? loadAs(slot.state1.data, slot.state1.dtype, i) : 0.0f;
            const float weight = loadAs(slot.master.data, slot.master.dtype, i);
            const SgdResult r =
                sgdUpdate(weight, loadAs(slot.grad.data, slot.grad.dtype, i), buffer, decay, settings, lr);
            if (useMomentum)
                storeAs(slot.state1.data, slot.state1.dtype, i, r.buffer);
            storeWeight(slot, i, weight, r.weight, settings.store.rounding, key);
        }
    }
}

__global__ void adamKernel(const SlotRef* slots, int count, AdamSettings settings, ScalarArg lrArg,
                           ScalarArg correction1Arg, ScalarArg correction2Arg, RoundingStepArg stepArg, SkipFlag skip)
{
    if (skipRequested(skip))
        return;
    const float lr = valueOf(lrArg);
    const float correction1 = valueOf(correction1Arg);
    const float correction2 = valueOf(correction2Arg);
    const std::uint64_t step = stepOf(stepArg, settings.store);
    for (int t = blockIdx.y; t < count; t += gridDim.y) {
        const SlotRef slot = slots[t];
        const float decay = slot.decay ? settings.weightDecay : 0.0f;
        const dropout::Key key = update_rounding::stepKey(settings.store.seed, step, slot.index);
        for (std::int64_t i = firstIndex(); i < slot.master.n; i += gridStride()) {
            const float weight = loadAs(slot.master.data, slot.master.dtype, i);
            const AdamResult r = adamUpdate(
                weight, loadAs(slot.grad.data, slot.grad.dtype, i), loadAs(slot.state1.data, slot.state1.dtype, i),
                loadAs(slot.state2.data, slot.state2.dtype, i), decay, settings, lr, correction1, correction2);
            storeAs(slot.state1.data, slot.state1.dtype, i, r.m);
            storeAs(slot.state2.data, slot.state2.dtype, i, r.v);
            storeWeight(slot, i, weight, r.weight, settings.store.rounding, key);
        }
    }
}

// Descriptor bytes travel as a kernel argument, one chunk per launch: well inside the 4 KiB
// that every architecture accepts.
constexpr std::size_t kChunkBytes = 2048;

struct ByteChunk {
    unsigned char bytes[kChunkBytes];
};

__global__ void writeBytesKernel(unsigned char* dst, ByteChunk chunk, unsigned n)
{
    for (unsigned i = threadIdx.x; i < n; i += blockDim.x)
        dst[i] = chunk.bytes[i];
}

} // namespace

void launchUnscaleAndCheckFinite(const TensorRef* grads, const TensorRef* fp32Out, int count, std::int64_t maxElements,
                                 ScalarArg invScale, int* firstNonFinite, float* absMax, double* sumOfSquares,
                                 cudaStream_t stream)
{
    initUnscaleResults<<<1, 1, 0, stream>>>(firstNonFinite, absMax, sumOfSquares);
    if (count <= 0 || maxElements <= 0)
        return;
    unscaleKernel<<<tensorGrid(count, maxElements), kThreads, 0, stream>>>(grads, fp32Out, count, invScale,
                                                                           firstNonFinite, absMax, sumOfSquares);
}

void launchSumOfSquares(const TensorRef* tensors, int count, std::int64_t maxElements, double* result, SkipFlag skip,
                        cudaStream_t stream)
{
    cudaMemsetAsync(result, 0, sizeof(double), stream);
    if (count <= 0 || maxElements <= 0)
        return;
    sumOfSquaresKernel<<<tensorGrid(count, maxElements), kThreads, 0, stream>>>(tensors, count, result, skip);
}

void launchScaleInPlace(const TensorRef* tensors, int count, std::int64_t maxElements, ScalarArg factor, SkipFlag skip,
                        cudaStream_t stream)
{
    if (count <= 0 || maxElements <= 0)
        return;
    scaleKernel<<<tensorGrid(count, maxElements), kThreads, 0, stream>>>(tensors, count, factor, skip);
}

void launchCopyIfSkipped(const void* src, void* dst, std::int64_t bytes, SkipFlag skipped, cudaStream_t stream)
{
    if (bytes <= 0)
        return;
    copyIfSkippedKernel<<<tensorGrid(1, bytes), kThreads, 0, stream>>>(
        static_cast<const unsigned char*>(src), static_cast<unsigned char*>(dst), bytes, skipped);
}

void launchSgdStep(const SlotRef* slots, int count, std::int64_t maxElements, SgdSettings settings, ScalarArg lr,
                   RoundingStepArg step, SkipFlag skip, cudaStream_t stream)
{
    if (count <= 0 || maxElements <= 0)
        return;
    sgdKernel<<<tensorGrid(count, maxElements), kThreads, 0, stream>>>(slots, count, settings, lr, step, skip);
}

void launchAdamStep(const SlotRef* slots, int count, std::int64_t maxElements, AdamSettings settings, ScalarArg lr,
                    ScalarArg correction1, ScalarArg correction2, RoundingStepArg step, SkipFlag skip,
                    cudaStream_t stream)
{
    if (count <= 0 || maxElements <= 0)
        return;
    adamKernel<<<tensorGrid(count, maxElements), kThreads, 0, stream>>>(slots, count, settings, lr, correction1,
                                                                        correction2, step, skip);
}

void launchWriteBytes(void* dst, const void* src, std::size_t bytes, cudaStream_t stream)
{
    auto* out = static_cast<unsigned char*>(dst);
    const auto* in = static_cast<const unsigned char*>(src);
    for (std::size_t offset = 0; offset < bytes; offset += kChunkBytes) {
        const std::size_t n = std::min(kChunkBytes, bytes - offset);
        ByteChunk chunk;
        std::memcpy(chunk.bytes, in + offset, n);
        writeBytesKernel<<<1, kThreads, 0, stream>>>(out + offset, chunk, static_cast<unsigned>(n));
    }
}

} // namespace mantissa::cuda
