#pragma once
// Plain descriptions of convolution and pooling windows, shared by layers and backends.
#include <cstdint>

namespace mantissa {

// NCHW convolution: x [n, inChannels, inH, inW], w [outChannels, inChannels, kH, kW],
// y [n, outChannels, outH, outW].
struct ConvGeometry {
    std::int64_t n = 0, inChannels = 0, inH = 0, inW = 0;
    std::int64_t outChannels = 0, kH = 0, kW = 0;
    std::int64_t strideH = 1, strideW = 1, padH = 0, padW = 0;
    std::int64_t outH = 0, outW = 0;
};

// NCHW pooling over kH x kW windows; padding counts as -inf for max and is excluded from averages.
struct PoolGeometry {
    std::int64_t n = 0, channels = 0, inH = 0, inW = 0;
    std::int64_t kH = 2, kW = 2, strideH = 2, strideW = 2, padH = 0, padW = 0;
    std::int64_t outH = 0, outW = 0;
};

// Output extent of a sliding window; <= 0 means the window does not fit.
constexpr std::int64_t slidingOutput(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad)
{
    return (in + 2 * pad - kernel) / stride + 1;
}

} // namespace mantissa
