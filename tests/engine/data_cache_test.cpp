// The decoded-data cache (engine/data/data_cache.h): a load from the cache gives the tensors
// and the fingerprint a decoding gives, bit for bit; every setting that shapes the tensors and
// every change to the files misses; a damaged copy is rebuilt, never trusted; a cache that is
// off writes nothing; the size limit holds; processes filling one cache at once do not damage it.
#include "engine/config/run_config.h"
#include "engine/data/data_cache.h"
#include "engine/data/dataset.h"
#include "engine/data/image_file.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace mantissa;
namespace fs = std::filesystem;

namespace {

std::string npyBytes(const std::string& descr, const std::string& shape, const std::string& data)
{
    std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + header.size() + 1) % 64 != 0)
        header += ' ';
    header += '\n';
    std::string out = "\x93NUMPY";
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    return out + header + data;
}

template <typename T>
std::string rawBytes(const std::vector<T>& values)
{
    return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

void writeText(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// `rows` samples of `features` float32 values and integer labels in 3 classes; `salt` changes
// the values, not the sizes.
void writeArrays(const fs::path& dir, int rows, int features, int salt = 0)
{
    std::vector<float> x;
    std::vector<std::int64_t> y;
    for (int r = 0; r < rows; ++r) {
        for (int k = 0; k < features; ++k)
            x.push_back(static_cast<float>((r * 31 + k * 17 + salt) % 101) / 7.0f - 3.0f);
        y.push_back(r % 3);
    }
    const std::string shape = "(" + std::to_string(rows) + ", " + std::to_string(features) + ")";
    writeText(dir / "x.npy", npyBytes("<f4", shape, rawBytes(x)));
    writeText(dir / "y.npy", npyBytes("<i8", "(" + std::to_string(rows) + ",)", rawBytes(y)));
}

// Two classes of grey images of 6x8, the second class's of another size.
void writeImages(const fs::path& root, int perClass)
{
    for (int c = 0; c < 2; ++c) {
        fs::create_directories(root / ("class" + std::to_string(c)));
        for (int i = 0; i < perClass; ++i) {
            const int height = c == 0 ? 6 : 9, width = c == 0 ? 8 : 7;
            Image image{width, height, 1, {}};
            for (int p = 0; p < width * height; ++p)
                image.pixels.push_back(static_cast<std::uint8_t>((p * 13 + i * 29 + c * 71) % 256));
            writePngFile((root / ("class" + std::to_string(c)) / (std::to_string(i) + ".png")).string(), image);
        }
    }
}

void expectSameDataset(const Dataset& a, const Dataset& b)
{
    EXPECT_EQ(a.sampleShape, b.sampleShape) << a.name;
    EXPECT_EQ(a.labelShape, b.labelShape) << a.name;
    EXPECT_EQ(a.classes, b.classes) << a.name;
    EXPECT_EQ(a.name, b.name);
    ASSERT_EQ(a.inputs.size(), b.inputs.size()) << a.name;
    ASSERT_EQ(a.labels.size(), b.labels.size()) << a.name;
    // Bit for bit, not within a tolerance: the cache keeps the floats it was given.
    EXPECT_EQ(std::memcmp(a.inputs.data(), b.inputs.data(), a.inputs.size() * sizeof(float)), 0) << a.name;
    EXPECT_EQ(std::memcmp(a.labels.data(), b.labels.data(), a.labels.size() * sizeof(float)), 0) << a.name;
}

void expectSameSplits(const DatasetSplits& a, const DatasetSplits& b)
{
    expectSameDataset(a.train, b.train);
    expectSameDataset(a.validation, b.validation);
    expectSameDataset(a.test, b.test);
    EXPECT_EQ(a.fingerprint, b.fingerprint);
    EXPECT_EQ(a.normalization.mean, b.normalization.mean);
    EXPECT_EQ(a.normalization.std, b.normalization.std);
    EXPECT_EQ(a.task, b.task);
    EXPECT_EQ(a.classNames, b.classNames);
}

// The files of `dir` whose names end with `ending` (or, with `anywhere`, hold it).
std::size_t cacheFiles(const fs::path& dir, const std::string& ending = ".mantissa-data", bool anywhere = false)
{
    std::size_t n = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        n += (anywhere ? name.find(ending) != std::string::npos : name.ends_with(ending)) ? 1 : 0;
    }
    return n;
}

class DataCache : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_dir = fs::temp_directory_path() / ("mantissa-data-cache-test-" + std::to_string(::getpid()) + "-" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(m_dir);
        fs::create_directories(m_dir / "data");
        ::setenv("XDG_CACHE_HOME", (m_dir / "cache").c_str(), 1);
        m_cache = m_dir / "cache" / "mantissa" / "data";
    }
    void TearDown() override { fs::remove_all(m_dir); }

    DataSpec spec(const fs::path& path) const
    {
        DataSpec s;
        s.dataset = DatasetKind::Files;
        s.path = path.string();
        return s;
    }
    // The load as decoding gives it, with the cache off.
    static DatasetSplits cold(DataSpec s, std::uint64_t seed = 1)
    {
        s.cache = false;
        return loadDatasets(s, seed);
    }
    // The one cache file there is.
    fs::path onlyCacheFile() const
    {
        for (const auto& entry : fs::directory_iterator(m_cache))
            if (entry.path().extension() == ".mantissa-data")
                return entry.path();
        ADD_FAILURE() << "no cache file in " << m_cache;
        return {};
    }

    fs::path m_dir, m_cache;
};

TEST_F(DataCache, AHitGivesTheTensorsAndFingerprintOfADecodingBitForBit)
{
    writeImages(m_dir / "data" / "images", 5);
    writeArrays(m_dir / "data", 40, 6);
    writeText(m_dir / "data" / "table.csv", "a,b,label\n1,2,0\n3,4.5,1\n-1,0.25,0\n7,8,1\n2,2,0\n9,1,1\n");
    for (const fs::path& path : {m_dir / "data" / "images", m_dir / "data" / "x.npy", m_dir / "data" / "table.csv"}) {
        SCOPED_TRACE(path.string());
        DataSpec s = spec(path);
        s.validationSplit = 0.25f; // the seed-dependent steps run after the cache
        s.imageSize = {6, 8};
        const DatasetSplits decoded = cold(s);
        const DatasetSplits first = loadDatasets(s, 1);
        EXPECT_FALSE(first.fromCache);
        expectSameSplits(decoded, first);
        ASSERT_EQ(first.notes.size(), decoded.notes.size() + 1);
        EXPECT_NE(first.notes.back().find("decoded and kept in the decoded-data cache"), std::string::npos)
            << first.notes.back();

        const DatasetSplits again = loadDatasets(s, 1);
        EXPECT_TRUE(again.fromCache);
        expectSameSplits(decoded, again);
        EXPECT_NE(again.notes.back().find("read from the decoded-data cache"), std::string::npos) << again.notes.back();
        // Another seed shares the copy (its validation hold-out is drawn after it).
        const DatasetSplits otherSeed = loadDatasets(s, 2);
        EXPECT_TRUE(otherSeed.fromCache);
        expectSameSplits(cold(s, 2), otherSeed);
    }
    EXPECT_EQ(cacheFiles(m_cache), 3u);
}

TEST_F(DataCache, EverySettingThatShapesTheTensorsMisses)
{
    writeImages(m_dir / "data" / "images", 4);
    writeText(m_dir / "data" / "table.csv", "1,2,0,5\n3,4,1,6\n5,6,0,7\n7,8,1,8\n9,10,0,9\n11,12,1,1\n");
    const DataSpec images = spec(m_dir / "data" / "images");
    const DataSpec table = spec(m_dir / "data" / "table.csv");
    const std::vector<std::pair<std::string, std::function<void(DataSpec&)>>> imageChanges = {
        {"test_split", [](DataSpec& s) { s.testSplit = 0.5f; }},
        {"image_size",
         [](DataSpec& s) {
             s.imageSize = {5, 5};
         }},
        {"image_fit", [](DataSpec& s) { s.imageFit = ImageFit::Crop; }},
        {"skip_bad_images", [](DataSpec& s) { s.skipBadImages = true; }},
        {"limit_train", [](DataSpec& s) { s.limitTrain = 3; }},
        {"limit_test", [](DataSpec& s) { s.limitTest = 1; }},
        {"format", [](DataSpec& s) { s.format = DataFormat::ImageFolder; }},
    };
    const std::vector<std::pair<std::string, std::function<void(DataSpec&)>>> tableChanges = {
        {"header", [](DataSpec& s) { s.header = TableHeader::No; }},
        {"label_column", [](DataSpec& s) { s.labelColumn = 3; }},
        {"task", [](DataSpec& s) { s.task = DataTask::Regression; }},
        {"targets", [](DataSpec& s) { s.targets = 2, s.task = DataTask::Regression; }},
    };
    for (const auto& [base, changes] : {std::pair{images, imageChanges}, std::pair{table, tableChanges}}) {
        loadDatasets(base, 1);
        ASSERT_TRUE(loadDatasets(base, 1).fromCache);
        for (const auto& [name, change] : changes) {
            SCOPED_TRACE(name);
            DataSpec changed = base;
            change(changed);
            EXPECT_NE(dataCacheKey(changed), dataCacheKey(base));
            const DatasetSplits loaded = loadDatasets(changed, 1);
            EXPECT_FALSE(loaded.fromCache);
            expectSameSplits(cold(changed), loaded);
            EXPECT_TRUE(loadDatasets(base, 1).fromCache); // each setting has its own copy
        }
    }
}

TEST_F(DataCache, NormalisationAndTheValidationSplitAreAppliedAfterTheCopy)
{
    writeArrays(m_dir / "data", 60, 4);
    DataSpec s = spec(m_dir / "data" / "x.npy");
    loadDatasets(s, 1);
    const std::vector<std::function<void(DataSpec&)>> changes = {
        [](DataSpec& c) { c.normalize = false; },
        [](DataSpec& c) { c.perChannel = false; },
        [](DataSpec& c) { c.validationSplit = 0.3f; },
    };
    for (std::size_t i = 0; i < changes.size(); ++i) {
        SCOPED_TRACE(i);
        DataSpec changed = s;
        changes[i](changed);
        const DatasetSplits loaded = loadDatasets(changed, 1);
        EXPECT_TRUE(loaded.fromCache); // the same decoded tensors...
        const DatasetSplits decoded = cold(changed);
        expectSameSplits(decoded, loaded); // ...prepared as this load asks, fingerprint included
        EXPECT_NE(loaded.fingerprint, cold(s).fingerprint);
    }
}

TEST_F(DataCache, AChangedFileOrFolderMisses)
{
    const fs::path dir = m_dir / "data";
    writeArrays(dir, 30, 5);
    const DataSpec arrays = spec(dir / "x.npy");
    loadDatasets(arrays, 1);
    ASSERT_TRUE(loadDatasets(arrays, 1).fromCache);
    // The same size, rewritten at once: a timestamp may not tell, the content does.
    writeArrays(dir, 30, 5, 1);
    DatasetSplits loaded = loadDatasets(arrays, 1);
    EXPECT_FALSE(loaded.fromCache);
    expectSameSplits(cold(arrays), loaded);
    // A test pair appearing beside the arrays changes what is read.
    fs::create_directories(dir / "other");
    writeArrays(dir / "other", 10, 5, 2);
    fs::rename(dir / "other" / "x.npy", dir / "x_test.npy");
    fs::rename(dir / "other" / "y.npy", dir / "y_test.npy");
    loaded = loadDatasets(arrays, 1);
    EXPECT_FALSE(loaded.fromCache);
    EXPECT_EQ(loaded.test.size(), 10);

    const fs::path root = dir / "images";
    writeImages(root, 3);
    const DataSpec images = spec(root);
    loadDatasets(images, 1);
    ASSERT_TRUE(loadDatasets(images, 1).fromCache);
    writePngFile((root / "class1" / "new.png").string(), Image{7, 9, 1, std::vector<std::uint8_t>(63, 200)});
    loaded = loadDatasets(images, 1);
    EXPECT_FALSE(loaded.fromCache);
    EXPECT_EQ(loaded.train.size() + loaded.test.size(), 7);
    expectSameSplits(cold(images), loaded);
}

TEST_F(DataCache, ADamagedCopyIsRebuiltNeverTrusted)
{
    writeArrays(m_dir / "data", 50, 8);
    const DataSpec s = spec(m_dir / "data" / "x.npy");
    const DatasetSplits decoded = cold(s);
    loadDatasets(s, 1);
    const fs::path file = onlyCacheFile();
    const auto size = fs::file_size(file);
    const std::vector<std::pair<std::string, std::function<void()>>> damages = {
        {"a flipped bit in the tensors",
         [&] {
             std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
             f.seekg(static_cast<std::streamoff>(size - 100));
             char c;
             f.get(c);
             f.seekp(static_cast<std::streamoff>(size - 100));
             f.put(static_cast<char>(c ^ 4));
         }},
        {"a flipped bit in the metadata",
         [&] {
             std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
             f.seekg(80);
             char c;
             f.get(c);
             f.seekp(80);
             f.put(static_cast<char>(c ^ 1));
         }},
        {"truncated", [&] { fs::resize_file(file, size - 37); }},
        {"cut inside the header", [&] { fs::resize_file(file, 20); }},
        {"not a cache file", [&] { writeText(file, std::string(200, 'x')); }},
    };
    for (const auto& [name, damage] : damages) {
        SCOPED_TRACE(name);
        ASSERT_TRUE(loadDatasets(s, 1).fromCache);
        damage();
        const DatasetSplits loaded = loadDatasets(s, 1);
        EXPECT_FALSE(loaded.fromCache);
        expectSameSplits(decoded, loaded);
        EXPECT_NE(loaded.notes.back().find("ignored and rebuilt"), std::string::npos) << loaded.notes.back();
        EXPECT_NE(loaded.notes.back().find(file.string()), std::string::npos) << loaded.notes.back();
        EXPECT_EQ(fs::file_size(file), size); // rebuilt whole
    }
    EXPECT_TRUE(loadDatasets(s, 1).fromCache);
}

TEST_F(DataCache, ACacheThatIsOffWritesNothing)
{
    writeArrays(m_dir / "data", 20, 3);
    DataSpec s = spec(m_dir / "data" / "x.npy");
    s.cache = false;
    for (int i = 0; i < 2; ++i)
        EXPECT_FALSE(loadDatasets(s, 1).fromCache);
    EXPECT_FALSE(fs::exists(m_dir / "cache"));
}

TEST_F(DataCache, TheSizeLimitHolds)
{
    // 300 x 600 float32: 0.7 MiB a source.
    for (const char* name : {"a", "b"}) {
        fs::create_directories(m_dir / "data" / name);
        writeArrays(m_dir / "data" / name, 300, 600, name[0]);
    }
    DataSpec a = spec(m_dir / "data" / "a" / "x.npy"), b = spec(m_dir / "data" / "b" / "x.npy");
    a.cacheLimit = b.cacheLimit = 1;
    loadDatasets(a, 1);
    EXPECT_TRUE(loadDatasets(a, 1).fromCache);
    loadDatasets(b, 1); // the older copy goes to make room, with its lock file
    EXPECT_EQ(cacheFiles(m_cache), 1u);
    EXPECT_EQ(cacheFiles(m_cache, ".lock"), 1u);
    EXPECT_TRUE(loadDatasets(b, 1).fromCache);
    EXPECT_FALSE(loadDatasets(a, 1).fromCache);

    fs::create_directories(m_dir / "data" / "c");
    writeArrays(m_dir / "data" / "c", 600, 600);
    DataSpec c = spec(m_dir / "data" / "c" / "x.npy");
    c.cacheLimit = 1;
    const DatasetSplits big = loadDatasets(c, 1);
    EXPECT_NE(big.notes.back().find("not cached"), std::string::npos) << big.notes.back();
    EXPECT_NE(big.notes.back().find("data.cache_limit"), std::string::npos) << big.notes.back();
    EXPECT_FALSE(loadDatasets(c, 1).fromCache);
}

TEST_F(DataCache, ProcessesFillingOneCacheAtOnceDoNotDamageIt)
{
    writeImages(m_dir / "data" / "images", 30);
    const DataSpec s = spec(m_dir / "data" / "images");
    const DatasetSplits decoded = cold(s);
    std::vector<pid_t> children;
    for (int child = 0; child < 3; ++child) {
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            // Each load either decodes and writes the copy or reads a whole one.
            int status = 0;
            for (int i = 0; i < 4; ++i) {
                const DatasetSplits loaded = loadDatasets(s, 1);
                status |=
                    loaded.fingerprint == decoded.fingerprint && loaded.train.inputs == decoded.train.inputs ? 0 : 1;
                if (i == 1) // a damaged-looking moment for the others: the copy replaced while they read
                    fs::remove(dataCacheFile(dataCacheDirectory(), dataCacheKey(s)));
            }
            ::_exit(status);
        }
        children.push_back(pid);
    }
    for (pid_t pid : children) {
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    EXPECT_EQ(cacheFiles(m_cache), 1u);
    EXPECT_EQ(cacheFiles(m_cache, ".tmp-", true), 0u); // no writer left a temporary file
    const DatasetSplits loaded = loadDatasets(s, 1);
    EXPECT_TRUE(loaded.fromCache);
    expectSameSplits(decoded, loaded);
}

} // namespace
