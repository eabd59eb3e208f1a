// Byte-level text data: reading files and directories, every way a corpus can be unusable,
// the windows (labels are the next byte), the splits and their batches.
#include "engine/data/batch_loader.h"
#include "engine/data/dataset.h"
#include "engine/data/text_corpus.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <unistd.h>

using namespace mantissa;
namespace fs = std::filesystem;

namespace {

class TempDir {
public:
    TempDir()
    {
        std::string pattern = (fs::temp_directory_path() / "text_corpus_test-XXXXXX").string();
        m_path = ::mkdtemp(pattern.data());
    }
    ~TempDir() { fs::remove_all(m_path); }
    fs::path path() const { return m_path; }
    std::string write(const std::string& name, const std::string& bytes) const
    {
        std::ofstream(m_path / name, std::ios::binary) << bytes;
        return (m_path / name).string();
    }

private:
    fs::path m_path;
};

std::string messageOf(const std::function<void()>& f)
{
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

std::string alphabetText(std::size_t bytes)
{
    std::string text;
    for (std::size_t i = 0; i < bytes; ++i)
        text.push_back(static_cast<char>('a' + i % 26));
    return text;
}

DataSpec textSpec(const std::string& path, std::int64_t context)
{
    DataSpec spec;
    spec.dataset = DatasetKind::Text;
    spec.directory = path;
    spec.context = context;
    return spec;
}

} // namespace

TEST(TextCorpus, ReadsAFileAsIs)
{
    TempDir dir;
    const std::string text = "Gr\xc3\xbc\xc3\x9f Gott\nline two\n"; // UTF-8 is taken byte by byte
    const TextCorpus corpus = readTextCorpus(dir.write("a.txt", text));
    EXPECT_EQ(corpus.text, text);
    EXPECT_EQ(corpus.files, 1);
}

TEST(TextCorpus, ReadsADirectoryInNameOrderWithoutFortuneMarkers)
{
    TempDir dir;
    dir.write("b", "second\n%\nthird");
    dir.write("a", "first\n%\n");
    dir.write("a.dat", std::string("\x00\x01\x02", 3)); // fortune's index: binary, skipped
    fs::create_symlink(dir.path() / "a", dir.path() / "a.u8");
    const TextCorpus corpus = readTextCorpus(dir.path().string());
    EXPECT_EQ(corpus.files, 2);
    EXPECT_EQ(corpus.text, "first\n\nsecond\n\nthird\n");
}

TEST(TextCorpus, UnusableInputNamesTheFileAndTheProblem)
{
    TempDir dir;
    const std::string missing = (dir.path() / "nope.txt").string();
    EXPECT_NE(messageOf([&] { readTextCorpus(missing); }).find(missing + ": text corpus not found"), std::string::npos);

    const std::string empty = dir.write("empty.txt", "");
    EXPECT_NE(messageOf([&] { readTextCorpus(empty); }).find("empty.txt: the text corpus is empty"), std::string::npos);

    const std::string binary = dir.write("image.png", std::string("\x89PNG\r\n\x1a\n\0\0", 10));
    // 0x89 is not UTF-8 either, but a NUL byte says "binary" more plainly.
    EXPECT_NE(
        messageOf([&] { readTextCorpus(binary); }).find("image.png: byte 8 is NUL; this looks like a binary file"),
        std::string::npos);

    const std::string nul = dir.write("nul.txt", std::string("abc\0def", 7));
    EXPECT_NE(messageOf([&] { readTextCorpus(nul); }).find("nul.txt: byte 3 is NUL"), std::string::npos);

    // Latin-1, a truncated sequence at the end, an overlong form and a UTF-16 surrogate.
    EXPECT_NE(messageOf([&] { readTextCorpus(dir.write("l1.txt", "caf\xe9 au lait")); }).find("byte 3 (value 233)"),
              std::string::npos);
    EXPECT_NE(messageOf([&] { readTextCorpus(dir.write("cut.txt", "ok \xe2\x82")); }).find("byte 3 (value 226)"),
              std::string::npos);
    EXPECT_NE(messageOf([&] { readTextCorpus(dir.write("long.txt", "\xc0\xaf")); }).find("byte 0 (value 192)"),
              std::string::npos);
    EXPECT_NE(messageOf([&] { readTextCorpus(dir.write("sur.txt", "x\xed\xa0\x80")); }).find("byte 1 (value 237)"),
              std::string::npos);

    TempDir emptyDir;
    EXPECT_NE(messageOf([&] { readTextCorpus(emptyDir.path().string()); }).find("holds no text files"),
              std::string::npos);
}

TEST(TextWindows, LabelsAreTheNextByte)
{
    const std::string text = alphabetText(1000);
    const Dataset d = randomTextWindows(text, 0, 1000, 16, 50, 7, 1, "t");
    ASSERT_EQ(d.size(), 50);
    EXPECT_EQ(d.sampleShape, Shape{16});
    EXPECT_EQ(d.labelShape, Shape{16});
    EXPECT_EQ(d.classes, 256);
    for (std::int64_t i = 0; i < d.size(); ++i)
        for (int t = 0; t < 16; ++t) {
            const float x = d.sample(i)[t], y = d.sampleLabels(i)[t];
            EXPECT_EQ(y, x == 'z' ? 'a' : x + 1) << "window " << i << " position " << t;
        }
}

TEST(TextWindows, RandomOffsetsDependOnTheSeedAndStayInTheirRange)
{
    std::string text;
    for (int i = 0; i < 4000; ++i)
        text.push_back(static_cast<char>(i % 251)); // byte value identifies the offset mod 251
    const auto firsts = [&](std::uint64_t seed) {
        const Dataset d = randomTextWindows(text, 1000, 3000, 8, 200, seed, 1, "t");
        std::vector<float> v;
        for (std::int64_t i = 0; i < d.size(); ++i)
            v.push_back(d.sample(i)[0]);
        return v;
    };
    EXPECT_EQ(firsts(3), firsts(3));
    EXPECT_NE(firsts(3), firsts(4));
    const std::vector<float> v = firsts(3);
    EXPECT_GT(std::set<float>(v.begin(), v.end()).size(), 100u) << "offsets should spread over the range";
}

TEST(TextWindows, TilesCoverTheRangeInOrder)
{
    const std::string text = alphabetText(100);
    const Dataset d = tiledTextWindows(text, 10, 60, 7, "t");
    // Windows need 8 bytes: offsets 10, 17, 24, 31, 38, 45, 52 (52 + 8 = 60).
    ASSERT_EQ(d.size(), 7);
    for (std::int64_t i = 0; i < d.size(); ++i)
        EXPECT_EQ(d.sample(i)[0], static_cast<float>('a' + (10 + 7 * i) % 26));
}

TEST(TextSplits, TestIsTheLastTenthValidationBeforeIt)
{
    TempDir dir;
    const std::string path = dir.write("corpus.txt", alphabetText(10000));
    DataSpec spec = textSpec(path, 32);
    spec.validationSplit = 0.1f;
    const DatasetSplits s = loadDatasets(spec, 42);
    EXPECT_EQ(s.directory, path);
    EXPECT_EQ(s.test.size(), 1000 / 32 - (1000 % 32 == 0 ? 1 : 0));
    EXPECT_EQ(s.validation.size(), 1000 / 32 - (1000 % 32 == 0 ? 1 : 0));
    EXPECT_EQ(s.train.size(), 8000 / 32);
    // Text is never normalised: token ids stay byte values.
    EXPECT_EQ(s.test.sample(0)[0], static_cast<float>('a' + 9000 % 26));
    EXPECT_EQ(s.validation.sample(0)[0], static_cast<float>('a' + 8000 % 26));
    spec.limitTrain = 10;
    spec.limitTest = 3;
    const DatasetSplits limited = loadDatasets(spec, 42);
    EXPECT_EQ(limited.train.size(), 10);
    EXPECT_EQ(limited.test.size(), 3);
}

TEST(TextSplits, TooShortForTheContextIsADataError)
{
    TempDir dir;
    const std::string path = dir.write("short.txt", alphabetText(500));
    const std::string message = messageOf([&] { loadDatasets(textSpec(path, 128), 1); });
    EXPECT_NE(message.find("short.txt: 500 bytes of text leave 50 for the test split"), std::string::npos) << message;
    EXPECT_NE(message.find("data.context 128"), std::string::npos) << message;
    EXPECT_NE(messageOf([&] { loadDatasets(textSpec(path, 0), 1); }).find("data.context: must be between 1 and 65536"),
              std::string::npos);
}

TEST(TextSplits, BatchesCarryASequenceOfLabelsPerSample)
{
    TempDir dir;
    const DatasetSplits s = loadDatasets(textSpec(dir.write("c.txt", alphabetText(5000)), 16), 9);
    BatchLoader loader(s.train, BatchLoaderOptions::training(8, 9));
    HostBatch batch;
    ASSERT_TRUE(loader.next(batch));
    EXPECT_EQ(batch.inputShape, (Shape{8, 16}));
    ASSERT_EQ(batch.labels.size(), 8u * 16u);
    for (int i = 0; i < 8; ++i)
        for (int t = 0; t + 1 < 16; ++t)
            EXPECT_EQ(batch.labels[static_cast<std::size_t>(i * 16 + t)],
                      batch.inputs[static_cast<std::size_t>(i * 16 + t + 1)]);

    // A validation hold-out by samples keeps each sample's labels with it.
    Dataset train = s.train;
    const Dataset held = holdOut(train, 5, 3, "held");
    EXPECT_EQ(held.size(), 5);
    EXPECT_EQ(train.size(), s.train.size() - 5);
    for (std::int64_t i = 0; i < held.size(); ++i)
        EXPECT_EQ(held.sampleLabels(i)[0], held.sample(i)[1]);
}

TEST(TextSplits, TheDefaultCorpusIsDebiansFortunes)
{
    if (!fs::exists(kDefaultTextCorpus))
        GTEST_SKIP() << kDefaultTextCorpus << " is missing: scripts/setup installs the Debian package fortunes";
    DataSpec spec = textSpec("", 128);
    const DatasetSplits s = loadDatasets(spec, 42);
    EXPECT_EQ(s.directory, kDefaultTextCorpus);
    // About 2 MB of English: thousands of windows of 128 bytes in each split.
    EXPECT_GT(s.train.size(), 10000);
    EXPECT_GT(s.test.size(), 1000);
}
