#include "engine/data/batch_loader.h"

#include "engine/data/permutation.h"
#include "engine/util/check.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace mantissa {

BatchLoader::BatchLoader(const Dataset& data, const BatchLoaderOptions& options) : m_data(data), m_options(options)
{
    if (options.batchSize < 1)
        throw ConfigError(data.name + ": batch size must be >= 1, got " + std::to_string(options.batchSize));
    if (options.dropLast && data.size() < options.batchSize)
        throw ConfigError(data.name + ": batch size " + std::to_string(options.batchSize) + " is larger than its " +
                          std::to_string(data.size()) +
                          " samples, so an epoch would have no full batch; "
                          "use a smaller batch size or more data");
    MANTISSA_ASSERT(static_cast<std::int64_t>(data.inputs.size()) == data.size() * data.sampleSize());
    checkAugmentation(options.augmentation, data);
    startEpoch(0);
}

std::int64_t BatchLoader::batchesPerEpoch() const
{
    const std::int64_t n = m_data.size(), b = m_options.batchSize;
    return m_options.dropLast ? n / b : (n + b - 1) / b;
}

std::int64_t BatchLoader::samplesPerEpoch() const
{
    return m_options.dropLast ? batchesPerEpoch() * m_options.batchSize : m_data.size();
}

void BatchLoader::startEpoch(std::int64_t epoch)
{
    m_epoch = epoch;
    m_position = 0;
    if (m_options.shuffle) {
        m_order = seededPermutation(m_data.size(), {m_options.seed, static_cast<std::uint64_t>(epoch)});
    } else if (static_cast<std::int64_t>(m_order.size()) != m_data.size()) {
        m_order.resize(static_cast<std::size_t>(m_data.size()));
        std::iota(m_order.begin(), m_order.end(), std::int64_t{0});
    }
}

void BatchLoader::seek(std::int64_t index)
{
    MANTISSA_ASSERT(index >= 0 && index <= batchesPerEpoch());
    m_position = index;
}

std::int64_t BatchLoader::fill(std::int64_t index, float* inputs, float* labels) const
{
    MANTISSA_ASSERT(index >= 0 && index < batchesPerEpoch());
    const std::int64_t first = index * m_options.batchSize;
    const std::int64_t size = std::min(m_options.batchSize, m_data.size() - first);
    const std::int64_t n = m_data.sampleSize();
    const std::int64_t l = m_data.labelSize();
    const std::size_t sampleBytes = static_cast<std::size_t>(n) * sizeof(float);
    const std::size_t labelBytes = static_cast<std::size_t>(l) * sizeof(float);
    if (!m_options.shuffle) {
        // In order, the batch is one contiguous run of the dataset.
        std::memcpy(inputs, m_data.sample(first), sampleBytes * static_cast<std::size_t>(size));
        std::memcpy(labels, m_data.sampleLabels(first), labelBytes * static_cast<std::size_t>(size));
        return size;
    }
    std::vector<float> scratch;
    for (std::int64_t i = 0; i < size; ++i) {
        const std::int64_t s = m_order[static_cast<std::size_t>(first + i)];
        std::memcpy(inputs + i * n, m_data.sample(s), sampleBytes);
        std::memcpy(labels + i * l, m_data.sampleLabels(s), labelBytes);
        if (m_options.augmentation.any())
            augmentSample(inputs + i * n, m_data.sampleShape, m_options.augmentation, m_options.seed, m_epoch, s,
                          scratch);
    }
    return size;
}

bool BatchLoader::next(HostBatch& batch)
{
    if (m_position >= batchesPerEpoch()) {
        batch.size = 0;
        return false;
    }
    const std::int64_t capacity = m_options.batchSize;
    batch.inputs.resize(static_cast<std::size_t>(capacity * m_data.sampleSize()));
    batch.labels.resize(static_cast<std::size_t>(capacity * m_data.labelSize()));
    batch.size = fill(m_position++, batch.inputs.data(), batch.labels.data());
    batch.inputs.resize(static_cast<std::size_t>(batch.size * m_data.sampleSize()));
    batch.labels.resize(static_cast<std::size_t>(batch.size * m_data.labelSize()));
    batch.inputShape = batchShape(batch.size);
    return true;
}

Shape BatchLoader::batchShape(std::int64_t batch) const
{
    std::vector<std::int64_t> dims{batch};
    dims.insert(dims.end(), m_data.sampleShape.dims().begin(), m_data.sampleShape.dims().end());
    return Shape(std::move(dims));
}

} // namespace mantissa
