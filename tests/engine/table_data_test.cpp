// Tables as your own data: a gzip-compressed CSV reads as the CSV it holds, a broken one is
// named, and the data summary reports a normalised table's values as they are in the file.
#include "engine/config/run_config.h"
#include "engine/data/data_summary.h"
#include "engine/data/dataset.h"
#include "engine/data/file_dataset.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

using namespace mantissa;
namespace fs = std::filesystem;

namespace {

class TableData : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_dir = fs::temp_directory_path() / ("mantissa-table-data-test-" + std::to_string(::getpid()) + "-" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(m_dir);
        fs::create_directories(m_dir);
    }
    void TearDown() override { fs::remove_all(m_dir); }

    fs::path write(const std::string& name, const std::string& text) const
    {
        const fs::path path = m_dir / name;
        std::ofstream(path, std::ios::binary) << text;
        return path;
    }
    fs::path writeGzip(const std::string& name, const std::string& text) const
    {
        const fs::path path = m_dir / name;
        gzFile file = gzopen(path.string().c_str(), "wb");
        EXPECT_NE(file, nullptr);
        EXPECT_EQ(gzwrite(file, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
        gzclose(file);
        return path;
    }
    static DataSpec filesSpec(const fs::path& path)
    {
        DataSpec spec;
        spec.dataset = DatasetKind::Files;
        spec.path = path.string();
        return spec;
    }

    fs::path m_dir;
};

std::string dataErrorOf(const DataSpec& spec)
{
    try {
        loadDatasets(spec, 1);
    } catch (const DataError& e) {
        return e.what();
    }
    return "(no DataError)";
}

// 40 rows: a column from 0 (twice in every ten rows) and one of values with no short binary
// form, a class label last; Windows line ends on some rows and no newline after the last.
std::string sampleTable()
{
    std::string text = "a,b,label\n";
    for (int i = 0; i < 40; ++i)
        text += std::to_string(i % 5 == 0 ? 0 : i) + "," + std::to_string(52.8 - 1.3 * i) + "," +
                std::to_string(i % 3) + (i % 7 == 0 ? "\r\n" : "\n");
    text.pop_back();
    return text;
}

} // namespace

TEST_F(TableData, AGzipCompressedCsvReadsAsTheCsvItHolds)
{
    const std::string text = sampleTable();
    const fs::path plain = write("t.csv", text), packed = writeGzip("t.csv.gz", text);
    ASSERT_EQ(resolveDataFormat(packed.string(), DataFormat::Auto), DataFormat::Csv);
    const DatasetSplits a = loadDatasets(filesSpec(plain), 1), b = loadDatasets(filesSpec(packed), 1);
    EXPECT_EQ(a.train.inputs, b.train.inputs);
    EXPECT_EQ(a.train.labels, b.train.labels);
    EXPECT_EQ(a.test.inputs, b.test.inputs);
    EXPECT_EQ(a.fingerprint, b.fingerprint);
    EXPECT_EQ(a.train.size() + a.test.size(), 40);
    // A compressed TSV goes by its inner extension too, and a problem names the line as ever.
    const fs::path tsv = writeGzip("t.tsv.gz", "1\t2\t0\n3\tx\t1\n");
    EXPECT_EQ(resolveDataFormat(tsv.string(), DataFormat::Auto), DataFormat::Tsv);
    const std::string message = dataErrorOf(filesSpec(tsv));
    EXPECT_NE(message.find(tsv.string() + ":2: "), std::string::npos) << message;
}

TEST_F(TableData, ABrokenGzipStreamIsNamed)
{
    std::string text;
    for (int i = 0; i < 20000; ++i)
        text += std::to_string(i) + "," + std::to_string(i * 7 % 13) + "," + std::to_string(i % 2) + "\n";
    const fs::path whole = writeGzip("whole.csv.gz", text);
    std::ifstream in(whole, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(bytes.size(), 1000u);
    const fs::path cut = write("cut.csv.gz", bytes.substr(0, bytes.size() / 2));
    std::string message = dataErrorOf(filesSpec(cut));
    EXPECT_NE(message.find(cut.string() + ": the gzip stream breaks off"), std::string::npos) << message;
    std::string corrupt = bytes;
    for (std::size_t i = 20; i < 200; ++i)
        corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
    const fs::path bad = write("bad.csv.gz", corrupt);
    message = dataErrorOf(filesSpec(bad));
    EXPECT_NE(message.find(bad.string() + ": the gzip stream"), std::string::npos) << message;
}

TEST_F(TableData, TheSummaryReportsANormalisedTablesValuesAsInTheFile)
{
    // Undoing (x - mean) / std in float does not give x back: 0 came back as 9.8585e-09 and
    // values such as 52.8 a float away. The summary takes the ranges before normalising.
    const fs::path table = write("t.csv", sampleTable());
    DataSpec spec = filesSpec(table);
    spec.normalize = false;
    const DatasetSplits asRead = loadDatasets(spec, 1);
    const DataSummary expected = summarizeData(asRead, spec);
    ASSERT_EQ(expected.ranges.size(), 2u);
    EXPECT_EQ(expected.ranges[0].minimum, 0.0f);
    for (const bool perChannel : {true, false}) {
        SCOPED_TRACE(perChannel ? "per feature" : "one mean and std");
        spec.normalize = true;
        spec.perChannel = perChannel;
        const DatasetSplits normalised = loadDatasets(spec, 1);
        ASSERT_TRUE(normalised.normalized);
        ASSERT_NE(normalised.train.inputs, asRead.train.inputs);
        const DataSummary s = summarizeData(normalised, spec);
        ASSERT_EQ(s.ranges.size(), expected.ranges.size());
        EXPECT_EQ(s.featureCount, 2);
        for (std::size_t f = 0; f < s.ranges.size(); ++f) {
            EXPECT_EQ(s.ranges[f].name, expected.ranges[f].name);
            EXPECT_EQ(s.ranges[f].minimum, expected.ranges[f].minimum) << f;
            EXPECT_EQ(s.ranges[f].maximum, expected.ranges[f].maximum) << f;
            EXPECT_EQ(s.ranges[f].mean, expected.ranges[f].mean) << f;
        }
        const std::string text = dataSummaryText(s);
        // "feature 1", padded to 16, then the minimum right-aligned in 14: exactly 0.
        EXPECT_NE(text.find("feature 1" + std::string(7 + 13, ' ') + "0 "), std::string::npos) << text;
    }
}
