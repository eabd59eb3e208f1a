// Convolutions through cuDNN (conv_plans.h). cuDNN convolves x, w and y of one data type
// with fp32 accumulation; a call whose tensors differ in type (an fp32 weight gradient from
// fp16 activations, say), or a type cuDNN lacks on this GPU, runs in fp32 on widened copies.
// Widening is exact and a product of two 16-bit values is exact in fp32, so the result is
// the tensor-core result rounded once to the output's type.
//
// Operand scales (a per-tensor FP8 recipe's elements, backend.h's OperandScales): the
// convolution runs unscaled into fp32, a kernel multiplies those sums once by fl(d_A x d_B),
// the bias joins after that, and the result is rounded once to the output's type, the order of
// the CPU backend (output_scale.h); a bias gradient is d_dy x the sum of dy's elements.
#include "engine/backend/cuda/cuda_backend.h"

#include "engine/backend/cuda/conv_plans.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/kernels.h"
#include "engine/util/check.h"

#include <string>

namespace mantissa::cuda {

namespace {

bool sameType(const Tensor& a, const Tensor& b, const Tensor& c)
{
    return a.dtype() == b.dtype() && b.dtype() == c.dtype();
}

} // namespace

// cuDNN reads NCHW or NHWC as it stands, with nothing to keep for the backward (ConvKeep). A
// ReLU after it runs as its own pass, with the bits of the fused one (backend.h).
void CudaBackend::conv2dForward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, const ConvGeometry& g,
                                OperandScales scales, ConvKeep*, bool relu)
{
    if (relu) {
        conv2dForward(x, w, bias, y, g, scales);
        activationForward(Activation::Relu, y, y);
        return;
    }
    if (!scales.unit()) {
        Tensor wide = empty(y.shape(), DType::F32);
        conv2dForward(x, w, nullptr, wide, g);
        launchScale(static_cast<float*>(wide.data()), wide.numel(), scales.product(), stream());
        checkLaunch("conv scale");
        if (bias) {
            launchAddChannelBias(wide.data(), DType::F32, bias->data(), bias->dtype(), g.n, g.outChannels,
                                 g.outH * g.outW, stream());
            checkLaunch("conv bias");
        }
        cast(wide, y);
        return;
    }
    if (bias && y.dtype() != DType::F32) {
        // The CPU adds the bias to the fp32 accumulator and rounds once. Rounding the sum of
        // products to 16 bits first and again after the bias loses up to half an ulp of the
        // larger of the two, which where they cancel is most of the result (parity test).
        Tensor wide = empty(y.shape(), DType::F32);
        conv2dForward(x, w, bias, wide, g);
        cast(wide, y);
        return;
    }
    const DType type = x.dtype();
    const ConvPlan* plan =
        sameType(x, w, y) && m_conv->native(type) ? m_conv->plan(g, type, ConvDirection::Forward) : nullptr;
    if (plan) {
        const float one = 1, zero = 0;
        Tensor workspace = empty(Shape{static_cast<std::int64_t>(plan->workspace[0])}, DType::F16);
        checkCudnn(cudnnConvolutionForward(m_cudnn, &one, plan->x, x.data(), plan->w, w.data(), plan->conv,
                                           static_cast<cudnnConvolutionFwdAlgo_t>(plan->algorithm[0]), workspace.data(),
                                           plan->workspace[0], &zero, plan->y, y.data()),
                   "cudnnConvolutionForward");
    } else if (type == DType::F32 && w.dtype() == DType::F32 && y.dtype() == DType::F32) {
        throw UnsupportedError("cuDNN has no fp32 convolution algorithm for this shape within the workspace limit");
    } else {
        Tensor xf = empty(x.shape(), DType::F32), wf = empty(w.shape(), DType::F32), yf = empty(y.shape(), DType::F32);
        cast(x, xf);
        cast(w, wf);
        conv2dForward(xf, wf, nullptr, yf, g);
        cast(yf, y);
    }
    if (bias) {
        launchAddChannelBias(y.data(), y.dtype(), bias->data(), bias->dtype(), g.n, g.outChannels, g.outH * g.outW,
                             stream());
        checkLaunch("conv bias");
    }
}

void CudaBackend::conv2dBackwardData(const Tensor& dy, const Tensor& w, Tensor& dx, const ConvGeometry& g,
                                     OperandScales scales)
{
    if (!scales.unit()) {
        Tensor wide = empty(dx.shape(), DType::F32);
        conv2dBackwardData(dy, w, wide, g);
        launchScale(static_cast<float*>(wide.data()), wide.numel(), scales.product(), stream());
        checkLaunch("conv scale");
        cast(wide, dx);
        return;
    }
    const DType type = dy.dtype();
    const ConvPlan* plan =
        sameType(dy, w, dx) && m_conv->native(type) ? m_conv->plan(g, type, ConvDirection::BackwardData) : nullptr;
    if (plan) {
        const float one = 1, zero = 0;
        Tensor workspace = empty(Shape{static_cast<std::int64_t>(plan->workspace[1])}, DType::F16);
        checkCudnn(cudnnConvolutionBackwardData(m_cudnn, &one, plan->w, w.data(), plan->y, dy.data(), plan->conv,
                                                static_cast<cudnnConvolutionBwdDataAlgo_t>(plan->algorithm[1]),
                                                workspace.data(), plan->workspace[1], &zero, plan->x, dx.data()),
                   "cudnnConvolutionBackwardData");
        return;
    }
    if (type == DType::F32 && w.dtype() == DType::F32 && dx.dtype() == DType::F32)
        throw UnsupportedError("cuDNN has no deterministic fp32 backward-data algorithm for this shape within the "
                               "workspace limit");
    Tensor dyf = empty(dy.shape(), DType::F32), wf = empty(w.shape(), DType::F32), dxf = empty(dx.shape(), DType::F32);
    cast(dy, dyf);
    cast(w, wf);
    conv2dBackwardData(dyf, wf, dxf, g);
    cast(dxf, dx);
}

void CudaBackend::conv2dBackwardFilter(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* dbias,
                                       const ConvGeometry& g, OperandScales scales, const ConvKeep*)
{
    if (!scales.unit()) { // scales.a is x's, scales.b dy's
        Tensor wide = empty(dw.shape(), DType::F32);
        conv2dBackwardFilter(x, dy, wide, nullptr, g);
        launchScale(static_cast<float*>(wide.data()), wide.numel(), scales.product(), stream());
        checkLaunch("conv scale");
        cast(wide, dw);
        if (dbias) {
            Tensor sums = empty(dbias->shape(), DType::F32);
            launchChannelBiasGrad(dy.data(), dy.dtype(), sums.data(), DType::F32, g.n, g.outChannels, g.outH * g.outW,
                                  stream());
            launchScale(static_cast<float*>(sums.data()), sums.numel(), scales.b, stream());
            checkLaunch("conv bias gradient");
            cast(sums, *dbias);
        }
        return;
    }
    const DType type = x.dtype();
    const ConvPlan* plan =
        sameType(x, dy, dw) && m_conv->native(type) ? m_conv->plan(g, type, ConvDirection::BackwardFilter) : nullptr;
    if (plan) {
        const float one = 1, zero = 0;
        Tensor workspace = empty(Shape{static_cast<std::int64_t>(plan->workspace[2])}, DType::F16);
        checkCudnn(cudnnConvolutionBackwardFilter(m_cudnn, &one, plan->x, x.data(), plan->y, dy.data(), plan->conv,
                                                  static_cast<cudnnConvolutionBwdFilterAlgo_t>(plan->algorithm[2]),
                                                  workspace.data(), plan->workspace[2], &zero, plan->w, dw.data()),
                   "cudnnConvolutionBackwardFilter");
    } else if (type == DType::F32 && dy.dtype() == DType::F32 && dw.dtype() == DType::F32) {
        throw UnsupportedError("cuDNN has no deterministic fp32 backward-filter algorithm for this shape within the "
                               "workspace limit");
    } else {
        Tensor xf = empty(x.shape(), DType::F32), dyf = empty(dy.shape(), DType::F32);
        Tensor dwf = empty(dw.shape(), DType::F32);
        cast(x, xf);
        cast(dy, dyf);
        conv2dBackwardFilter(xf, dyf, dwf, nullptr, g);
        cast(dwf, dw);
    }
    if (dbias) {
        launchChannelBiasGrad(dy.data(), dy.dtype(), dbias->data(), dbias->dtype(), g.n, g.outChannels, g.outH * g.outW,
                              stream());
        checkLaunch("conv bias gradient");
    }
}

} // namespace mantissa::cuda
