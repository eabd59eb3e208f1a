#include "engine/data/augmentation.h"

#include "engine/data/permutation.h"
#include "engine/util/check.h"

#include <algorithm>

namespace mantissa {

namespace {

// Salt of the augmentation draws, so that they never share a stream with an epoch's order.
constexpr std::uint64_t kAugmentKey = 0x6175676du; // "augm"

} // namespace

Augmentation augmentationOf(const DataSpec& spec) { return {spec.augmentCrop, spec.augmentFlip}; }

void checkAugmentation(const Augmentation& augmentation, const Dataset& data)
{
    if (!augmentation.any())
        return;
    const std::string setting = augmentation.cropPadding > 0 ? "data.augment_crop" : "data.augment_flip";
    if (data.sampleShape.rank() != 3)
        throw ConfigError(setting + " augments images of [channels, height, width], but " + data.name +
                          " holds samples of " + data.sampleShape.toString());
    const auto& dims = data.sampleShape.dims();
    if (augmentation.cropPadding >= std::min(dims[1], dims[2]))
        throw ConfigError("data.augment_crop: a padding of " + std::to_string(augmentation.cropPadding) +
                          " pixels is not smaller than the images of " + data.sampleShape.toString());
}

void augmentSample(float* sample, const Shape& shape, const Augmentation& augmentation, std::uint64_t seed,
                   std::int64_t epoch, std::int64_t index, std::vector<float>& scratch)
{
    const auto& dims = shape.dims();
    MANTISSA_ASSERT(dims.size() == 3);
    const std::int64_t channels = dims[0], height = dims[1], width = dims[2];
    std::mt19937_64 engine =
        seededEngine({seed, static_cast<std::uint64_t>(epoch), static_cast<std::uint64_t>(index), kAugmentKey});
    const std::int64_t pad = augmentation.cropPadding;
    // The crop's corner in the padded image, from 0 to 2 pad on each axis; then the flip.
    const auto dy =
        static_cast<std::int64_t>(pad > 0 ? uniformBelow(engine, static_cast<std::uint64_t>(2 * pad + 1)) : pad);
    const auto dx =
        static_cast<std::int64_t>(pad > 0 ? uniformBelow(engine, static_cast<std::uint64_t>(2 * pad + 1)) : pad);
    const bool mirror = augmentation.flip && uniformBelow(engine, 2) == 1;
    if (dy == pad && dx == pad && !mirror)
        return;
    const std::int64_t plane = height * width;
    scratch.assign(sample, sample + channels * plane);
    for (std::int64_t c = 0; c < channels; ++c)
        for (std::int64_t y = 0; y < height; ++y) {
            const std::int64_t sy = y + dy - pad; // the source row, outside the image in the padding
            for (std::int64_t x = 0; x < width; ++x) {
                const std::int64_t cx = mirror ? width - 1 - x : x;
                const std::int64_t sx = cx + dx - pad;
                const bool inside = sy >= 0 && sy < height && sx >= 0 && sx < width;
                sample[c * plane + y * width + x] =
                    inside ? scratch[static_cast<std::size_t>(c * plane + sy * width + sx)] : 0.0f;
            }
        }
}

} // namespace mantissa
