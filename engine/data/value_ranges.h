#pragma once
// The range and mean of each channel (images, [C, H, W]) or feature (anything else) of a
// dataset's values, grouped as per-channel normalisation groups them (channelLayout). Taken of
// the training split as read, before normalisation, so that the data summary reports the
// values in the files exactly rather than mapped back through the normalisation in float.
#include <cstdint>
#include <string>
#include <vector>

namespace mantissa {

struct Dataset;

struct ValueRange {
    std::string name; // "channel 1", "feature 3" or a table column's name
    float minimum = 0, maximum = 0;
    double mean = 0;
};

// One range per channel or feature, in order; the mean is summed in double.
std::vector<ValueRange> valueRanges(const Dataset& data);

} // namespace mantissa
