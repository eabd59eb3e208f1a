// The user's own data (engine/data/file_dataset.h): image folders, tables, NumPy arrays and IDX
// files of any shape, read into the same tensors as the built-in loader where both can read
// the data, and every kind of bad input reported with the file and the place.
#include "engine/config/run_config.h"
#include "engine/data/dataset.h"
#include "engine/data/file_dataset.h"
#include "engine/data/image_file.h"
#include "engine/data/numpy_array.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>
#include <minizip/zip.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

// clang-format off
#include <jpeglib.h>
// clang-format on
#include <unistd.h>

using namespace mantissa;
namespace fs = std::filesystem;

namespace {

constexpr const char* kFashionMnist = "/usr/share/datasets/fashion-mnist";

bool haveFashionMnist() { return fs::exists(fs::path(kFashionMnist) / "train-images-idx3-ubyte.gz"); }

// The message of the DataError `f` throws, or a text saying it threw none.
std::string dataErrorOf(const std::function<void()>& f)
{
    try {
        f();
    } catch (const DataError& e) {
        return e.what();
    }
    return "(no DataError)";
}

void contains(const std::string& text, const std::vector<std::string>& parts)
{
    for (const std::string& part : parts)
        EXPECT_NE(text.find(part), std::string::npos) << "\"" << part << "\" missing from: " << text;
}

void writeText(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A .npy file's bytes: version 1.0 header padded to 64 bytes, then `data`.
std::string npyBytes(const std::string& descr, const std::string& shape, const std::string& data,
                     const std::string& fortran = "False")
{
    std::string header = "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
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

void writeZip(const fs::path& path, const std::vector<std::pair<std::string, std::string>>& members)
{
    zipFile zip = zipOpen64(path.c_str(), APPEND_STATUS_CREATE);
    ASSERT_NE(zip, nullptr);
    for (const auto& [name, bytes] : members) {
        ASSERT_EQ(zipOpenNewFileInZip64(zip, name.c_str(), nullptr, nullptr, 0, nullptr, 0, nullptr, Z_DEFLATED,
                                        Z_DEFAULT_COMPRESSION, 1),
                  ZIP_OK);
        ASSERT_EQ(zipWriteInFileInZip(zip, bytes.data(), static_cast<unsigned>(bytes.size())), ZIP_OK);
        zipCloseFileInZip(zip);
    }
    zipClose(zip, nullptr);
}

void writeJpeg(const fs::path& path, const Image& image, int quality)
{
    std::FILE* file = std::fopen(path.c_str(), "wb");
    ASSERT_NE(file, nullptr);
    jpeg_compress_struct info;
    jpeg_error_mgr error;
    info.err = jpeg_std_error(&error);
    jpeg_create_compress(&info);
    jpeg_stdio_dest(&info, file);
    info.image_width = static_cast<JDIMENSION>(image.width);
    info.image_height = static_cast<JDIMENSION>(image.height);
    info.input_components = image.channels;
    info.in_color_space = image.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&info);
    jpeg_set_quality(&info, quality, TRUE);
    jpeg_start_compress(&info, TRUE);
    const std::size_t stride = static_cast<std::size_t>(image.width * image.channels);
    while (info.next_scanline < info.image_height) {
        auto* row = const_cast<JSAMPLE*>(image.pixels.data() + stride * info.next_scanline);
        jpeg_write_scanlines(&info, &row, 1);
    }
    jpeg_finish_compress(&info);
    jpeg_destroy_compress(&info);
    std::fclose(file);
}

Image greyImage(int height, int width, int base)
{
    Image image{width, height, 1, {}};
    for (int i = 0; i < width * height; ++i)
        image.pixels.push_back(static_cast<std::uint8_t>((base + 7 * i) % 256));
    return image;
}

class FileData : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_dir = fs::temp_directory_path() / ("mantissa-file-data-test-" + std::to_string(::getpid()) + "-" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(m_dir);
        fs::create_directories(m_dir);
    }
    void TearDown() override { fs::remove_all(m_dir); }

    DataSpec filesSpec(const fs::path& path) const
    {
        DataSpec spec;
        spec.dataset = DatasetKind::Files;
        spec.path = path.string();
        spec.normalize = false;
        return spec;
    }

    // A class-per-folder image set: `perClass` grey 6x5 images in each of `classes` folders.
    void writeImageFolder(const fs::path& root, int classes, int perClass)
    {
        for (int c = 0; c < classes; ++c) {
            fs::create_directories(root / ("class" + std::to_string(c)));
            for (int i = 0; i < perClass; ++i)
                writePngFile((root / ("class" + std::to_string(c)) / (std::to_string(i) + ".png")).string(),
                             greyImage(6, 5, 10 * c + i));
        }
    }

    fs::path m_dir;
};

// --- Fashion-MNIST, through the generic readers ------------------------------------------

void expectSameTensors(const Dataset& a, const Dataset& b)
{
    EXPECT_EQ(a.sampleShape, b.sampleShape);
    EXPECT_EQ(a.classes, b.classes);
    EXPECT_EQ(a.size(), b.size());
    EXPECT_TRUE(a.inputs == b.inputs) << a.name << " vs " << b.name;
    EXPECT_TRUE(a.labels == b.labels) << a.name << " vs " << b.name;
}

TEST_F(FileData, FashionMnistAsGenericIdxGivesTheBuiltInTensorsAndFingerprint)
{
    if (!haveFashionMnist())
        GTEST_SKIP() << kFashionMnist << " is missing: scripts/setup installs dataset-fashion-mnist";
    DataSpec builtIn;
    builtIn.directory = kFashionMnist;
    builtIn.limitTrain = 3000;
    builtIn.limitTest = 500;
    builtIn.normalize = false;
    DataSpec generic = filesSpec(kFashionMnist);
    generic.limitTrain = builtIn.limitTrain;
    generic.limitTest = builtIn.limitTest;
    ASSERT_EQ(resolveDataFormat(generic.path, DataFormat::Auto), DataFormat::Idx);
    const DatasetSplits a = loadDatasets(builtIn, 42);
    const DatasetSplits b = loadDatasets(generic, 42);
    expectSameTensors(a.train, b.train);
    expectSameTensors(a.test, b.test);
    EXPECT_EQ(a.fingerprint, b.fingerprint);
    EXPECT_EQ(a.fingerprint.size(), 16u);
    // Other data, or the same data prepared otherwise, has another fingerprint; another seed does not.
    generic.limitTrain = 2999;
    EXPECT_NE(loadDatasets(generic, 42).fingerprint, a.fingerprint);
    builtIn.normalize = true;
    EXPECT_NE(loadDatasets(builtIn, 42).fingerprint, a.fingerprint);
    builtIn.normalize = false;
    EXPECT_EQ(loadDatasets(builtIn, 7).fingerprint, a.fingerprint);
}

TEST_F(FileData, FashionMnistWrittenAsPngFolderReadsBackToTheSameTensors)
{
    if (!haveFashionMnist())
        GTEST_SKIP() << kFashionMnist << " is missing: scripts/setup installs dataset-fashion-mnist";
    DataSpec builtIn;
    builtIn.directory = kFashionMnist;
    builtIn.limitTrain = 300;
    builtIn.limitTest = 100;
    builtIn.normalize = false;
    const DatasetSplits original = loadDatasets(builtIn, 42);
    // train/<label>/<index>.png and test/..., the pixels back to bytes exactly (k / 255 * 255).
    for (const Dataset* d : {&original.train, &original.test}) {
        const std::string split = d == &original.train ? "train" : "test";
        for (std::int64_t i = 0; i < d->size(); ++i) {
            Image image{28, 28, 1, std::vector<std::uint8_t>(784)};
            for (int p = 0; p < 784; ++p)
                image.pixels[static_cast<std::size_t>(p)] =
                    static_cast<std::uint8_t>(std::lround(d->sample(i)[p] * 255.0f));
            const fs::path folder =
                m_dir / split / std::to_string(static_cast<int>(d->labels[static_cast<std::size_t>(i)]));
            fs::create_directories(folder);
            char name[32];
            std::snprintf(name, sizeof name, "%05lld.png", static_cast<long long>(i));
            writePngFile((folder / name).string(), image);
        }
    }
    const DatasetSplits read = loadDatasets(filesSpec(m_dir), 42);
    ASSERT_EQ(read.classNames.size(), 10u);
    // The folder lists the samples class by class, each class in file order: the same order as a
    // stable sort of the original by label.
    for (const auto& [orig, back] : {std::pair{&original.train, &read.train}, std::pair{&original.test, &read.test}}) {
        std::vector<std::int64_t> order(static_cast<std::size_t>(orig->size()));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](auto x, auto y) {
            return orig->labels[static_cast<std::size_t>(x)] < orig->labels[static_cast<std::size_t>(y)];
        });
        Dataset sorted = *orig;
        for (std::size_t k = 0; k < order.size(); ++k) {
            std::copy(orig->sample(order[k]), orig->sample(order[k]) + 784,
                      sorted.inputs.begin() + static_cast<std::ptrdiff_t>(k * 784));
            sorted.labels[k] = orig->labels[static_cast<std::size_t>(order[k])];
        }
        expectSameTensors(sorted, *back);
    }
}

// --- image folders ---------------------------------------------------------------------------

TEST_F(FileData, ImageFolderSplitsOffAFixedTestSetAndNamesItsClasses)
{
    writeImageFolder(m_dir, 3, 10);
    DataSpec spec = filesSpec(m_dir);
    spec.testSplit = 0.2f;
    const DatasetSplits a = loadDatasets(spec, 1);
    EXPECT_EQ(a.classNames, (std::vector<std::string>{"class0", "class1", "class2"}));
    EXPECT_EQ(a.train.sampleShape, (Shape{1, 6, 5}));
    EXPECT_EQ(a.train.size(), 24);
    EXPECT_EQ(a.test.size(), 6);
    EXPECT_EQ(a.train.classes, 3);
    EXPECT_FLOAT_EQ(a.train.sample(0)[1], 7.0f / 255.0f); // class0/0.png: pixel 1 is 7
    // The test set does not depend on the training seed.
    EXPECT_TRUE(loadDatasets(spec, 2).test.inputs == a.test.inputs);
}

TEST_F(FileData, ImagesListedInACsvReadAsTheFolderOfThemDoes)
{
    // The same 3 x 10 images as a class-per-folder set and as a flat folder with a CSV naming
    // each file's class: the same tensors, classes and fingerprint.
    writeImageFolder(m_dir / "byfolder", 3, 10);
    std::string csv = "file,label\n";
    for (int c = 0; c < 3; ++c)
        for (int i = 0; i < 10; ++i) {
            const std::string name = "c" + std::to_string(c) + "-" + std::to_string(i) + ".png";
            fs::create_directories(m_dir / "flat" / "img");
            fs::copy_file(m_dir / "byfolder" / ("class" + std::to_string(c)) / (std::to_string(i) + ".png"),
                          m_dir / "flat" / "img" / name);
            csv += "img/" + name + ",class" + std::to_string(c) + "\n";
        }
    writeText(m_dir / "flat" / "labels.csv", csv);
    EXPECT_EQ(resolveDataFormat((m_dir / "flat" / "labels.csv").string(), DataFormat::Auto), DataFormat::ImageCsv);
    const DatasetSplits folder = loadDatasets(filesSpec(m_dir / "byfolder"), 1);
    const DatasetSplits listed = loadDatasets(filesSpec(m_dir / "flat" / "labels.csv"), 1);
    EXPECT_EQ(listed.classNames, folder.classNames);
    expectSameTensors(listed.train, folder.train);
    expectSameTensors(listed.test, folder.test);
    EXPECT_EQ(listed.fingerprint, folder.fingerprint);

    // Class indices instead of names, no header.
    writeText(m_dir / "flat" / "indices.csv", "img/c0-0.png,0\nimg/c1-0.png,1\nimg/c0-1.png,0\nimg/c1-1.png,1\n");
    const DatasetSplits indices = loadDatasets(filesSpec(m_dir / "flat" / "indices.csv"), 1);
    EXPECT_EQ(indices.train.classes, 2);
    EXPECT_EQ(indices.train.size() + indices.test.size(), 4);

    const std::string path = (m_dir / "flat" / "bad.csv").string();
    const auto errorFor = [&](const std::string& text) {
        writeText(path, text);
        return dataErrorOf([&] { loadDatasets(filesSpec(path), 1); });
    };
    contains(errorFor("img/c0-0.png,0\nimg/missing.png,1\n"), {path + ":2:", "missing.png is not there"});
    contains(errorFor("img/c0-0.png,0\nimg/c1-0.png\n"), {path + ":2:", "1 cells"});
    contains(errorFor("img/c0-0.png,a\nimg/c1-0.png,a\n"), {path, "every image has label a"});
    writeText(m_dir / "flat" / "img" / "cut.png", "\x89PNG\r\n\x1a\n truncated");
    contains(errorFor("img/c0-0.png,0\nimg/cut.png,1\n"), {path + ":2:", "cut.png", "data.skip_bad_images"});
}

TEST_F(FileData, MixedSizesAndChannelsAreFittedAndSaidSo)
{
    writeImageFolder(m_dir, 2, 2);
    Image colour{8, 4, 3, std::vector<std::uint8_t>(8 * 4 * 3, 200)};
    writePngFile((m_dir / "class1" / "big.png").string(), colour);
    const DatasetSplits s = loadDatasets(filesSpec(m_dir), 1);
    EXPECT_EQ(s.train.sampleShape, (Shape{3, 6, 5}));
    std::string notes;
    for (const std::string& n : s.notes)
        notes += n + "\n";
    contains(notes, {"1 images of another size were stretched to 6x5", "4 grey images were given 3 channels"});
}

TEST_F(FileData, JpegImagesDecodeCloseToWhatWasWritten)
{
    Image image{16, 16, 1, {}};
    for (int y = 0; y < 16; ++y)
        for (int x = 0; x < 16; ++x)
            image.pixels.push_back(static_cast<std::uint8_t>(8 * x + 4 * y));
    writeJpeg(m_dir / "a.jpg", image, 95);
    const Image back = readImageFile((m_dir / "a.jpg").string());
    ASSERT_EQ(back.width, 16);
    ASSERT_EQ(back.height, 16);
    ASSERT_EQ(back.channels, 1);
    int worst = 0;
    for (std::size_t i = 0; i < image.pixels.size(); ++i)
        worst = std::max(worst, std::abs(int(back.pixels[i]) - int(image.pixels[i])));
    // Measured: this smooth ramp comes back unchanged at quality 95 (libjpeg-turbo 2.1.5).
    EXPECT_EQ(worst, 0);
}

TEST_F(FileData, FitImageCropsTheCentreAndResizeKeepsConstants)
{
    Image wide{6, 4, 1, {}};
    for (int i = 0; i < 24; ++i)
        wide.pixels.push_back(static_cast<std::uint8_t>(i));
    const Image crop = fitImage(wide, 4, 4, ImageFit::Crop);
    ASSERT_EQ(crop.pixels.size(), 16u);
    for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 4; ++x)
            EXPECT_EQ(crop.pixels[static_cast<std::size_t>(4 * y + x)], 6 * y + x + 1);
    const Image flat = fitImage(Image{3, 3, 1, std::vector<std::uint8_t>(9, 77)}, 7, 5, ImageFit::Resize);
    EXPECT_EQ(flat.pixels, std::vector<std::uint8_t>(35, 77));
}

TEST_F(FileData, BadImageFoldersAreNamed)
{
    contains(dataErrorOf([&] { loadDatasets(filesSpec(m_dir), 1); }), {m_dir.string(), "--data-format"});
    DataSpec declared = filesSpec(m_dir);
    declared.format = DataFormat::ImageFolder;
    contains(dataErrorOf([&] { loadDatasets(declared, 1); }), {m_dir.string(), "no class subfolders"});
    writeImageFolder(m_dir, 1, 2);
    contains(dataErrorOf([&] { loadDatasets(filesSpec(m_dir), 1); }), {"only one class subfolder (class0)"});
    writeImageFolder(m_dir, 2, 3);
    fs::create_directories(m_dir / "empty");
    contains(dataErrorOf([&] { loadDatasets(filesSpec(m_dir), 1); }), {"empty", "holds no PNG or JPEG"});
    fs::remove(m_dir / "empty");
    // A PNG cut off half-way: named, and skipped with a count only when allowed.
    const fs::path good = m_dir / "class1" / "0.png";
    std::string bytes;
    {
        std::ifstream in(good, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    writeText(m_dir / "class1" / "cut.png", bytes.substr(0, bytes.size() / 2));
    contains(dataErrorOf([&] { loadDatasets(filesSpec(m_dir), 1); }),
             {"cut.png", "corrupt or truncated PNG", "data.skip_bad_images"});
    writeText(m_dir / "class0" / "fake.jpg", "\xFF\xD8\xFFnot really a jpeg");
    DataSpec skipping = filesSpec(m_dir);
    skipping.skipBadImages = true;
    const DatasetSplits s = loadDatasets(skipping, 1);
    EXPECT_EQ(s.train.size() + s.test.size(), 6);
    EXPECT_NE(std::find(s.notes.begin(), s.notes.end(), "2 images could not be decoded and were skipped"),
              s.notes.end());
}

// --- tables ------------------------------------------------------------------------------------

TEST_F(FileData, CsvWithHeaderAndTsvWithout)
{
    std::string csv = "a,b,label\n";
    for (int i = 0; i < 20; ++i)
        csv += std::to_string(i) + "," + std::to_string(0.5 * i) + "," + std::to_string(i % 2) + "\n";
    writeText(m_dir / "t.csv", csv);
    DataSpec spec = filesSpec(m_dir / "t.csv");
    spec.testSplit = 0.25f;
    const DatasetSplits s = loadDatasets(spec, 3);
    EXPECT_EQ(s.train.sampleShape, (Shape{2}));
    EXPECT_EQ(s.train.size(), 15);
    EXPECT_EQ(s.test.size(), 5);
    EXPECT_EQ(s.train.classes, 2);
    for (std::int64_t i = 0; i < s.train.size(); ++i) { // each row kept whole: b = a / 2, label = a % 2
        EXPECT_FLOAT_EQ(s.train.sample(i)[1], s.train.sample(i)[0] / 2);
        EXPECT_EQ(s.train.labels[static_cast<std::size_t>(i)], static_cast<int>(s.train.sample(i)[0]) % 2);
    }
    writeText(m_dir / "t.tsv", "1\t0\t5\n2\t1\t6\n3\t0\t7\n4\t1\t8\n5\t0\t9\n");
    DataSpec tsv = filesSpec(m_dir / "t.tsv");
    tsv.labelColumn = 2;
    const DatasetSplits t = loadDatasets(tsv, 3);
    EXPECT_EQ(t.train.sampleShape, (Shape{2}));
    EXPECT_EQ(t.train.size() + t.test.size(), 5);
}

TEST_F(FileData, BadTablesNameTheRowAndColumn)
{
    const auto errorFor = [&](const std::string& text, std::int64_t labelColumn = 0) {
        writeText(m_dir / "bad.csv", text);
        DataSpec spec = filesSpec(m_dir / "bad.csv");
        spec.labelColumn = labelColumn;
        return dataErrorOf([&] { loadDatasets(spec, 1); });
    };
    const std::string path = (m_dir / "bad.csv").string();
    contains(errorFor("x,y,label\n1,2,0\n3,abc,1\n"), {path + ":3:", "column 2 (y)", "\"abc\" is not a number"});
    contains(errorFor("1,2,0\n3,4,1\n5,1\n"), {path + ":3:", "2 cells but the first has 3", "ragged"});
    contains(errorFor("1,2,0\n3,4,1.5\n"), {path + ":2:", "column 3", "not a class index"});
    contains(errorFor("1,2,0\n3,4,-1\n"), {path + ":2:", "not a class index"});
    contains(errorFor("1,nan,0\n3,4,1\n"), {path + ":1:", "column 2", "NaN or Inf"});
    contains(errorFor("1,inf,0\n3,4,1\n"), {path + ":1:", "NaN or Inf"});
    contains(errorFor("a,b,c\n"), {path, "no data rows"});
    contains(errorFor("1,2,0\n3,4,0\n"), {path, "every label is 0"});
    contains(errorFor("1,2,0\n3,,1\n"), {path + ":2:", "column 2", "empty"});
    contains(errorFor("1,2,0\n3,4,1\n", 5), {"data.label_column is 5", "3 columns"});
    contains(errorFor("1;2;0\n3;4;1\n"), {"one column", "tsv"});
}

// --- NumPy ---------------------------------------------------------------------------------------

TEST_F(FileData, NpyPairsOfEveryDtypeAndAGivenTestSet)
{
    std::vector<double> x64(12);
    std::iota(x64.begin(), x64.end(), 0.5);
    writeText(m_dir / "x.npy", npyBytes("<f8", "(6, 2)", rawBytes(x64)));
    writeText(m_dir / "y.npy", npyBytes("<i8", "(6,)", rawBytes(std::vector<std::int64_t>{0, 1, 2, 0, 1, 2})));
    writeText(m_dir / "x_test.npy", npyBytes("|u1", "(2, 2)", rawBytes(std::vector<std::uint8_t>{1, 2, 3, 4})));
    writeText(m_dir / "y_test.npy", npyBytes("|u1", "(2,)", rawBytes(std::vector<std::uint8_t>{2, 1})));
    for (const fs::path& path : {m_dir, m_dir / "x.npy"}) {
        const DatasetSplits s = loadDatasets(filesSpec(path), 1);
        EXPECT_EQ(s.train.sampleShape, (Shape{2}));
        EXPECT_EQ(s.train.size(), 6);
        EXPECT_EQ(s.test.size(), 2);
        EXPECT_EQ(s.train.classes, 3);
        EXPECT_EQ(s.train.inputs, std::vector<float>(x64.begin(), x64.end()));
        EXPECT_EQ(s.test.inputs, (std::vector<float>{1, 2, 3, 4}));
        EXPECT_EQ(s.test.labels, (std::vector<float>{2, 1}));
    }
    std::vector<float> x32{1.5f, -2.0f, 3.25f, 4.0f};
    writeText(m_dir / "f.npy", npyBytes("<f4", "(2, 2)", rawBytes(x32)));
    EXPECT_EQ(readNpyFile((m_dir / "f.npy").string()).values, x32);
}

TEST_F(FileData, NpzArchiveWithXAndY)
{
    std::vector<float> x(40);
    std::iota(x.begin(), x.end(), 0.0f);
    std::vector<std::int64_t> y{0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
    writeZip(m_dir / "d.npz",
             {{"x.npy", npyBytes("<f4", "(10, 2, 2)", rawBytes(x))}, {"y.npy", npyBytes("<i8", "(10,)", rawBytes(y))}});
    DataSpec spec = filesSpec(m_dir / "d.npz");
    spec.testSplit = 0.2f;
    const DatasetSplits s = loadDatasets(spec, 1);
    EXPECT_EQ(s.train.sampleShape, (Shape{2, 2}));
    EXPECT_EQ(s.train.size(), 8);
    EXPECT_EQ(s.test.size(), 2);
    for (std::int64_t i = 0; i < s.train.size(); ++i) // sample k holds 4k..4k+3 and label k % 2
        EXPECT_EQ(static_cast<int>(s.train.sample(i)[0]) / 4 % 2,
                  static_cast<int>(s.train.labels[static_cast<std::size_t>(i)]));
    writeZip(m_dir / "noy.npz", {{"x.npy", npyBytes("<f4", "(10, 2, 2)", rawBytes(x))}});
    contains(dataErrorOf([&] { loadDatasets(filesSpec(m_dir / "noy.npz"), 1); }), {"noy.npz", "no y.npy"});
    writeText(m_dir / "junk.npz", "PK\x03\x04 this is not a zip archive");
    contains(dataErrorOf([&] { loadDatasets(filesSpec(m_dir / "junk.npz"), 1); }), {"junk.npz", "not a readable"});
}

TEST_F(FileData, BadNpyFilesAreNamed)
{
    const std::string y = npyBytes("<i8", "(2,)", rawBytes(std::vector<std::int64_t>{0, 1}));
    const auto errorFor = [&](const std::string& xBytes, const std::string& yBytes) {
        writeText(m_dir / "x.npy", xBytes);
        writeText(m_dir / "y.npy", yBytes);
        return dataErrorOf([&] { loadDatasets(filesSpec(m_dir / "x.npy"), 1); });
    };
    const std::string x = (m_dir / "x.npy").string();
    contains(errorFor(npyBytes("<f2", "(2, 2)", std::string(8, '\0')), y), {x, "unsupported dtype '<f2'"});
    contains(errorFor(npyBytes(">f4", "(2, 2)", std::string(16, '\0')), y), {x, "unsupported dtype '>f4'"});
    contains(errorFor(npyBytes("<f4", "(2, 2)", std::string(16, '\0'), "True"), y), {x, "Fortran order"});
    contains(errorFor(npyBytes("<f4", "(2, 2)", std::string(10, '\0')), y), {x, "truncated", "16 bytes"});
    contains(errorFor(npyBytes("<f4", "(3, 2)", std::string(24, '\0')), y),
             {x, "3 samples", "2 labels", "same length"});
    contains(errorFor("not numpy at all", y), {x, "not a .npy file"});
    std::vector<float> nan{1, 2, std::nanf(""), 4};
    contains(errorFor(npyBytes("<f4", "(2, 2)", rawBytes(nan)), y), {x, "sample 1, element 0 is NaN"});
    fs::remove(m_dir / "y.npy");
    writeText(m_dir / "x.npy", npyBytes("<f4", "(2, 2)", std::string(16, '\0')));
    contains(dataErrorOf([&] { loadDatasets(filesSpec(m_dir / "x.npy"), 1); }), {"y.npy", "file not found"});
}

// --- IDX of any shape, formats, settings ---------------------------------------------------

TEST_F(FileData, FormatFollowsTheExtensionOrTheFolder)
{
    for (const char* name : {"a.csv", "b.TSV", "c.npy", "d.npz", "e.txt", "f-idx3-ubyte"})
        writeText(m_dir / name, "");
    EXPECT_EQ(resolveDataFormat((m_dir / "a.csv").string(), DataFormat::Auto), DataFormat::Csv);
    EXPECT_EQ(resolveDataFormat((m_dir / "b.TSV").string(), DataFormat::Auto), DataFormat::Tsv);
    EXPECT_EQ(resolveDataFormat((m_dir / "c.npy").string(), DataFormat::Auto), DataFormat::Npy);
    EXPECT_EQ(resolveDataFormat((m_dir / "d.npz").string(), DataFormat::Auto), DataFormat::Npz);
    EXPECT_EQ(resolveDataFormat((m_dir / "e.txt").string(), DataFormat::Auto), DataFormat::Text);
    EXPECT_EQ(resolveDataFormat((m_dir / "f-idx3-ubyte").string(), DataFormat::Auto), DataFormat::Idx);
    EXPECT_EQ(resolveDataFormat((m_dir / "a.csv").string(), DataFormat::Tsv), DataFormat::Tsv);
    writeText(m_dir / "g.dat", "");
    contains(dataErrorOf([&] { resolveDataFormat((m_dir / "g.dat").string(), DataFormat::Auto); }),
             {"g.dat", "--data-format"});
    contains(dataErrorOf([&] { resolveDataFormat((m_dir / "missing").string(), DataFormat::Auto); }),
             {"missing", "not found"});
}

TEST_F(FileData, SettingsAreCheckedByName)
{
    DataSpec spec;
    spec.dataset = DatasetKind::Files;
    EXPECT_THROW(validateDataSpec(spec), ConfigError);
    spec.path = "x.csv";
    EXPECT_NO_THROW(validateDataSpec(spec));
    spec.imageSize = {28};
    try {
        validateDataSpec(spec);
        ADD_FAILURE() << "no ConfigError";
    } catch (const ConfigError& e) {
        contains(e.what(), {"data.image_size"});
    }
    spec.imageSize = {};
    spec.format = DataFormat::Text;
    EXPECT_THROW(validateDataSpec(spec), ConfigError);
}

} // namespace
