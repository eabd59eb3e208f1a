#pragma once
// Plain descriptions of convolution and pooling windows, shared by layers and backends.
#include "engine/util/host_device.h"

#include <cstdint>

namespace mantissa {

// Output extent of a sliding window whose taps lie `dilation` apart; <= 0 means the window does
// not fit.
constexpr std::int64_t slidingOutput(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                                     std::int64_t dilation = 1)
{
    return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

// NCHW convolution: x [n, inChannels, inH, inW], w [outChannels, inChannels / groups, kH, kW],
// y [n, outChannels, outH, outW]. With `groups` > 1 the channels split into that many groups,
// each output channel reading only its group's inputs (groups == inChannels: depthwise); a
// dilation spaces the kernel's taps that many pixels apart (1: adjacent).
struct ConvGeometry {
    std::int64_t n = 0, inChannels = 0, inH = 0, inW = 0;
    std::int64_t outChannels = 0, kH = 0, kW = 0;
    std::int64_t strideH = 1, strideW = 1, padH = 0, padW = 0;
    std::int64_t outH = 0, outW = 0;
    std::int64_t groups = 1, dilationH = 1, dilationW = 1;

    // The input channels each filter reads: the weight's second extent.
    constexpr std::int64_t channelsPerGroup() const { return inChannels / groups; }
    constexpr std::int64_t weightCount() const { return outChannels * channelsPerGroup() * kH * kW; }
    // Whether the groups split both channel counts and the output extents are the sliding
    // window's over the input (a convolution, and the one a transposed convolution transposes).
    constexpr bool consistent() const
    {
        return groups > 0 && inChannels % groups == 0 && outChannels % groups == 0 && outH > 0 && outW > 0 &&
               outH == slidingOutput(inH, kH, strideH, padH, dilationH) &&
               outW == slidingOutput(inW, kW, strideW, padW, dilationW);
    }
    // The multiply-adds of one sample's forward (padding included, as an im2col GEMM computes
    // it): every output value a dot product of channelsPerGroup() x kH x kW. A transposed
    // convolution, this convolution's data gradient, has the same count.
    constexpr std::int64_t multiplyAdds() const { return outChannels * outH * outW * channelsPerGroup() * kH * kW; }
    constexpr bool plain() const { return groups == 1 && dilationH == 1 && dilationW == 1; }
};

// NCHW pooling over kH x kW windows; padding counts as -inf for max. An average divides by the
// inputs inside the image, or with `countPadding` by the whole window, the padding's zeros
// included (ONNX's and PyTorch's count_include_pad). padH and padW pad before the first row and
// column; the padding after is what the outH x outW windows reach: as much again for a layer
// list's pools, more or less where ONNX pads one side more than the other.
struct PoolGeometry {
    std::int64_t n = 0, channels = 0, inH = 0, inW = 0;
    std::int64_t kH = 2, kW = 2, strideH = 2, strideW = 2, padH = 0, padW = 0;
    std::int64_t outH = 0, outW = 0;
    bool countPadding = false;

    // Whether there is a window and each holds at least one input of the image: the first ends
    // after the padding before the image, the last starts before the image's end.
    constexpr MANTISSA_HD bool windowsHoldInputs() const
    {
        return outH > 0 && outW > 0 && padH >= 0 && padW >= 0 && padH < kH && padW < kW &&
               (outH - 1) * strideH - padH < inH && (outW - 1) * strideW - padW < inW;
    }
    // Whether there is one window, [0, kH) x [0, kW), inside the image (global pooling).
    constexpr MANTISSA_HD bool oneWindowInside() const
    {
        return outH == 1 && outW == 1 && padH == 0 && padW == 0 && kH <= inH && kW <= inW;
    }

    // The divisor of a window holding `inside` inputs of the image (the CUDA kernels' too).
    constexpr MANTISSA_HD std::int64_t averageDivisor(std::int64_t inside) const
    {
        return countPadding ? kH * kW : inside;
    }
};

} // namespace mantissa
