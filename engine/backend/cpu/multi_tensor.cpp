// Multi-tensor ops over all parameters: unscale-and-check, norms, optimizer updates.
// Updates run in fp32 arithmetic; state is rounded to its own dtype and weights to the master's,
// which is fp32 in mixed precision and 16-bit in the pure modes, where small updates vanish
// against the weight's precision (the failure mixed precision fixes) unless bf16 masters are
// stored stochastically or with Kahan compensation (update_rounding.h).
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/backend/cpu/sgd_half_update.h"
#include "engine/backend/update_rounding.h"
#include "engine/numerics/conversions.h"
#include "engine/util/check.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace mantissa {

namespace {

// Elements per block of the fused passes below: small enough that a block converted on the
// way in or out is still in L1/L2 when the arithmetic reaches it.
constexpr std::int64_t kStepBlock = 4096;

// The gradient an update reads, block by block: the fp32 one where it lies, or a slot's
// scaledGrad widened into this thread's `scratch` (one block) and unscaled there, the values
// unscaleAndCheckFinite would have stored. Unscaled in a loop of its own, so that the compiler
// cannot contract the multiplication into the update's arithmetic and change its rounding.
struct GradientSource {
    const OptimizerSlot& slot;
    float invScale;

    // The gradient's values [begin, end), from index 0.
    const float* block(std::int64_t begin, std::int64_t end, float* scratch) const
    {
        if (!slot.scaledGrad)
            return slot.grad->f32() + begin;
        const auto count = static_cast<std::size_t>(end - begin);
        widenToFloat(slot.scaledGrad->u16() + begin, slot.scaledGrad->dtype(), scratch, count);
        const float factor = invScale;
#pragma omp simd
        for (std::size_t i = 0; i < count; ++i)
            scratch[i] *= factor;
        return scratch;
    }
};

// Whether the slot's bf16 masters are stored by storeMasterBlock rather than rounded to nearest
// by FloatOutput::commit.
bool roundsOwnMaster(const OptimizerSlot& slot, const MasterStore& store)
{
    if (store.rounding == MasterRounding::Nearest)
        return false;
    MANTISSA_ASSERT(slot.master->dtype() == DType::BF16);
    MANTISSA_ASSERT(store.rounding != MasterRounding::Kahan ||
                    (slot.compensation && slot.compensation->dtype() == kCompensationDType &&
                     slot.compensation->numel() == slot.master->numel()));
    return true;
}

// Stores the block [begin, end) of `updated` (the step's fp32 results) into bf16 masters
// stochastically or with Kahan compensation. The master tensor still holds the weights the
// update started from: FloatOutput updates a widened copy of 16-bit tensors.
void storeMasterBlock(const OptimizerSlot& slot, const MasterStore& store, std::uint64_t step, const float* updated,
                      std::int64_t begin, std::int64_t end)
{
    using namespace update_rounding;
    std::uint16_t* w = slot.master->u16();
    if (store.rounding == MasterRounding::Stochastic) {
        const dropout::Key key = stepKey(store.seed, step, slot.index);
        for (std::int64_t i = begin; i < end; ++i)
            w[i] = bf16Stochastic(updated[i], randomBits(key, static_cast<std::uint32_t>(i)));
        return;
    }
    std::uint16_t* c = slot.compensation->u16();
    for (std::int64_t i = begin; i < end; ++i) {
        const KahanStore r = kahanStore(bf16Value(w[i]), updated[i], bf16Value(c[i]));
        w[i] = r.weight;
        c[i] = r.compensation;
    }
}

void checkGradient(const OptimizerSlot& slot)
{
    if (slot.scaledGrad)
        MANTISSA_ASSERT(slot.scaledGrad->dtype() != DType::F32 && slot.scaledGrad->numel() == slot.master->numel());
    else
        MANTISSA_ASSERT(slot.grad->dtype() == DType::F32);
}

} // namespace

int CpuBackend::unscaleAndFindNonFinite(std::span<const Tensor* const> grads, std::span<Tensor* const> fp32Grads,
                                        float invScale, float* absMax, double* squares)
{
    MANTISSA_ASSERT(grads.size() == fp32Grads.size());
    int firstNonFinite = -1;
    float amax = 0;
    double allSquares = 0;
    for (std::size_t t = 0; t < grads.size(); ++t) {
        const Tensor& in = *grads[t];
        // Null: no fp32 copy wanted (the optimizer unscales this one as it reads it).
        Tensor* out = fp32Grads[t];
        MANTISSA_ASSERT(out ? out->dtype() == DType::F32 && out->numel() == in.numel() : in.dtype() != DType::F32);
        float* g = out ? out->f32() : nullptr;
        const auto n = in.numel();
        float tensorMax = 0;
        // x * 0 is 0 for every finite x and NaN for inf or NaN, so one sum flags them all;
        // unlike a short-circuit test it vectorises. std::max(m, NaN) keeps m, so NaNs are
        // caught by the probe alone.
        float nonFiniteProbe = 0;
        // The squares for the norm cost nothing measurable beside the memory traffic, so they
        // are summed whether asked for or not (in double, as sumOfSquares does).
        double tensorSquares = 0;
        // One pass over memory: each block is widened into the output while it is still in
        // cache and scaled there, rather than a whole-tensor cast followed by a second pass.
        const std::int64_t blocks = (n + kStepBlock - 1) / kStepBlock;
#pragma omp parallel for schedule(static) reduction(+ : nonFiniteProbe, tensorSquares) reduction(max : tensorMax) \
    if (n > 65536)
        for (std::int64_t b = 0; b < blocks; ++b) {
            const std::int64_t begin = b * kStepBlock;
            const std::int64_t end = std::min(n, begin + kStepBlock);
            // The block's unscaled values go to the output, or, where none is wanted, to a
            // scratch block that is measured and dropped.
            float scratch[kStepBlock];
            float* dst = out ? g + begin : scratch;
            const float* src = in.dtype() == DType::F32 ? in.f32() + begin : dst;
            if (in.dtype() != DType::F32)
                widenToFloat(in.u16() + begin, in.dtype(), dst, static_cast<std::size_t>(end - begin));
            if (src == dst && invScale == 1.0f) { // already the unscaled values where they belong: only read them
#pragma omp simd reduction(+ : nonFiniteProbe, tensorSquares) reduction(max : tensorMax)
                for (std::int64_t i = 0; i < end - begin; ++i) {
                    nonFiniteProbe += dst[i] * 0.0f;
                    tensorMax = std::max(tensorMax, std::fabs(dst[i]));
                    tensorSquares += static_cast<double>(dst[i]) * dst[i];
                }
                continue;
            }
#pragma omp simd reduction(+ : nonFiniteProbe, tensorSquares) reduction(max : tensorMax)
            for (std::int64_t i = 0; i < end - begin; ++i) {
                const float v = src[i] * invScale;
                dst[i] = v;
                nonFiniteProbe += v * 0.0f;
                tensorMax = std::max(tensorMax, std::fabs(v));
                tensorSquares += static_cast<double>(v) * v;
            }
        }
        const bool finite = nonFiniteProbe == 0.0f;
        amax = std::max(amax, tensorMax);
        allSquares += tensorSquares;
        if (!finite && firstNonFinite < 0)
            firstNonFinite = static_cast<int>(t);
    }
    if (absMax)
        *absMax = firstNonFinite >= 0 ? INFINITY : amax;
    if (squares)
        *squares = allSquares;
    return firstNonFinite;
}

double CpuBackend::sumOfSquares(std::span<const Tensor* const> tensors)
{
    double total = 0;
    for (const Tensor* t : tensors) {
        cpu::FloatInput f(*t);
        const float* p = f.data();
        const auto n = static_cast<std::int64_t>(f.size());
        double sum = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : sum) if (n > 65536)
        for (std::int64_t i = 0; i < n; ++i)
            sum += static_cast<double>(p[i]) * p[i];
        total += sum;
    }
    return total;
}

void CpuBackend::scaleInPlace(std::span<Tensor* const> tensors, float factor)
{
    for (Tensor* t : tensors) {
        cpu::FloatOutput f(*t, true);
        float* p = f.data();
        const auto n = static_cast<std::int64_t>(f.size());
#pragma omp parallel for schedule(static) if (n > 65536)
        for (std::int64_t i = 0; i < n; ++i)
            p[i] *= factor;
        f.commit();
    }
}

void CpuBackend::sgdUpdate(std::span<const OptimizerSlot> slots, const SgdSettings& s, float lr, float invScale,
                           std::uint64_t step)
{
    for (const OptimizerSlot& slot : slots) {
        checkGradient(slot);
        const bool ownStore = roundsOwnMaster(slot, s.store);
        cpu::FloatOutput w(*slot.master, true);
        const GradientSource gradient{slot, invScale};
        const float decay = slot.decay ? s.weightDecay : 0.0f;
        const bool useMomentum = s.momentum != 0.0f;
        std::optional<cpu::FloatOutput> buf;
        if (useMomentum)
            buf.emplace(*slot.state1, true);
        float* pw = w.data();
        float* pb = useMomentum ? buf->data() : nullptr;
        const auto n = static_cast<std::int64_t>(w.size());
        // Settings copied to locals: writes through pw could otherwise alias them, which
        // stops the loop from vectorising.
        const float momentum = s.momentum;
        const bool nesterov = s.nesterov;
        const MasterStore store = s.store;
        // fp32 masters are updated in place, so each block's 16-bit working copy can be
        // written while the block is still in cache, instead of in a second pass.
        Tensor* refreshed = slot.working && slot.master->dtype() == DType::F32 && slot.working->dtype() != DType::F32
                                ? slot.working
                                : nullptr;
        // Mixed fp16's common case takes one fused pass where the CPU has AVX-512
        // (sgd_half_update.h); each block's remainder, and every other case, the loop below,
        // whose fmas are written out so that both give the same bits (as the CUDA kernel does).
        const bool fusedHalf = slot.scaledGrad && slot.scaledGrad->dtype() == DType::F16 &&
                               slot.master->dtype() == DType::F32 && (!refreshed || refreshed->dtype() == DType::F16);
        const std::int64_t blocks = (n + kStepBlock - 1) / kStepBlock;
#pragma omp parallel for schedule(static) if (n > 65536)
        for (std::int64_t b = 0; b < blocks; ++b) {
            const std::int64_t blockBegin = b * kStepBlock;
            const std::int64_t end = std::min(n, blockBegin + kStepBlock);
            std::int64_t begin = blockBegin;
            if (fusedHalf) {
                const cpu::SgdHalfLanes lanes{slot.scaledGrad->u16() + begin,
                                              invScale,
                                              pw + begin,
                                              pb ? pb + begin : nullptr,
                                              refreshed ? refreshed->u16() + begin : nullptr,
                                              decay,
                                              momentum,
                                              lr,
                                              nesterov};
                begin += static_cast<std::int64_t>(cpu::sgdHalfPrefix(lanes, static_cast<std::size_t>(end - begin)));
            }
            float scratch[kStepBlock];
            const float* g = gradient.block(begin, end, scratch);
#pragma omp simd
            for (std::int64_t i = begin; i < end; ++i) {
                float d = std::fma(decay, pw[i], g[i - begin]);
                if (useMomentum) {
                    pb[i] = std::fma(momentum, pb[i], d);
                    d = nesterov ? std::fma(momentum, pb[i], d) : pb[i];
                }
                pw[i] = std::fma(-lr, d, pw[i]);
            }
            if (refreshed && begin < end)
                narrowFromFloat(pw + begin, refreshed->u16() + begin, static_cast<std::size_t>(end - begin),
                                refreshed->dtype());
            if (ownStore) // bf16 masters, which the fused pass never takes: begin is the block's
                storeMasterBlock(slot, store, step, pw, blockBegin, end);
        }
        if (!ownStore)
            w.commit();
        if (buf)
            buf->commit();
        if (slot.working && !refreshed)
            cast(*slot.master, *slot.working);
    }
}

void CpuBackend::adamUpdate(std::span<const OptimizerSlot> slots, const AdamSettings& s, float lr, float correction1,
                            float correction2, float invScale, std::uint64_t step)
{
    for (const OptimizerSlot& slot : slots) {
        checkGradient(slot);
        const bool ownStore = roundsOwnMaster(slot, s.store);
        const GradientSource gradient{slot, invScale};
        cpu::FloatOutput w(*slot.master, true);
        cpu::FloatOutput m(*slot.state1, true);
        cpu::FloatOutput v(*slot.state2, true);
        const float decay = slot.decay ? s.weightDecay : 0.0f;
        float* pw = w.data();
        float* pm = m.data();
        float* pv = v.data();
        const auto n = static_cast<std::int64_t>(w.size());
        // Settings copied to locals: writes through pw, pm and pv could otherwise alias them,
        // which stops the loop from vectorising.
        const float beta1 = s.beta1, beta2 = s.beta2, epsilon = s.epsilon;
        const bool decoupledDecay = s.decoupledDecay;
        const MasterStore store = s.store;
        // As in sgdUpdate: each block's 16-bit working copy is written while the block is in cache.
        Tensor* refreshed = slot.working && slot.master->dtype() == DType::F32 && slot.working->dtype() != DType::F32
                                ? slot.working
                                : nullptr;
        const std::int64_t blocks = (n + kStepBlock - 1) / kStepBlock;
#pragma omp parallel for schedule(static) if (n > 65536)
        for (std::int64_t b = 0; b < blocks; ++b) {
            const std::int64_t begin = b * kStepBlock;
            const std::int64_t end = std::min(n, begin + kStepBlock);
            float scratch[kStepBlock];
            const float* g = gradient.block(begin, end, scratch);
#pragma omp simd
            for (std::int64_t i = begin; i < end; ++i) {
                // Selects, not branches, so that the loop vectorises; the values are the branches'.
                pw[i] = decoupledDecay ? pw[i] - lr * decay * pw[i] : pw[i];
                const float gi = decoupledDecay ? g[i - begin] : g[i - begin] + decay * pw[i];
                pm[i] = beta1 * pm[i] + (1.0f - beta1) * gi;
                pv[i] = beta2 * pv[i] + (1.0f - beta2) * gi * gi;
                const float mHat = pm[i] / correction1;
                const float vHat = pv[i] / correction2;
                pw[i] -= lr * mHat / (std::sqrt(vHat) + epsilon);
            }
            if (refreshed)
                narrowFromFloat(pw + begin, refreshed->u16() + begin, static_cast<std::size_t>(end - begin),
                                refreshed->dtype());
            if (ownStore)
                storeMasterBlock(slot, store, step, pw, begin, end);
        }
        if (!ownStore)
            w.commit();
        m.commit();
        v.commit();
        if (slot.working && !refreshed)
            cast(*slot.master, *slot.working);
    }
}

} // namespace mantissa
