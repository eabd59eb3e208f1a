#pragma once
// The epilogue of a GEMM or convolution whose operands are a recipe's FP8 elements
// (OperandScales, backend.h): the fp32 sums are multiplied by the product of the operands'
// decode scales, then the bias joins them, before the one rounding into the output's dtype
// (FloatOutput::commit). Done here rather than as oneDNN output scales because the scales
// change every step and a oneDNN primitive bakes its scales in (one per shape is cached).
#include <cstddef>
#include <cstdint>

namespace mantissa::cpu {

// c[i] *= scale for i < count.
void scaleOutput(float* c, std::size_t count, float scale);
// c[r, j] = scale * c[r, j] + bias[j] over rows of n (a linear layer's output).
void scaleRowsAddBias(float* c, std::int64_t rows, std::int64_t n, float scale, const float* bias);
// y[i, ch, p] = scale * y[i, ch, p] + bias[ch] over [images, channels, area] (NCHW); no bias
// when `bias` is null.
void scaleChannelsAddBias(float* y, std::int64_t images, std::int64_t channels, std::int64_t area, float scale,
                          const float* bias);
// c[i] = max(0, c[i]) for i < count, a NaN becoming 0 as activationForward's ReLU makes it: the
// ReLU that follows a product whose epilogue runs here (backend.h's gemmRowBias).
void reluInPlace(float* c, std::size_t count);

} // namespace mantissa::cpu
