// 2-D convolution (NCHW) on oneDNN's convolution primitives (onednn_conv.h), with the
// backend's GEMM semantics: inputs are already in the compute type, products accumulate in
// fp32, each output (y, dx, dw, dbias) is produced in fp32 and rounded once into its own dtype
// by FloatOutput::commit, our rounding, as the matrix products are (gemm.cpp), except a native
// bf16 y or dx, which the kernel rounds the same way (onednn_conv.h). bf16 inputs go
// to oneDNN as they are where the plan says native; otherwise, and for fp16, they are widened
// exactly to fp32 first (the emulated path, the oracle).
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/backend/cpu/onednn_conv.h"
#include "engine/backend/cpu/output_scale.h"
#include "engine/util/check.h"

#include <optional>

namespace mantissa {

namespace {

void checkShapes(const Tensor& x, const Tensor& w, const Tensor& y, const ConvGeometry& g)
{
    MANTISSA_ASSERT(x.numel() == g.n * g.inChannels * g.inH * g.inW);
    MANTISSA_ASSERT(g.groups > 0 && g.inChannels % g.groups == 0 && g.outChannels % g.groups == 0);
    MANTISSA_ASSERT(w.numel() == g.weightCount());
    MANTISSA_ASSERT(y.numel() == g.n * g.outChannels * g.outH * g.outW);
    MANTISSA_ASSERT(g.outH == slidingOutput(g.inH, g.kH, g.strideH, g.padH, g.dilationH) &&
                    g.outW == slidingOutput(g.inW, g.kW, g.strideW, g.padW, g.dilationW) && g.outH > 0 && g.outW > 0);
}

// Whether a product of a and b runs on oneDNN's native bf16 kernels: both bf16, and the plan
// says this CPU has them.
bool nativeBf16(const Tensor& a, const Tensor& b, const cpu::CpuKernelPlan& plan)
{
    return a.dtype() == DType::BF16 && b.dtype() == DType::BF16 && plan.nativeBf16;
}

// Whether the native kernel writes `out` itself, rounded to bf16 (onednn_conv.h): no operand
// scales to apply first, and a bf16 output.
bool kernelRoundsInto(bool native, OperandScales scales, const Tensor& out)
{
    return native && scales.unit() && out.dtype() == DType::BF16;
}

// Scales the fp32 filter gradients a kernel summed, then rounds each once into its dtype.
void finishFilterGradients(cpu::FloatOutput& fdw, std::optional<cpu::FloatOutput>& fdb, OperandScales scales)
{
    if (!scales.unit()) {
        cpu::scaleOutput(fdw.data(), fdw.size(), scales.product());
        if (fdb) // the bias gradient sums dy's elements alone
            cpu::scaleOutput(fdb->data(), fdb->size(), scales.b);
    }
    fdw.commit();
    if (fdb)
        fdb->commit();
}

void finishDataGradient(cpu::FloatOutput& fdx, OperandScales scales)
{
    if (!scales.unit())
        cpu::scaleOutput(fdx.data(), fdx.size(), scales.product());
    fdx.commit();
}

// Where the kernel reads x's own words (fp32, or bf16 run natively; not a widened copy, which
// is gone when the forward returns), the slot for what the kernel keeps of x (ConvKeep).
std::shared_ptr<const cpu::KeptConvInput>* keptSlot(ConvKeep* keep, const cpu::KernelInput& fx, const Tensor& x,
                                                    std::shared_ptr<const cpu::KeptConvInput>& slot)
{
    return keep && fx.data() == x.data() ? &slot : nullptr;
}

// What a forward kept of x, where it was made from x's own words.
const cpu::KeptConvInput* keptInput(const ConvKeep* kept, const cpu::KernelInput& fx, const Tensor& x)
{
    if (!kept || !kept->state || fx.data() != x.data())
        return nullptr;
    return static_cast<const cpu::KeptConvInput*>(kept->state.get());
}

} // namespace

// What the kernel kept of x lives until the backward like a saved activation, so it counts
// among the live bytes.
void CpuBackend::keepConvInput(ConvKeep* keep, std::shared_ptr<const cpu::KeptConvInput> kept)
{
    if (!keep || !kept)
        return;
    countLive(*kept->storage);
    keep->state = std::move(kept);
}

void CpuBackend::conv2dForward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, const ConvGeometry& g,
                               OperandScales scales, ConvKeep* keep, bool relu)
{
    checkShapes(x, w, y, g);
    MANTISSA_ASSERT(cpu::sameOrWidened(x, w));
    MANTISSA_ASSERT(!bias || bias->numel() == g.outChannels);
    const bool native = nativeBf16(x, w, m_plan);
    const cpu::KernelInput fx(x, native), fw(w, native);
    std::optional<cpu::FloatInput> fb;
    if (bias)
        fb.emplace(*bias);
    std::shared_ptr<const cpu::KeptConvInput> kept;
    auto* slot = keptSlot(keep, fx, x, kept);
    if (kernelRoundsInto(native, scales, y)) {
        m_conv->forward({g, true, bias != nullptr, true, relu}, fx.data(), fw.data(), fb ? fb->data() : nullptr,
                        y.data(), slot);
        keepConvInput(keep, std::move(kept));
        return;
    }
    cpu::FloatOutput fy(y);
    // The bias joins the fp32 sum inside the kernel, before the one rounding in commit()
    // (backend.h), as cuDNN's fused bias does; with operand scales the sum is scaled first and
    // the bias joins it afterwards (output_scale.h).
    if (scales.unit())
        m_conv->forward({g, native, bias != nullptr, false, relu}, fx.data(), fw.data(), fb ? fb->data() : nullptr,
                        fy.data(), slot);
    else {
        m_conv->forward({g, native, false}, fx.data(), fw.data(), nullptr, fy.data(), slot);
        cpu::scaleChannelsAddBias(fy.data(), g.n, g.outChannels, g.outH * g.outW, scales.product(),
                                  fb ? fb->data() : nullptr);
        if (relu)
            cpu::reluInPlace(fy.data(), fy.size());
    }
    fy.commit();
    keepConvInput(keep, std::move(kept));
}

void CpuBackend::conv2dBackwardData(const Tensor& dy, const Tensor& w, Tensor& dx, const ConvGeometry& g,
                                    OperandScales scales)
{
    checkShapes(dx, w, dy, g);
    MANTISSA_ASSERT(cpu::sameOrWidened(dy, w));
    const bool native = nativeBf16(dy, w, m_plan);
    const cpu::KernelInput fdy(dy, native), fw(w, native);
    if (kernelRoundsInto(native, scales, dx)) {
        m_conv->backwardData({g, true, false, true}, fdy.data(), fw.data(), dx.data());
        return;
    }
    cpu::FloatOutput fdx(dx);
    m_conv->backwardData({g, native, false}, fdy.data(), fw.data(), fdx.data());
    finishDataGradient(fdx, scales);
}

void CpuBackend::conv2dBackwardFilter(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* dbias,
                                      const ConvGeometry& g, OperandScales scales, const ConvKeep* kept)
{
    checkShapes(x, dw, dy, g);
    MANTISSA_ASSERT(cpu::sameOrWidened(x, dy));
    MANTISSA_ASSERT(!dbias || dbias->numel() == g.outChannels);
    const bool native = nativeBf16(x, dy, m_plan);
    const cpu::KernelInput fx(x, native), fdy(dy, native);
    // dw sums over every image and position in fp32 inside the kernel and is rounded once here.
    cpu::FloatOutput fdw(dw);
    std::optional<cpu::FloatOutput> fdb;
    if (dbias)
        fdb.emplace(*dbias);
    m_conv->backwardWeights({g, native, dbias != nullptr}, fx.data(), fdy.data(), fdw.data(),
                            fdb ? fdb->data() : nullptr, keptInput(kept, fx, x));
    finishFilterGradients(fdw, fdb, scales);
}

void CpuBackend::conv2dBackward(const Tensor& x, const Tensor& dy, const Tensor& w, Tensor& dw, Tensor* dbias,
                                Tensor& dx, const ConvGeometry& g, OperandScales filterScales, OperandScales dataScales,
                                const ConvKeep* kept)
{
    checkShapes(x, dw, dy, g);
    checkShapes(dx, w, dy, g);
    MANTISSA_ASSERT(cpu::sameOrWidened(x, dy) && cpu::sameOrWidened(dy, w));
    MANTISSA_ASSERT(!dbias || dbias->numel() == g.outChannels);
    const bool nativeFilter = nativeBf16(x, dy, m_plan), nativeData = nativeBf16(dy, w, m_plan);
    if (nativeFilter != nativeData) { // the two kernels read dy differently: nothing to share
        Backend::conv2dBackward(x, dy, w, dw, dbias, dx, g, filterScales, dataScales, kept);
        return;
    }
    const bool native = nativeFilter;
    const cpu::KernelInput fx(x, native), fdy(dy, native), fw(w, native);
    cpu::FloatOutput fdw(dw);
    std::optional<cpu::FloatOutput> fdb;
    if (dbias)
        fdb.emplace(*dbias);
    const bool kernelRoundsDx = kernelRoundsInto(native, dataScales, dx);
    std::optional<cpu::FloatOutput> fdx;
    if (!kernelRoundsDx)
        fdx.emplace(dx);
    m_conv->backward({g, native, dbias != nullptr}, {g, native, false, kernelRoundsDx}, fx.data(), fdy.data(),
                     fw.data(), fdw.data(), fdb ? fdb->data() : nullptr, fdx ? fdx->data() : dx.data(),
                     keptInput(kept, fx, x));
    finishFilterGradients(fdw, fdb, filterScales);
    if (fdx)
        finishDataGradient(*fdx, dataScales);
}

} // namespace mantissa
