#pragma once
// Mini-batches over a Dataset. Training shuffles with a permutation seeded by (seed, epoch),
// so the order is reproducible and identical for every precision mode being compared, and
// drops the last partial batch so every step sees the same shapes; evaluation walks the data
// in order and keeps the partial batch so that every sample is counted.
#include "engine/data/augmentation.h"
#include "engine/data/dataset.h"

#include <cstdint>
#include <vector>

namespace mantissa {

struct BatchLoaderOptions {
    std::int64_t batchSize = 128;
    bool shuffle = true;
    bool dropLast = true;
    std::uint64_t seed = 0;
    Augmentation augmentation; // training images only (augmentation.h); none by default

    static BatchLoaderOptions training(std::int64_t batchSize, std::uint64_t seed, Augmentation augmentation = {})
    {
        return {batchSize, true, true, seed, augmentation};
    }
    static BatchLoaderOptions evaluation(std::int64_t batchSize) { return {batchSize, false, false, 0, {}}; }
};

// One batch on the host: inputs [size, sampleShape...] and labels [size, labelShape...]
// (class indices).
// Reused between batches; the buffers only grow.
struct HostBatch {
    std::vector<float> inputs;
    std::vector<float> labels;
    std::int64_t size = 0;
    Shape inputShape;
};

class BatchLoader {
public:
    // `data` must outlive the loader. Throws ConfigError for a batch size < 1, or one larger
    // than the dataset when the partial batch would be dropped (an epoch with no batch).
    BatchLoader(const Dataset& data, const BatchLoaderOptions& options);

    const Dataset& dataset() const { return m_data; }
    const BatchLoaderOptions& options() const { return m_options; }
    std::int64_t batchesPerEpoch() const;
    // Samples one epoch visits (all of them unless the partial batch is dropped).
    std::int64_t samplesPerEpoch() const;

    // Fixes the order of `epoch` and rewinds to its first batch. The constructor starts epoch 0.
    void startEpoch(std::int64_t epoch);
    std::int64_t epoch() const { return m_epoch; }
    // Moves to batch `index` of the current epoch (0..batchesPerEpoch()), e.g. on resume.
    void seek(std::int64_t index);
    // Index of the batch next() returns.
    std::int64_t position() const { return m_position; }

    // Copies the next batch into `batch`; false (and batch.size 0) after the epoch's last one.
    bool next(HostBatch& batch);
    // Copies batch `index` of the current epoch into `inputs` (room for batchSize samples) and
    // `labels` (room for batchSize samples' labels); returns its size. Const, so a prefetch thread may call it.
    std::int64_t fill(std::int64_t index, float* inputs, float* labels) const;
    // [batch, sampleShape...]
    Shape batchShape(std::int64_t batch) const;
    // The current epoch's sample order.
    const std::vector<std::int64_t>& order() const { return m_order; }

private:
    const Dataset& m_data;
    BatchLoaderOptions m_options;
    std::vector<std::int64_t> m_order;
    std::int64_t m_epoch = 0;
    std::int64_t m_position = 0;
};

} // namespace mantissa
