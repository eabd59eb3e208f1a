#include "engine/data/value_ranges.h"

#include "engine/data/dataset.h"

#include <algorithm>
#include <limits>

namespace mantissa {

std::vector<ValueRange> valueRanges(const Dataset& data)
{
    const bool image = data.sampleShape.rank() == 3;
    const ChannelLayout layout = channelLayout(data.sampleShape);
    const std::int64_t groups = layout.channels;
    const std::int64_t run = layout.plane; // values per group in one sample
    std::vector<ValueRange> ranges(static_cast<std::size_t>(groups));
    std::vector<double> sums(ranges.size(), 0.0);
    for (auto& r : ranges) {
        r.minimum = std::numeric_limits<float>::infinity();
        r.maximum = -std::numeric_limits<float>::infinity();
    }
    for (std::int64_t i = 0; i < data.size(); ++i) {
        const float* x = data.sample(i);
        for (std::int64_t g = 0; g < groups; ++g) {
            ValueRange& r = ranges[static_cast<std::size_t>(g)];
            for (std::int64_t k = 0; k < run; ++k) {
                const float v = x[g * run + k];
                r.minimum = std::min(r.minimum, v);
                r.maximum = std::max(r.maximum, v);
                sums[static_cast<std::size_t>(g)] += v;
            }
        }
    }
    const double n = static_cast<double>(data.size()) * static_cast<double>(run);
    for (std::size_t g = 0; g < ranges.size(); ++g) {
        ranges[g].name = (image ? "channel " : "feature ") + std::to_string(g + 1);
        ranges[g].mean = n > 0 ? sums[g] / n : 0;
    }
    return ranges;
}

} // namespace mantissa
