#pragma once
// Image augmentation of training batches (data.augment_crop, data.augment_flip): a random crop
// of the image padded on every side, and a left-right mirror, drawn afresh for every sample in
// every epoch. Off by default. The draws depend only on (seed, epoch, sample index), so a run
// sees the same augmented batches for a seed, whatever the batch size of the loader's threads.
#include "engine/config/run_config.h"
#include "engine/data/dataset.h"

#include <cstdint>
#include <vector>

namespace mantissa {

struct Augmentation {
    std::int64_t cropPadding = 0; // pixels added on each side before a crop back to the size; 0: none
    bool flip = false;            // mirror left-right with probability 1/2
    bool any() const { return cropPadding > 0 || flip; }
};

Augmentation augmentationOf(const DataSpec& spec);

// ConfigError naming the setting when `data` is not images ([channels, height, width]) or the
// padding is not smaller than the images.
void checkAugmentation(const Augmentation& augmentation, const Dataset& data);

// Augments one sample [C, H, W] in place with the draws of (seed, epoch, index); `scratch` is
// the caller's, reused across samples. The padding is zeros: the training mean once normalised.
void augmentSample(float* sample, const Shape& shape, const Augmentation& augmentation, std::uint64_t seed,
                   std::int64_t epoch, std::int64_t index, std::vector<float>& scratch);

} // namespace mantissa
