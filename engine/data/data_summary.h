#pragma once
// What a dataset holds, before any training: the figures `mantissa-cli data` prints and the
// workbench's data panel shows, computed once here so that both say the same.
#include "engine/data/dataset.h"
#include "engine/data/value_ranges.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mantissa {

struct DataSummary {
    std::string source; // the file or folder, or the dataset's name
    std::string format; // "image-folder", "csv", ..., or the built-in dataset's key
    std::int64_t trainSamples = 0, validationSamples = 0, testSamples = 0;
    Shape sampleShape, labelShape;
    std::int64_t classes = 0;                          // 0 for regression
    bool regression = false;                           // DataTask::Regression: labelShape {K} targets a sample
    std::vector<std::string> classNames;               // empty where the source names none
    std::vector<std::int64_t> trainCounts, testCounts; // samples per class (one label per sample)
    // Per channel (images) or per feature of the training set, as read (before normalisation).
    std::vector<ValueRange> ranges;
    std::int64_t featureCount = 0; // how many ranges there are in all (only some are kept)
    std::int64_t bytes = 0;        // the float32 tensors of every split
    std::string fingerprint;
    std::string normalization;         // Normalization::describe() of what was applied; empty when none
    std::vector<std::string> notes;    // what was done to the data
    std::vector<std::string> problems; // what may hurt training: empty or rare classes, constant features
};

// At most `maxRanges` ranges are kept (the first ones).
DataSummary summarizeData(const DatasetSplits& splits, const DataSpec& spec, std::size_t maxRanges = 32);

// The summary as the lines `mantissa-cli data` prints.
std::string dataSummaryText(const DataSummary& summary);

} // namespace mantissa
