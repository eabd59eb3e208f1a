// The data pipeline: IDX reading and every way an IDX file can be wrong, directory
// resolution, splits, normalisation, synthetic data and batch order.
#include "engine/config/presets.h"
#include "engine/data/batch_loader.h"
#include "engine/data/dataset.h"
#include "engine/data/idx_reader.h"
#include "engine/data/synthetic.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

using namespace mantissa;
namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<std::uint8_t>;

// An IDX file of unsigned bytes: magic 0x0000 08 rank, extents big-endian, then the values.
Bytes idxBytes(const std::vector<std::uint32_t>& dims, const Bytes& values)
{
    Bytes b{0, 0, 0x08, static_cast<std::uint8_t>(dims.size())};
    for (std::uint32_t d : dims)
        for (int shift = 24; shift >= 0; shift -= 8)
            b.push_back(static_cast<std::uint8_t>(d >> shift));
    b.insert(b.end(), values.begin(), values.end());
    return b;
}

void writePlain(const fs::path& path, const Bytes& bytes)
{
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void writeGzip(const fs::path& path, const Bytes& bytes)
{
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    gzclose(f);
}

Bytes readBytes(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
}

Bytes counting(std::size_t n)
{
    Bytes v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<std::uint8_t>(i * 7 % 256);
    return v;
}

// Expects `f` to throw DataError whose message contains every one of `parts`.
void expectDataError(const std::function<void()>& f, const std::vector<std::string>& parts)
{
    try {
        f();
        ADD_FAILURE() << "no DataError thrown";
    } catch (const DataError& e) {
        // MANTISSA_SHOW_ERRORS=1 prints each message, to review the wording users will read.
        if (std::getenv("MANTISSA_SHOW_ERRORS"))
            std::printf("%s\n", e.what());
        for (const auto& part : parts)
            EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
                << "message: " << e.what() << "\nlacks: " << part;
    }
}

template <typename F>
std::string configErrorOf(F f)
{
    try {
        f();
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(no ConfigError)";
}

class DataFiles : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_dir = fs::temp_directory_path() / ("mantissa-data-test-" + std::to_string(::getpid()) + "-" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(m_dir);
        fs::create_directories(m_dir);
    }
    void TearDown() override { fs::remove_all(m_dir); }

    // A tiny MNIST-format directory: `train` and `test` images of 4x4 with labels i % 10.
    void writeMnistDir(std::uint32_t train, std::uint32_t test)
    {
        for (auto [prefix, n] : {std::pair<std::string, std::uint32_t>{"train", train}, {"t10k", test}}) {
            Bytes labels(n);
            for (std::uint32_t i = 0; i < n; ++i)
                labels[i] = static_cast<std::uint8_t>(i % 10);
            writeGzip(m_dir / (prefix + "-images-idx3-ubyte.gz"), idxBytes({n, 4, 4}, counting(n * 16)));
            writeGzip(m_dir / (prefix + "-labels-idx1-ubyte.gz"), idxBytes({n}, labels));
        }
    }

    DataSpec mnistSpec() const
    {
        DataSpec spec;
        spec.dataset = DatasetKind::FashionMnist;
        spec.directory = m_dir.string();
        spec.normalize = false;
        return spec;
    }

    fs::path m_dir;
};

// A dataset whose sample i holds the value i everywhere, so indices survive any reordering.
Dataset indexDataset(std::int64_t n, std::int64_t sampleSize = 3)
{
    Dataset d;
    d.name = "index";
    d.sampleShape = Shape{sampleSize};
    d.classes = 10;
    for (std::int64_t i = 0; i < n; ++i) {
        d.inputs.insert(d.inputs.end(), static_cast<std::size_t>(sampleSize), static_cast<float>(i));
        d.labels.push_back(static_cast<float>(i % 10));
    }
    return d;
}

} // namespace

// --- IDX reading ------------------------------------------------------------------------

TEST_F(DataFiles, ReadsPlainAndGzipIdx)
{
    const Bytes values = counting(3 * 2 * 5);
    writePlain(m_dir / "plain-idx3", idxBytes({3, 2, 5}, values));
    writeGzip(m_dir / "packed-idx3.gz", idxBytes({3, 2, 5}, values));
    for (const char* name : {"plain-idx3", "packed-idx3.gz"}) {
        const IdxArray a = readIdxFile((m_dir / name).string(), 3);
        EXPECT_EQ(a.dims, (std::vector<std::int64_t>{3, 2, 5})) << name;
        EXPECT_EQ(a.values, values) << name;
        EXPECT_EQ(a.count(), 3);
    }
}

TEST_F(DataFiles, TruncatedPlainFileNamesTheCounts)
{
    const auto path = (m_dir / "train-images-idx3-ubyte").string();
    writePlain(path, idxBytes({3, 4, 4}, counting(40)));
    expectDataError([&] { readIdxFile(path, 3); },
                    {path, "truncated", "header says 3 images of 4x4 (48 bytes)", "holds 40 bytes of data"});
}

TEST_F(DataFiles, TruncatedGzipStream)
{
    const auto full = m_dir / "full.gz";
    const auto path = (m_dir / "train-images-idx3-ubyte.gz").string();
    // Incompressible-ish data so that cutting the stream in half loses half of the payload.
    Bytes values(64 * 64 * 8);
    std::uint32_t x = 12345;
    for (auto& v : values)
        v = static_cast<std::uint8_t>((x = x * 1664525u + 1013904223u) >> 24);
    writeGzip(full, idxBytes({8, 64, 64}, values));
    Bytes packed = readBytes(full);
    packed.resize(packed.size() / 2);
    writePlain(path, packed);
    expectDataError([&] { readIdxFile(path, 3); }, {path, "truncated", "header says 8 images of 64x64"});
}

TEST_F(DataFiles, GzipWithoutItsTrailerIsCorrupt)
{
    // All the data present but the CRC/size trailer cut off: zlib's complaint must surface.
    const auto full = m_dir / "full.gz";
    const auto path = (m_dir / "labels.gz").string();
    writeGzip(full, idxBytes({4}, {1, 2, 3, 4}));
    Bytes packed = readBytes(full);
    packed.resize(packed.size() - 4);
    writePlain(path, packed);
    expectDataError([&] { readIdxFile(path, 1); }, {path, "gzip"});
}

TEST_F(DataFiles, NotGzipGarbage)
{
    const auto path = (m_dir / "t10k-images-idx3-ubyte.gz").string();
    writePlain(path, Bytes{0x1f, 0x8b, 0x08, 0x00, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05});
    expectDataError([&] { readIdxFile(path, 3); }, {path});
}

TEST_F(DataFiles, WrongMagic)
{
    const auto path = (m_dir / "images.idx").string();
    Bytes b = idxBytes({2, 2, 2}, counting(8));
    b[0] = 0x12;
    writePlain(path, b);
    expectDataError([&] { readIdxFile(path, 3); }, {path, "not an IDX file"});
}

TEST_F(DataFiles, UnsupportedDtypeAndWrongRank)
{
    const auto path = (m_dir / "floats.idx").string();
    Bytes b = idxBytes({2}, counting(2));
    b[2] = 0x0d;
    writePlain(path, b);
    expectDataError([&] { readIdxFile(path); }, {path, "0x0d", "0x08"});
    writePlain(path, idxBytes({2}, counting(2)));
    expectDataError([&] { readIdxFile(path, 3); }, {path, "rank 3", "rank 1"});
}

TEST_F(DataFiles, TrailingBytes)
{
    const auto path = (m_dir / "labels.idx").string();
    writePlain(path, idxBytes({4}, counting(6)));
    expectDataError([&] { readIdxFile(path, 1); }, {path, "4 labels", "2 bytes are left over"});
}

TEST_F(DataFiles, MissingFileAndNotAFile)
{
    const auto missing = (m_dir / "nothing.gz").string();
    expectDataError([&] { readIdxFile(missing); }, {missing, "not found"});
    fs::create_directories(m_dir / "adir.gz");
    const auto dir = (m_dir / "adir.gz").string();
    expectDataError([&] { readIdxFile(dir); }, {dir, "not a regular file"});
}

TEST_F(DataFiles, ImageLabelCountMismatch)
{
    writeMnistDir(12, 5);
    writeGzip(m_dir / "t10k-labels-idx1-ubyte.gz", idxBytes({4}, {0, 1, 2, 3}));
    expectDataError([&] { loadDatasets(mnistSpec(), 1); },
                    {"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", "5 images", "4 labels"});
}

TEST_F(DataFiles, LabelOutOfRange)
{
    writeMnistDir(12, 5);
    writeGzip(m_dir / "t10k-labels-idx1-ubyte.gz", idxBytes({5}, {0, 1, 12, 3, 4}));
    expectDataError([&] { loadDatasets(mnistSpec(), 1); }, {"t10k-labels-idx1-ubyte.gz", "label 12", "0..9"});
}

TEST_F(DataFiles, MissingFileInDirectory)
{
    writeMnistDir(12, 5);
    fs::remove(m_dir / "train-labels-idx1-ubyte.gz");
    expectDataError([&] { loadDatasets(mnistSpec(), 1); }, {"train-labels-idx1-ubyte.gz", "not found"});
}

TEST_F(DataFiles, MissingDirectoryExplainsTheWayOut)
{
    DataSpec spec = mnistSpec();
    spec.directory = (m_dir / "no-such-dir").string();
    expectDataError([&] { loadDatasets(spec, 1); },
                    {spec.directory, "data.directory", "MANTISSA_DATA_DIR", "scripts/setup", "dataset-fashion-mnist"});
    writePlain(m_dir / "a-file", {1});
    spec.directory = (m_dir / "a-file").string();
    expectDataError([&] { loadDatasets(spec, 1); }, {spec.directory, "not a directory"});
}

TEST_F(DataFiles, DirectoryResolution)
{
    DataSpec spec;
    spec.dataset = DatasetKind::Mnist;
    ::unsetenv("MANTISSA_DATA_DIR");
    EXPECT_EQ(resolveDataDirectory(spec).path, "/usr/share/datasets/mnist");
    spec.dataset = DatasetKind::FashionMnist;
    EXPECT_EQ(resolveDataDirectory(spec).path, "/usr/share/datasets/fashion-mnist");
    ::setenv("MANTISSA_DATA_DIR", m_dir.c_str(), 1);
    EXPECT_EQ(resolveDataDirectory(spec).path, m_dir.string());
    EXPECT_EQ(resolveDataDirectory(spec).origin, "MANTISSA_DATA_DIR");
    spec.directory = "/explicit";
    EXPECT_EQ(resolveDataDirectory(spec).path, "/explicit");
    EXPECT_EQ(resolveDataDirectory(spec).origin, "data.directory");
    ::unsetenv("MANTISSA_DATA_DIR");
}

TEST_F(DataFiles, LoadsMnistFormatScaledAndLimited)
{
    writeMnistDir(12, 5);
    writePlain(m_dir / "t10k-images-idx3-ubyte", {}); // ignored: the .gz wins
    DataSpec spec = mnistSpec();
    spec.limitTrain = 7;
    const DatasetSplits s = loadDatasets(spec, 3);
    EXPECT_EQ(s.train.size(), 7);
    EXPECT_EQ(s.test.size(), 5);
    EXPECT_EQ(s.validation.size(), 0);
    EXPECT_EQ(s.train.sampleShape, (Shape{1, 4, 4}));
    EXPECT_EQ(s.train.classes, 10);
    EXPECT_EQ(s.directory, m_dir.string());
    const Bytes raw = counting(12 * 16);
    for (std::size_t i = 0; i < s.train.inputs.size(); ++i)
        ASSERT_FLOAT_EQ(s.train.inputs[i], raw[i] / 255.0f) << i;
    for (std::int64_t i = 0; i < 7; ++i)
        EXPECT_EQ(s.train.labels[static_cast<std::size_t>(i)], static_cast<float>(i % 10));
}

TEST_F(DataFiles, ReadsUncompressedFilesWhenNoGzip)
{
    writeMnistDir(12, 5);
    fs::remove(m_dir / "t10k-images-idx3-ubyte.gz");
    writePlain(m_dir / "t10k-images-idx3-ubyte", idxBytes({5, 4, 4}, counting(5 * 16)));
    EXPECT_EQ(loadDatasets(mnistSpec(), 3).test.size(), 5);
}

// --- spec validation --------------------------------------------------------------------

TEST(DataSpecValidation, BadFieldsNameThemselves)
{
    DataSpec spec;
    spec.validationSplit = 1.5f;
    EXPECT_NE(configErrorOf([&] { validateDataSpec(spec); }).find("data.validationSplit: 1.5 is outside"),
              std::string::npos);
    spec = DataSpec{};
    spec.limitTrain = -1;
    EXPECT_NE(configErrorOf([&] { validateDataSpec(spec); }).find("data.limitTrain"), std::string::npos);
    spec = DataSpec{};
    spec.dataset = DatasetKind::Synthetic;
    spec.syntheticShape = {3, 0};
    EXPECT_NE(configErrorOf([&] { validateDataSpec(spec); }).find("data.syntheticShape"), std::string::npos);
    spec = DataSpec{};
    spec.dataset = DatasetKind::Synthetic;
    spec.syntheticTrain = 10;
    spec.validationSplit = 0.99f;
    EXPECT_NE(configErrorOf([&] { loadDatasets(spec, 1); }).find("leaves none to train on"), std::string::npos);
}

// --- splits and normalisation ---------------------------------------------------------

TEST(DataSplits, ValidationHoldOutSizesAndDisjointness)
{
    Dataset train = indexDataset(100);
    const Dataset val = holdOut(train, 20, 7, "index/validation");
    ASSERT_EQ(val.size(), 20);
    ASSERT_EQ(train.size(), 80);
    std::set<int> seen;
    for (const Dataset* d : {static_cast<const Dataset*>(&train), &val}) {
        float previous = -1;
        for (std::int64_t i = 0; i < d->size(); ++i) {
            const float id = d->sample(i)[0];
            EXPECT_EQ(d->sample(i)[2], id);                                          // samples stay whole
            EXPECT_EQ(d->labels[static_cast<std::size_t>(i)], std::fmod(id, 10.0f)); // with their labels
            EXPECT_GT(id, previous);                                                 // original order kept
            previous = id;
            EXPECT_TRUE(seen.insert(static_cast<int>(id)).second) << "sample " << id << " in both splits";
        }
    }
    EXPECT_EQ(seen.size(), 100u);
    // Seeded: the same seed holds out the same samples, another seed others.
    Dataset again = indexDataset(100);
    EXPECT_EQ(holdOut(again, 20, 7, "v").inputs, val.inputs);
    Dataset other = indexDataset(100);
    EXPECT_NE(holdOut(other, 20, 8, "v").inputs, val.inputs);
}

TEST(DataSplits, LoadDatasetsValidationFraction)
{
    DataSpec spec;
    spec.dataset = DatasetKind::Synthetic;
    spec.syntheticShape = {5};
    spec.syntheticTrain = 200;
    spec.syntheticTest = 50;
    spec.validationSplit = 0.1f;
    const DatasetSplits s = loadDatasets(spec, 11);
    EXPECT_EQ(s.train.size(), 180);
    EXPECT_EQ(s.validation.size(), 20);
    EXPECT_EQ(s.test.size(), 50);
    EXPECT_EQ(s.validation.name, "synthetic/validation");
    EXPECT_EQ(s.validation.sampleShape, (Shape{5}));
}

TEST(DataSplits, NormalisationStatistics)
{
    Dataset d = indexDataset(4, 1); // values 0, 1, 2, 3
    const Normalization n = computeNormalization(d);
    EXPECT_FLOAT_EQ(n.mean[0], 1.5f);
    EXPECT_FLOAT_EQ(n.std[0], std::sqrt(1.25f));
    applyNormalization(d, n);
    EXPECT_FLOAT_EQ(d.inputs[0], -1.5f / std::sqrt(1.25f));
    EXPECT_FLOAT_EQ(d.inputs[3], 1.5f / std::sqrt(1.25f));
    // Constant data: centred, not divided by zero.
    Dataset flat = indexDataset(1, 4);
    EXPECT_EQ(computeNormalization(flat).std[0], 1.0f);
}

TEST(DataSplits, NormalisationUsesTrainStatisticsOnly)
{
    DataSpec spec;
    spec.dataset = DatasetKind::Synthetic;
    spec.syntheticShape = {8};
    spec.syntheticTrain = 300;
    spec.syntheticTest = 100;
    spec.validationSplit = 0.2f;
    spec.normalize = false;
    const DatasetSplits raw = loadDatasets(spec, 5);
    spec.normalize = true;
    const DatasetSplits norm = loadDatasets(spec, 5);
    const Normalization expected = computeNormalization(raw.train);
    EXPECT_EQ(norm.normalization.mean, expected.mean);
    EXPECT_EQ(norm.normalization.std, expected.std);
    const Normalization after = computeNormalization(norm.train);
    EXPECT_NEAR(after.mean[0], 0.0f, 1e-5f);
    EXPECT_NEAR(after.std[0], 1.0f, 1e-5f);
    for (const auto& [r, n] : {std::pair{&raw.validation, &norm.validation}, std::pair{&raw.test, &norm.test}})
        for (std::size_t i = 0; i < r->inputs.size(); i += 37)
            EXPECT_NEAR(n->inputs[i], (r->inputs[i] - expected.mean[0]) / expected.std[0], 1e-5f);
}

// --- synthetic data ---------------------------------------------------------------------

TEST(SyntheticData, DeterministicFromSeed)
{
    const Shape shape{2, 3, 3};
    const Dataset a = makeSyntheticDataset(shape, 4, 50, 0.5f, 9, 0, "a");
    const Dataset b = makeSyntheticDataset(shape, 4, 50, 0.5f, 9, 0, "b");
    EXPECT_EQ(a.inputs, b.inputs);
    EXPECT_EQ(a.labels, b.labels);
    EXPECT_EQ(a.sampleShape, shape);
    EXPECT_EQ(a.classes, 4);
    EXPECT_NE(makeSyntheticDataset(shape, 4, 50, 0.5f, 10, 0, "c").inputs, a.inputs);
    EXPECT_NE(makeSyntheticDataset(shape, 4, 50, 0.5f, 9, 1, "test").inputs, a.inputs);
    // A prefix of a larger set is the smaller set (limits do not change the samples).
    const Dataset big = makeSyntheticDataset(shape, 4, 80, 0.5f, 9, 0, "big");
    EXPECT_TRUE(std::equal(a.inputs.begin(), a.inputs.end(), big.inputs.begin()));
    std::vector<int> histogram(4);
    for (float label : a.labels)
        ++histogram[static_cast<std::size_t>(label)];
    EXPECT_EQ(histogram, (std::vector<int>{13, 13, 12, 12}));
}

TEST(SyntheticData, IsLearnable)
{
    // Class means of the training split classify the test split: train and test share the
    // prototypes, so a model has something to learn.
    const Shape shape{64};
    const std::int64_t classes = 5;
    const Dataset train = makeSyntheticDataset(shape, classes, 500, 2.0f, 3, 0, "train");
    const Dataset test = makeSyntheticDataset(shape, classes, 200, 2.0f, 3, 1, "test");
    std::vector<double> means(static_cast<std::size_t>(classes * 64));
    for (std::int64_t i = 0; i < train.size(); ++i) {
        const auto c = static_cast<std::int64_t>(train.labels[static_cast<std::size_t>(i)]);
        for (int j = 0; j < 64; ++j)
            means[static_cast<std::size_t>(c * 64 + j)] += train.sample(i)[j] / 100.0;
    }
    int correct = 0;
    for (std::int64_t i = 0; i < test.size(); ++i) {
        double best = 1e300;
        std::int64_t bestClass = -1;
        for (std::int64_t c = 0; c < classes; ++c) {
            double d = 0;
            for (int j = 0; j < 64; ++j)
                d += std::pow(test.sample(i)[j] - means[static_cast<std::size_t>(c * 64 + j)], 2);
            if (d < best)
                best = d, bestClass = c;
        }
        correct += bestClass == static_cast<std::int64_t>(test.labels[static_cast<std::size_t>(i)]);
    }
    EXPECT_GT(correct, 190);
}

// --- batches ------------------------------------------------------------------------------

TEST(BatchLoaderTest, ShuffleIsSeededAndChangesPerEpoch)
{
    const Dataset d = indexDataset(50);
    BatchLoader a(d, BatchLoaderOptions::training(8, 42));
    BatchLoader b(d, BatchLoaderOptions::training(8, 42));
    BatchLoader c(d, BatchLoaderOptions::training(8, 43));
    const auto epoch0 = a.order();
    EXPECT_EQ(b.order(), epoch0);
    EXPECT_NE(c.order(), epoch0);
    auto sorted = epoch0;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::int64_t> identity(50);
    std::iota(identity.begin(), identity.end(), 0);
    EXPECT_EQ(sorted, identity);
    EXPECT_NE(epoch0, identity);
    a.startEpoch(1);
    EXPECT_NE(a.order(), epoch0);
    b.startEpoch(1);
    EXPECT_EQ(a.order(), b.order());
    a.startEpoch(0);
    EXPECT_EQ(a.order(), epoch0); // an epoch's order is a function of (seed, epoch) alone
}

TEST(BatchLoaderTest, TrainingDropsThePartialBatch)
{
    const Dataset d = indexDataset(50);
    BatchLoader loader(d, BatchLoaderOptions::training(8, 1));
    EXPECT_EQ(loader.batchesPerEpoch(), 6);
    EXPECT_EQ(loader.samplesPerEpoch(), 48);
    HostBatch batch;
    std::set<float> seen;
    int batches = 0;
    while (loader.next(batch)) {
        ++batches;
        ASSERT_EQ(batch.size, 8);
        EXPECT_EQ(batch.inputShape, (Shape{8, 3}));
        ASSERT_EQ(batch.inputs.size(), 24u);
        for (std::int64_t i = 0; i < 8; ++i) {
            const float id = batch.inputs[static_cast<std::size_t>(i * 3)];
            EXPECT_EQ(id, static_cast<float>(loader.order()[static_cast<std::size_t>((batches - 1) * 8 + i)]));
            EXPECT_EQ(batch.labels[static_cast<std::size_t>(i)], std::fmod(id, 10.0f));
            seen.insert(id);
        }
    }
    EXPECT_EQ(batches, 6);
    EXPECT_EQ(seen.size(), 48u);
    EXPECT_EQ(batch.size, 0);
}

TEST(BatchLoaderTest, EvaluationKeepsThePartialBatchInOrder)
{
    const Dataset d = indexDataset(50);
    BatchLoader loader(d, BatchLoaderOptions::evaluation(16));
    EXPECT_EQ(loader.batchesPerEpoch(), 4);
    HostBatch batch;
    std::vector<float> ids;
    while (loader.next(batch))
        for (std::int64_t i = 0; i < batch.size; ++i)
            ids.push_back(batch.inputs[static_cast<std::size_t>(i * 3)]);
    EXPECT_EQ(batch.size, 0);
    ASSERT_EQ(ids.size(), 50u);
    for (std::size_t i = 0; i < ids.size(); ++i)
        EXPECT_EQ(ids[i], static_cast<float>(i));
    loader.seek(3);
    ASSERT_TRUE(loader.next(batch));
    EXPECT_EQ(batch.size, 2);
    EXPECT_EQ(batch.inputShape, (Shape{2, 3}));
}

TEST(BatchLoaderTest, BatchLargerThanTrainingSetIsAConfigError)
{
    const Dataset d = indexDataset(5);
    EXPECT_NE(configErrorOf([&] { BatchLoader(d, BatchLoaderOptions::training(8, 1)); }).find("index"),
              std::string::npos);
    EXPECT_NE(configErrorOf([&] { BatchLoader(d, BatchLoaderOptions::evaluation(0)); }).find("batch size"),
              std::string::npos);
    EXPECT_EQ(BatchLoader(d, BatchLoaderOptions::evaluation(8)).batchesPerEpoch(), 1);
}

// --- the real dataset ----------------------------------------------------------------------

TEST(FashionMnist, LoadsTheDebianPackage)
{
    const std::string dir = "/usr/share/datasets/fashion-mnist";
    if (!fs::exists(fs::path(dir) / "train-images-idx3-ubyte.gz"))
        GTEST_SKIP() << dir << " is missing: scripts/setup installs the Debian package dataset-fashion-mnist";
    DataSpec spec;
    spec.directory = dir;
    const DatasetSplits s = loadDatasets(spec, 42);
    EXPECT_EQ(s.train.size(), 60000);
    EXPECT_EQ(s.test.size(), 10000);
    EXPECT_EQ(s.train.classes, 10);
    EXPECT_EQ(s.train.sampleShape, (Shape{1, 28, 28}));
    for (const Dataset* d : {&s.train, &s.test}) {
        std::vector<int> histogram(10);
        for (float label : d->labels)
            ++histogram[static_cast<std::size_t>(label)];
        EXPECT_EQ(histogram, std::vector<int>(10, static_cast<int>(d->size() / 10))) << d->name;
    }
    // The well-known Fashion-MNIST pixel statistics.
    EXPECT_NEAR(s.normalization.mean[0], 0.2860f, 1e-3f);
    EXPECT_NEAR(s.normalization.std[0], 0.3530f, 1e-3f);
}

// Whether a model takes its data is known before any file is read, in the engine: the
// workbench's Run button asks here rather than restating the shapes.
TEST(DataModelMismatch, EveryPresetFitsAndAMismatchNamesBothSides)
{
    for (const std::string& name : mantissa::presetNames())
        EXPECT_FALSE(mantissa::dataModelMismatch(mantissa::presetConfig(name))) << name;
    mantissa::RunConfig gpt = mantissa::presetConfig("char-gpt");
    gpt.data.context = 64;
    const std::optional<std::string> text = mantissa::dataModelMismatch(gpt);
    ASSERT_TRUE(text);
    EXPECT_NE(text->find("data.context = 64"), std::string::npos) << *text;
    EXPECT_NE(text->find("[64]"), std::string::npos) << *text;
    mantissa::RunConfig mlp = mantissa::presetConfig("mlp");
    mlp.model.classes = 12;
    EXPECT_EQ(mantissa::dataModelMismatch(mlp),
              "fashion-mnist has 1x28x28 images in 10 classes; set model.input to [1, 28, 28] and classes to 10");
    mantissa::RunConfig synthetic = mlp;
    synthetic.data.dataset = mantissa::DatasetKind::Synthetic;
    synthetic.data.syntheticShape = {1, 8, 8};
    EXPECT_EQ(mantissa::dataModelMismatch(synthetic),
              "data.synthetic_shape differs from model.input; set both to the same shape");
}

// The rules beyond the JSON's types are the same whether a config is parsed or edited in memory.
TEST(ValidateRunConfig, TheParsersRulesForAConfigInMemory)
{
    mantissa::RunConfig c = mantissa::presetConfig("mlp");
    EXPECT_NO_THROW(mantissa::validateRunConfig(c, "edited"));
    c.training.batchSize = 0;
    try {
        mantissa::validateRunConfig(c, "edited");
        FAIL() << "batch size 0 accepted";
    } catch (const mantissa::ConfigError& e) {
        EXPECT_STREQ(e.what(), "edited: training.batch_size must be 1 to 65536 samples (got 0)");
    }
    c = mantissa::presetConfig("mlp");
    c.numerics.every = mantissa::kMaxNumericsEvery + 1;
    EXPECT_THROW(mantissa::validateRunConfig(c, "edited"), mantissa::ConfigError);
    // Parsing applies the same rule to the same config.
    EXPECT_THROW(mantissa::parseRunConfig(mantissa::runConfigToJson(c), "file"), mantissa::ConfigError);
}
