#pragma once
// In-memory datasets and the one entry point that builds the train/validation/test splits a
// run trains on from its DataSpec: Fashion-MNIST, MNIST, synthetic data, text (text_corpus.h)
// or the user's own files (file_dataset.h).
#include "engine/config/run_config.h"
#include "engine/data/value_ranges.h"
#include "engine/tensor/shape.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mantissa {

// Samples and labels on the host, sample-major, ready to be copied into batches.
struct Dataset {
    Shape sampleShape;         // per-sample shape, e.g. {1, 28, 28}
    std::vector<float> inputs; // size() * sampleSize() values
    // Class indices as float (the loss reads fp32 labels): one per sample, or labelShape's
    // worth per sample for sequence data (a next-byte label per position).
    std::vector<float> labels;
    Shape labelShape; // {} for one label per sample, {T} for a sequence of T
    std::int64_t classes = 0;
    std::string name; // "fashion-mnist/train": shown to users and in error messages

    std::int64_t labelSize() const { return labelShape.rank() == 0 ? 1 : labelShape.numel(); }
    std::int64_t size() const { return static_cast<std::int64_t>(labels.size()) / labelSize(); }
    std::int64_t sampleSize() const { return sampleShape.numel(); }
    const float* sample(std::int64_t i) const { return inputs.data() + i * sampleSize(); }
    const float* sampleLabels(std::int64_t i) const { return labels.data() + i * labelSize(); }
};

// How a sample's values fall into channels (images [C, H, W]: C channels of H W values each)
// or features (anything else: every value its own feature): the groups per-channel
// normalisation and the data summary's ranges go by.
struct ChannelLayout {
    std::int64_t channels = 1; // groups in a sample
    std::int64_t plane = 1;    // consecutive values of a sample in one group
};
ChannelLayout channelLayout(const Shape& sampleShape);

// The affine map applied to every input: x' = (x - mean[g]) / std[g], where g is the value's
// channel or feature (perChannel) or 0 (one mean and std for every value).
struct Normalization {
    std::vector<float> mean{0.0f}, std{1.0f};
    bool perChannel = false;
    // The mean and std of the value at `index` of a sample laid out as `layout`.
    std::size_t groupOf(std::int64_t index, const ChannelLayout& layout) const
    {
        return perChannel ? static_cast<std::size_t>(index / layout.plane) : 0;
    }
    // A normalised value of group g back as read: the map is affine with std > 0.
    float original(float value, std::size_t group) const { return value * std[group] + mean[group]; }
    // "per channel: mean 0.491, 0.482, 0.447; std 0.247, 0.243, 0.262" or "mean 0.286, std 0.353".
    std::string describe() const;
};

// The first `samples` samples' first `values` values of a dataset, row after row.
struct RawHead {
    static constexpr std::int64_t kMaxSamples = 16, kMaxValues = 64;
    std::int64_t samples = 0, values = 0;
    std::vector<float> data;
    float at(std::int64_t sample, std::int64_t index) const
    {
        return data[static_cast<std::size_t>(sample * values + index)];
    }
};

// The head of `data` as it holds its values now (before normalising it).
RawHead rawHeadOf(const Dataset& data);

struct DatasetSplits {
    Dataset train;
    Dataset validation; // empty when DataSpec::validationSplit is 0
    Dataset test;
    Normalization normalization; // what was applied (identity when DataSpec::normalize is false)
    bool normalized = false;     // DataSpec::normalize: whether `normalization` was applied
    std::string directory;       // where the files were read ("" for synthetic data)
    // A content hash of the training and test data as read and of how they were prepared
    // (data_fingerprint.h): runs with the same fingerprint saw the same data. The seeded
    // validation hold-out is not part of it, so that the seeds of one config share it.
    std::string fingerprint;
    // Classification (class labels, text's next-byte labels included) or regression (labelShape
    // {K} real targets a sample, classes 0); never auto.
    DataTask task = DataTask::Classification;
    std::vector<std::string> classNames; // where the source names its classes (image folders)
    std::vector<std::string> notes;      // what was done to the data that the user should know
    bool fromCache = false;              // your files: read from the decoded-data cache (data_cache.h)
    // When normalised: the training split's values as read, per channel or feature, taken before
    // normalising (the data summary's ranges; the tensors no longer hold those values).
    std::vector<ValueRange> rawRanges;
    // When normalised: the first training samples' first values as read, for previews that show
    // the numbers in the files (the data panel's table) rather than ones mapped back in float.
    RawHead rawHead;
};

// Builds the splits of `spec`: loads (or generates) the data, takes the first limitTrain /
// limitTest samples, holds out the validation fraction (seeded by `seed`), then normalises
// every split with the statistics of the remaining training samples only (per channel or
// feature for your files, data.per_channel), so nothing about
// the validation or test data leaks into training. Throws ConfigError for a bad spec and
// DataError for missing or corrupt files.
DatasetSplits loadDatasets(const DataSpec& spec, std::uint64_t seed);

// How `splits` were prepared, as a run stores it and `mantissa-cli show` prints it: "normalised
// with the training split's mean 0.286, std 0.353", per channel or feature where that was
// applied, or "not normalised".
std::string dataPreparationText(const DatasetSplits& splits);

// `config` with data.task's auto replaced by the task `data` was read as, so that the config a
// run is stored with names its task (and so its metric, engine/observe/task_metric.h).
RunConfig withResolvedTask(const RunConfig& config, const DatasetSplits& data);

// Why `config`'s model cannot take its data, known before any file is read (the Trainer checks
// the loaded samples again): synthetic data has data.synthetic_shape, text windows of
// data.context bytes in 256 classes, Fashion-MNIST and MNIST 1x28x28 images in 10 classes.
// Nothing when they fit.
std::optional<std::string> dataModelMismatch(const RunConfig& config);

// Checks the fields of `spec`; ConfigError names the field ("data.validationSplit: ...").
void validateDataSpec(const DataSpec& spec);

// Where a dataset's files are read from, and which setting chose it (for messages).
struct DataDirectory {
    std::string path;
    std::string origin; // "data.directory", "MANTISSA_DATA_DIR" or "the default for fashion-mnist"
};
// spec.directory, else $MANTISSA_DATA_DIR, else /usr/share/datasets/<dataset>; for text,
// spec.directory (a file or a directory) else Debian's fortunes (kDefaultTextCorpus)
// (the Debian package dataset-fashion-mnist installs /usr/share/datasets/fashion-mnist).
DataDirectory resolveDataDirectory(const DataSpec& spec);

// One split of an MNIST-format dataset (fashion-mnist or mnist) from `directory`, which
// holds train-images-idx3-ubyte.gz and friends (or their uncompressed forms). Pixels are
// scaled to [0, 1]; `limit` > 0 keeps only the first `limit` samples.
Dataset loadMnistFormat(const DataDirectory& directory, DatasetKind dataset, bool train, std::int64_t limit = 0);

// Mean and (population) standard deviation over every input value of `data`, in double; with
// `perChannel`, of each channel or feature (channelLayout) on its own.
Normalization computeNormalization(const Dataset& data, bool perChannel = false);
void applyNormalization(Dataset& data, const Normalization& norm);

// Moves a seeded-random `count` of `data`'s samples into the returned dataset; both keep
// the samples' original relative order. The choice depends only on (seed, data.size(), count).
Dataset holdOut(Dataset& data, std::int64_t count, std::uint64_t seed, const std::string& name);

// Moves the samples a seeded split with a fixed key picks into the returned dataset: the test
// set of a source that has none of its own, the same samples for every training seed.
Dataset holdOutTestSet(Dataset& data, double fraction, const std::string& name);

// Keeps only the first `limit` samples (no-op when limit <= 0 or limit >= size()).
void keepFirst(Dataset& data, std::int64_t limit);

} // namespace mantissa
