#include "engine/data/dataset.h"

#include "engine/data/data_cache.h"
#include "engine/data/data_fingerprint.h"
#include "engine/data/file_dataset.h"
#include "engine/data/idx_reader.h"
#include "engine/data/permutation.h"
#include "engine/data/synthetic.h"
#include "engine/data/text_corpus.h"
#include "engine/util/check.h"
#include "engine/util/format_number.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

namespace mantissa {

namespace {

constexpr const char* kEnvDataDir = "MANTISSA_DATA_DIR";
constexpr const char* kFileList = "train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
                                  "t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz";
// Salt for the validation hold-out, so that it never shares a stream with an epoch order.
constexpr std::uint64_t kValidationKey = 0x76616c6964ull; // "valid"
// The key of the test split of a source without one: no seed, so every run shares it.
constexpr std::uint64_t kTestKey = 0x74657374ull; // "test"

std::string howToProvide(DatasetKind dataset)
{
    return "set data.directory in the run config or the " + std::string(kEnvDataDir) +
           " environment variable to a directory holding " + kFileList +
           "; scripts/setup installs the Debian package dataset-fashion-mnist, which provides "
           "/usr/share/datasets/fashion-mnist" +
           (dataset == DatasetKind::Mnist ? " (MNIST itself has no Debian package: download its four files)" : "");
}

void checkDirectory(const DataDirectory& dir, DatasetKind dataset)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    const auto status = fs::status(dir.path, ec);
    const std::string name(enumKey(dataset));
    if (!fs::exists(status))
        throw DataError(name + ": data directory " + dir.path + " (from " + dir.origin + ") does not exist; " +
                        howToProvide(dataset));
    if (!fs::is_directory(status))
        throw DataError(name + ": data directory " + dir.path + " (from " + dir.origin + ") is not a directory; " +
                        howToProvide(dataset));
}

// "<dir>/train-images-idx3-ubyte.gz", or the uncompressed file when only that exists.
std::string findFile(const DataDirectory& dir, const std::string& stem)
{
    namespace fs = std::filesystem;
    const fs::path gz = fs::path(dir.path) / (stem + ".gz");
    const fs::path plain = fs::path(dir.path) / stem;
    if (fs::exists(gz) || !fs::exists(plain))
        return gz.string(); // when neither exists the caller reports the .gz name
    return plain.string();
}

IdxArray readPart(const DataDirectory& dir, DatasetKind dataset, const std::string& stem, int rank, std::string& path)
{
    path = findFile(dir, stem);
    if (!std::filesystem::exists(path))
        throw DataError(path + ": file not found (nor " + stem + " without .gz); the " + std::string(enumKey(dataset)) +
                        " directory (from " + dir.origin + ") must hold " + kFileList);
    return readIdxFile(path, rank);
}

// The data as read: the first part of the fingerprint, which the decoded-data cache keeps.
DataFingerprint contentHashOf(const Dataset& train, const Dataset& test)
{
    DataFingerprint hash;
    hash.addDataset(train);
    hash.addDataset(test);
    return hash;
}

// The data as read (`hash`, contentHashOf) and the preparation that does not depend on the seed.
std::string fingerprintOf(DataFingerprint hash, const Dataset& train, const DataSpec& spec)
{
    hash.addNumber(spec.validationSplit);
    hash.addNumber(spec.normalize ? 1 : 0);
    // Per-channel statistics differ from one mean and std only where there are several channels
    // (a grey image's one channel is all of it: the same tensors, the same fingerprint).
    if (spec.dataset == DatasetKind::Files && spec.normalize && spec.perChannel &&
        channelLayout(train.sampleShape).channels > 1)
        hash.addText("per channel");
    // Augmentation is not part of it: it is how a run trains on the data (like dropout), and a
    // comparison of runs with and without it compares them on the same data.
    return hash.hex();
}

void checkRange(bool ok, const std::string& field, const std::string& problem)
{
    if (!ok)
        throw ConfigError(field + ": " + problem);
}

// Your files as read, with the test split and the limits: the part of the splits that the
// decoded-data cache keeps.
PreparedSource prepareFileSource(const DataSpec& spec)
{
    FileSource source = readFileSource(spec);
    PreparedSource out;
    out.train = std::move(source.train);
    if (source.givenTest)
        out.test = std::move(source.test);
    else
        out.test = holdOutTestSet(out.train, spec.testSplit, "files/test");
    keepFirst(out.train, spec.limitTrain);
    keepFirst(out.test, spec.limitTest);
    out.task = source.task;
    out.classNames = std::move(source.classNames);
    out.notes = std::move(source.notes);
    out.inputs = std::move(source.inputs);
    out.contentHash = contentHashOf(out.train, out.test);
    return out;
}

} // namespace

void validateDataSpec(const DataSpec& spec)
{
    checkRange(spec.validationSplit >= 0 && spec.validationSplit < 1, "data.validationSplit",
               formatNumber(spec.validationSplit) + " is outside [0, 1)");
    checkRange(spec.limitTrain >= 0, "data.limitTrain",
               "must be >= 0 (0 = all), got " + std::to_string(spec.limitTrain));
    checkRange(spec.limitTest >= 0, "data.limitTest", "must be >= 0 (0 = all), got " + std::to_string(spec.limitTest));
    if (spec.dataset == DatasetKind::Text)
        checkRange(spec.context >= 1 && spec.context <= 65536, "data.context",
                   "must be between 1 and 65536 bytes, got " + std::to_string(spec.context));
    if (spec.dataset == DatasetKind::Files) {
        checkRange(!spec.path.empty(), "data.path", "is empty; give the file or folder to read (--data PATH)");
        checkRange(spec.format != DataFormat::Text, "data.format",
                   "text is the text dataset: set data.dataset to text and data.directory to the file or folder");
        checkRange(spec.testSplit > 0 && spec.testSplit < 1, "data.test_split",
                   formatNumber(spec.testSplit) + " is outside (0, 1)");
        checkRange(spec.imageSize.empty() || spec.imageSize.size() == 2, "data.image_size",
                   "must be empty or [height, width], got " + Shape(spec.imageSize).toString());
    }
    if (spec.dataset != DatasetKind::Synthetic)
        return;
    checkRange(spec.syntheticTrain > 0, "data.syntheticTrain",
               "must be > 0, got " + std::to_string(spec.syntheticTrain));
    checkRange(spec.syntheticTest > 0, "data.syntheticTest", "must be > 0, got " + std::to_string(spec.syntheticTest));
    const bool shapeOk =
        !spec.syntheticShape.empty() &&
        std::all_of(spec.syntheticShape.begin(), spec.syntheticShape.end(), [](auto d) { return d > 0; });
    checkRange(shapeOk, "data.syntheticShape",
               "must be a non-empty list of positive extents, got " + Shape(spec.syntheticShape).toString());
    checkRange(spec.syntheticClasses >= 2, "data.syntheticClasses",
               "must be >= 2, got " + std::to_string(spec.syntheticClasses));
    checkRange(std::isfinite(spec.syntheticNoise) && spec.syntheticNoise >= 0, "data.syntheticNoise",
               "must be a finite value >= 0, got " + formatNumber(spec.syntheticNoise));
}

DataDirectory resolveDataDirectory(const DataSpec& spec)
{
    if (!spec.directory.empty())
        return {spec.directory, "data.directory"};
    if (spec.dataset == DatasetKind::Text) // MANTISSA_DATA_DIR names where the image sets are
        return {kDefaultTextCorpus, "the default for text (Debian's fortunes)"};
    if (const char* env = std::getenv(kEnvDataDir); env && *env)
        return {env, kEnvDataDir};
    const std::string name(enumKey(spec.dataset));
    return {"/usr/share/datasets/" + name, "the default for " + name};
}

Dataset loadMnistFormat(const DataDirectory& directory, DatasetKind dataset, bool train, std::int64_t limit)
{
    MANTISSA_ASSERT(dataset == DatasetKind::FashionMnist || dataset == DatasetKind::Mnist);
    checkDirectory(directory, dataset);
    const std::string prefix = train ? "train" : "t10k";
    std::string imagesPath, labelsPath;
    const IdxArray images = readPart(directory, dataset, prefix + "-images-idx3-ubyte", 3, imagesPath);
    const IdxArray labels = readPart(directory, dataset, prefix + "-labels-idx1-ubyte", 1, labelsPath);
    constexpr std::int64_t classes = 10;
    checkIdxPair(images, imagesPath, labels, labelsPath, classes);

    Dataset d;
    d.name = std::string(enumKey(dataset)) + (train ? "/train" : "/test");
    d.classes = classes;
    d.sampleShape = Shape{1, images.dims[1], images.dims[2]};
    const std::int64_t count = limit > 0 ? std::min(limit, images.count()) : images.count();
    const std::int64_t pixels = count * d.sampleSize();
    d.inputs.resize(static_cast<std::size_t>(pixels));
    constexpr float scale = 1.0f / 255.0f;
    for (std::int64_t i = 0; i < pixels; ++i)
        d.inputs[static_cast<std::size_t>(i)] = static_cast<float>(images.values[static_cast<std::size_t>(i)]) * scale;
    d.labels.assign(labels.values.begin(), labels.values.begin() + count);
    return d;
}

ChannelLayout channelLayout(const Shape& sampleShape)
{
    const auto& dims = sampleShape.dims();
    if (dims.size() == 3)
        return {dims[0], dims[1] * dims[2]};
    return {sampleShape.numel(), 1};
}

std::string Normalization::describe() const
{
    const auto list = [](const std::vector<float>& values) {
        std::string out;
        for (std::size_t i = 0; i < values.size(); ++i)
            out += (i ? ", " : "") + formatNumber(std::round(static_cast<double>(values[i]) * 1e4) / 1e4);
        return out;
    };
    if (!perChannel)
        return "mean " + list(mean) + ", std " + list(std);
    return "per channel or feature: mean " + list(mean) + "; std " + list(std);
}

Normalization computeNormalization(const Dataset& data, bool perChannel)
{
    if (data.inputs.empty())
        return {};
    const ChannelLayout layout = perChannel ? channelLayout(data.sampleShape) : ChannelLayout{1, data.sampleSize()};
    const auto groups = static_cast<std::size_t>(layout.channels);
    // Sequential double sums, value by value in order: the statistics must not depend on the
    // thread count, and a float sum over 47 million pixels would lose the digits it is after.
    std::vector<double> sum(groups, 0.0), sumSquares(groups, 0.0);
    for (std::int64_t i = 0; i < data.size(); ++i) {
        const float* x = data.sample(i);
        for (std::size_t g = 0; g < groups; ++g) {
            const float* values = x + static_cast<std::int64_t>(g) * layout.plane;
            for (std::int64_t k = 0; k < layout.plane; ++k) {
                sum[g] += values[k];
                sumSquares[g] += static_cast<double>(values[k]) * values[k];
            }
        }
    }
    Normalization norm;
    norm.perChannel = perChannel;
    norm.mean.assign(groups, 0.0f);
    norm.std.assign(groups, 1.0f);
    const double n = static_cast<double>(data.size()) * static_cast<double>(layout.plane);
    for (std::size_t g = 0; g < groups; ++g) {
        const double mean = sum[g] / n;
        const double stddev = std::sqrt(std::max(0.0, sumSquares[g] / n - mean * mean));
        norm.mean[g] = static_cast<float>(mean);
        // Constant data has no spread to divide by; centring it is all that can be done.
        norm.std[g] = stddev > 0 ? static_cast<float>(stddev) : 1.0f;
    }
    return norm;
}

void applyNormalization(Dataset& data, const Normalization& norm)
{
    const std::int64_t n = data.sampleSize();
    const ChannelLayout layout = norm.perChannel ? channelLayout(data.sampleShape) : ChannelLayout{1, n};
    MANTISSA_ASSERT(norm.mean.size() == static_cast<std::size_t>(layout.channels) &&
                    norm.std.size() == norm.mean.size());
    for (std::int64_t i = 0; i < data.size(); ++i) {
        float* x = data.inputs.data() + i * n;
        for (std::int64_t g = 0; g < layout.channels; ++g) {
            const float mean = norm.mean[static_cast<std::size_t>(g)];
            const float invStd = 1.0f / norm.std[static_cast<std::size_t>(g)];
            float* values = x + g * layout.plane;
            for (std::int64_t k = 0; k < layout.plane; ++k)
                values[k] = (values[k] - mean) * invStd;
        }
    }
}

namespace {

Dataset holdOutInOrder(Dataset& data, std::int64_t count, const std::vector<std::int64_t>& order,
                       const std::string& name)
{
    MANTISSA_ASSERT(count >= 0 && count <= data.size());
    std::vector<char> held(static_cast<std::size_t>(data.size()), 0);
    for (std::int64_t i = 0; i < count; ++i)
        held[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = 1;

    Dataset out;
    out.sampleShape = data.sampleShape;
    out.labelShape = data.labelShape;
    out.classes = data.classes;
    out.name = name;
    const std::int64_t n = data.sampleSize();
    const std::int64_t l = data.labelSize();
    out.inputs.reserve(static_cast<std::size_t>(count * n));
    out.labels.reserve(static_cast<std::size_t>(count * l));
    // Compact the kept samples in place, in order, while copying the held ones out.
    std::int64_t kept = 0;
    for (std::int64_t i = 0; i < data.size(); ++i) {
        const float* x = data.sample(i);
        const float* y = data.sampleLabels(i);
        if (held[static_cast<std::size_t>(i)]) {
            out.inputs.insert(out.inputs.end(), x, x + n);
            out.labels.insert(out.labels.end(), y, y + l);
            continue;
        }
        if (kept != i) {
            std::copy(x, x + n, data.inputs.data() + kept * n);
            std::copy(y, y + l, data.labels.data() + kept * l);
        }
        ++kept;
    }
    // No shrink_to_fit: on a large set its copy would cost more than the spare capacity.
    data.inputs.resize(static_cast<std::size_t>(kept * n));
    data.labels.resize(static_cast<std::size_t>(kept * l));
    return out;
}

} // namespace

Dataset holdOut(Dataset& data, std::int64_t count, std::uint64_t seed, const std::string& name)
{
    return holdOutInOrder(data, count, seededPermutation(data.size(), {seed, kValidationKey}), name);
}

Dataset holdOutTestSet(Dataset& data, double fraction, const std::string& name)
{
    const std::int64_t n = data.size();
    const auto count = std::max<std::int64_t>(1, std::llround(fraction * static_cast<double>(n)));
    if (count >= n)
        throw DataError(data.name + ": holding out " + formatNumber(fraction) + " of its " + std::to_string(n) +
                        " samples as the test set leaves none to train on (data.test_split)");
    return holdOutInOrder(data, count, seededPermutation(n, {kTestKey}), name);
}

void keepFirst(Dataset& data, std::int64_t limit)
{
    if (limit <= 0 || limit >= data.size())
        return;
    data.labels.resize(static_cast<std::size_t>(limit * data.labelSize()));
    data.inputs.resize(static_cast<std::size_t>(limit * data.sampleSize()));
    data.labels.shrink_to_fit();
    data.inputs.shrink_to_fit();
}

RawHead rawHeadOf(const Dataset& data)
{
    RawHead head;
    head.samples = std::min(RawHead::kMaxSamples, data.size());
    head.values = std::min(RawHead::kMaxValues, data.sampleSize());
    head.data.reserve(static_cast<std::size_t>(head.samples * head.values));
    for (std::int64_t s = 0; s < head.samples; ++s)
        head.data.insert(head.data.end(), data.sample(s), data.sample(s) + head.values);
    return head;
}

DatasetSplits loadDatasets(const DataSpec& spec, std::uint64_t seed)
{
    validateDataSpec(spec);
    if (spec.dataset == DatasetKind::Text)
        return loadTextDatasets(spec, seed); // its own splits by position in the text, no normalisation
    DatasetSplits splits;
    std::optional<DataFingerprint> contentHash; // known before the fingerprint pass for your files
    if (spec.dataset == DatasetKind::Synthetic) {
        // Sample i does not depend on the set's size, so generating only the first `limit`
        // samples is the same as generating all and keeping the first `limit`.
        const auto limited = [](std::int64_t size, std::int64_t limit) {
            return limit > 0 ? std::min(size, limit) : size;
        };
        const Shape shape(spec.syntheticShape);
        splits.train = makeSyntheticDataset(shape, spec.syntheticClasses, limited(spec.syntheticTrain, spec.limitTrain),
                                            spec.syntheticNoise, seed, 0, "synthetic/train");
        splits.test = makeSyntheticDataset(shape, spec.syntheticClasses, limited(spec.syntheticTest, spec.limitTest),
                                           spec.syntheticNoise, seed, 1, "synthetic/test");
    } else if (spec.dataset == DatasetKind::Files) {
        DataCacheOutcome cache;
        PreparedSource source = loadThroughDataCache(
            spec, [&] { return prepareFileSource(spec); }, cache);
        splits.directory = spec.path;
        splits.train = std::move(source.train);
        splits.test = std::move(source.test);
        splits.task = source.task;
        splits.classNames = std::move(source.classNames);
        splits.notes = std::move(source.notes);
        if (!cache.message.empty())
            splits.notes.push_back(cache.message);
        splits.fromCache = cache.hit;
        contentHash = source.contentHash;
    } else {
        const DataDirectory dir = resolveDataDirectory(spec);
        splits.directory = dir.path;
        splits.train = loadMnistFormat(dir, spec.dataset, true, spec.limitTrain);
        splits.test = loadMnistFormat(dir, spec.dataset, false, spec.limitTest);
    }
    splits.fingerprint =
        fingerprintOf(contentHash ? *contentHash : contentHashOf(splits.train, splits.test), splits.train, spec);

    if (spec.validationSplit > 0) {
        const std::int64_t n = splits.train.size();
        const auto count = std::max<std::int64_t>(1, std::llround(static_cast<double>(spec.validationSplit) * n));
        if (count >= n)
            throw ConfigError("data.validationSplit: holding out " + formatNumber(spec.validationSplit) + " of " +
                              std::to_string(n) + " training samples leaves none to train on");
        splits.validation = holdOut(splits.train, count, seed, std::string(enumKey(spec.dataset)) + "/validation");
    } else {
        splits.validation.sampleShape = splits.train.sampleShape;
        splits.validation.labelShape = splits.train.labelShape;
        splits.validation.classes = splits.train.classes;
        splits.validation.name = std::string(enumKey(spec.dataset)) + "/validation";
    }

    if (spec.normalize) {
        splits.rawRanges = valueRanges(splits.train);
        splits.rawHead = rawHeadOf(splits.train);
        splits.normalized = true;
        splits.normalization =
            computeNormalization(splits.train, spec.dataset == DatasetKind::Files && spec.perChannel);
        applyNormalization(splits.train, splits.normalization);
        applyNormalization(splits.validation, splits.normalization);
        applyNormalization(splits.test, splits.normalization);
    }
    return splits;
}

std::string dataPreparationText(const DatasetSplits& splits)
{
    return splits.normalized ? "normalised with the training split's " + splits.normalization.describe()
                             : "not normalised";
}

RunConfig withResolvedTask(const RunConfig& config, const DatasetSplits& data)
{
    RunConfig resolved = config;
    if (resolved.data.dataset == DatasetKind::Files)
        resolved.data.task = data.task;
    return resolved;
}

std::optional<std::string> dataModelMismatch(const RunConfig& config)
{
    const DataSpec& data = config.data;
    const ModelSpec& model = config.model;
    switch (data.dataset) {
    case DatasetKind::Synthetic:
        if (data.syntheticShape != model.input)
            return "data.synthetic_shape differs from model.input; set both to the same shape";
        return std::nullopt;
    case DatasetKind::Text:
        // A byte-level language model: a window of data.context byte ids in, a byte out per position.
        if (model.input != std::vector<std::int64_t>{data.context} || model.classes != kByteVocabulary)
            return "text data gives windows of data.context = " + std::to_string(data.context) +
                   " bytes in 256 classes; set model.input to [" + std::to_string(data.context) +
                   "] and classes to 256";
        return std::nullopt;
    case DatasetKind::Files: // known once the files are read; the Trainer checks the samples
        return std::nullopt;
    case DatasetKind::FashionMnist:
    case DatasetKind::Mnist:
        if (model.input != std::vector<std::int64_t>{1, 28, 28} || model.classes != 10)
            return std::string(enumKey(data.dataset)) +
                   " has 1x28x28 images in 10 classes; set model.input to [1, 28, 28] and classes to 10";
        return std::nullopt;
    }
    return std::nullopt;
}

} // namespace mantissa
