#pragma once
// NCHW <-> nChw16c (oneDNN's aBcd16b: channels in blocks of 16, the 16 channels of a pixel
// adjacent) for the activations around a blocked convolution. oneDNN's own reorder moves a
// 128x32x28x28 bf16 tensor at about 24 GB/s on a 2-core Zen 5; these tiles of 16 pixels x 16
// channels, transposed in registers, run at the speed of the copy.
#include <cstddef>
#include <cstdint>

namespace mantissa::cpu {

// Whether the kernels here handle a tensor of `channels` (a multiple of 16).
inline bool channelBlocksApply(std::int64_t channels) { return channels > 0 && channels % 16 == 0; }

// `elementBytes` is 2 (bf16, fp16) or 4 (fp32); the values move bit for bit.
void toChannelBlocks(const void* nchw, void* blocked, std::int64_t n, std::int64_t channels, std::int64_t pixels,
                     std::size_t elementBytes);
void fromChannelBlocks(const void* blocked, void* nchw, std::int64_t n, std::int64_t channels, std::int64_t pixels,
                       std::size_t elementBytes);

} // namespace mantissa::cpu
