// Image augmentation of training batches (engine/data/augmentation.h) and the seeded validation
// split: off by default; the same seed gives the same batches and a different seed different
// ones; every augmented image is its original shifted within the padding and maybe mirrored.
#include "engine/data/augmentation.h"
#include "engine/data/batch_loader.h"
#include "engine/data/dataset.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace mantissa;

namespace {

// `count` images [2, 5, 6] of distinct values: sample i, channel c, pixel p holds 1 + i + c/10 + p/1000.
Dataset images(std::int64_t count)
{
    Dataset d;
    d.name = "images/train";
    d.sampleShape = Shape{2, 5, 6};
    d.classes = 2;
    for (std::int64_t i = 0; i < count; ++i) {
        for (std::int64_t v = 0; v < d.sampleSize(); ++v)
            d.inputs.push_back(1.0f + static_cast<float>(i) + static_cast<float>(v / 30) * 0.1f +
                               static_cast<float>(v % 30) * 0.001f);
        d.labels.push_back(static_cast<float>(i % 2));
    }
    return d;
}

std::vector<std::vector<float>> epochBatches(const Dataset& data, std::uint64_t seed, Augmentation augmentation,
                                             std::int64_t epoch = 1)
{
    BatchLoader loader(data, BatchLoaderOptions::training(4, seed, augmentation));
    loader.startEpoch(epoch);
    std::vector<std::vector<float>> batches;
    HostBatch batch;
    while (loader.next(batch))
        batches.push_back(batch.inputs);
    return batches;
}

// Whether `out` is `in` [C, H, W] shifted by (dy, dx) within `pad`, zeros coming in, and
// mirrored when `mirror`.
bool isShiftOf(const float* out, const float* in, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t pad,
               bool mirror)
{
    for (std::int64_t dy = -pad; dy <= pad; ++dy)
        for (std::int64_t dx = -pad; dx <= pad; ++dx) {
            bool same = true;
            for (std::int64_t k = 0; k < c && same; ++k)
                for (std::int64_t y = 0; y < h && same; ++y)
                    for (std::int64_t x = 0; x < w && same; ++x) {
                        const std::int64_t sy = y + dy, sx = (mirror ? w - 1 - x : x) + dx;
                        const float expected =
                            sy >= 0 && sy < h && sx >= 0 && sx < w ? in[k * h * w + sy * w + sx] : 0.0f;
                        same = out[k * h * w + y * w + x] == expected;
                    }
            if (same)
                return true;
        }
    return false;
}

TEST(Augmentation, OffByDefault)
{
    DataSpec spec;
    EXPECT_FALSE(augmentationOf(spec).any());
    const Dataset data = images(8);
    BatchLoader loader(data, BatchLoaderOptions::training(4, 3));
    HostBatch batch;
    ASSERT_TRUE(loader.next(batch));
    for (std::int64_t i = 0; i < batch.size; ++i) {
        const std::int64_t s = loader.order()[static_cast<std::size_t>(i)];
        EXPECT_TRUE(std::equal(data.sample(s), data.sample(s) + data.sampleSize(),
                               batch.inputs.begin() + i * data.sampleSize()));
    }
}

TEST(Augmentation, SameSeedSameBatchesOtherSeedOthers)
{
    const Dataset data = images(16);
    const Augmentation both{2, true};
    EXPECT_EQ(epochBatches(data, 7, both), epochBatches(data, 7, both));
    // With the same order (same seed), the augmentation itself changes the batches...
    EXPECT_NE(epochBatches(data, 7, both), epochBatches(data, 7, {}));
    // ...and differs between seeds and between epochs of one seed.
    EXPECT_NE(epochBatches(data, 7, both), epochBatches(data, 8, both));
    EXPECT_NE(epochBatches(data, 7, both, 1), epochBatches(data, 7, both, 2));
}

TEST(Augmentation, EveryImageIsItsOriginalShiftedAndMaybeMirrored)
{
    const Dataset data = images(32);
    const std::int64_t n = data.sampleSize();
    int mirrored = 0, shifted = 0;
    for (const Augmentation augmentation : {Augmentation{2, false}, Augmentation{0, true}, Augmentation{1, true}}) {
        BatchLoader loader(data, BatchLoaderOptions::training(32, 11, augmentation));
        loader.startEpoch(1);
        HostBatch batch;
        ASSERT_TRUE(loader.next(batch));
        for (std::int64_t i = 0; i < batch.size; ++i) {
            const float* in = data.sample(loader.order()[static_cast<std::size_t>(i)]);
            const float* out = batch.inputs.data() + i * n;
            const bool plain = isShiftOf(out, in, 2, 5, 6, augmentation.cropPadding, false);
            const bool mirror = augmentation.flip && isShiftOf(out, in, 2, 5, 6, augmentation.cropPadding, true);
            EXPECT_TRUE(plain || mirror) << "sample " << i;
            mirrored += mirror && !plain ? 1 : 0;
            shifted += !std::equal(in, in + n, out) ? 1 : 0;
        }
    }
    // Of 96 draws: some are mirrored and most are changed (a draw may leave an image as it was).
    EXPECT_GT(mirrored, 10);
    EXPECT_GT(shifted, 60);
}

TEST(Augmentation, OnlyImagesAndPaddingSmallerThanThem)
{
    Dataset table;
    table.name = "files/train";
    table.sampleShape = Shape{4};
    table.inputs.assign(16, 1.0f);
    table.labels.assign(4, 0.0f);
    try {
        BatchLoader loader(table, BatchLoaderOptions::training(2, 1, {0, true}));
        FAIL() << "no error";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("data.augment_flip augments images"), std::string::npos) << e.what();
    }
    const Dataset data = images(4);
    try {
        BatchLoader loader(data, BatchLoaderOptions::training(2, 1, {5, false}));
        FAIL() << "no error";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("padding of 5 pixels"), std::string::npos) << e.what();
    }
}

TEST(ValidationSplit, SameSeedSameSamplesOtherSeedOthers)
{
    DataSpec spec;
    spec.dataset = DatasetKind::Synthetic;
    spec.syntheticShape = {1, 4, 4};
    spec.syntheticTrain = 200;
    spec.syntheticTest = 20;
    spec.validationSplit = 0.25f;
    spec.normalize = false;
    const DatasetSplits a = loadDatasets(spec, 3), b = loadDatasets(spec, 3), c = loadDatasets(spec, 4);
    EXPECT_EQ(a.validation.size(), 50);
    EXPECT_EQ(a.validation.inputs, b.validation.inputs);
    EXPECT_EQ(a.train.inputs, b.train.inputs);
    // Another seed makes other synthetic data too, so the held-out choice is compared on
    // indices: hold out from one dataset with two seeds.
    Dataset one = a.train, again = a.train, two = a.train;
    const Dataset heldOne = holdOut(one, 30, 3, "v"), heldOneAgain = holdOut(again, 30, 3, "v");
    const Dataset heldTwo = holdOut(two, 30, 4, "v");
    EXPECT_EQ(heldOne.inputs, heldOneAgain.inputs);
    EXPECT_NE(heldOne.inputs, heldTwo.inputs);
    EXPECT_NE(a.validation.inputs, c.validation.inputs);
}

} // namespace
