#include "engine/data/file_dataset.h"

#include "engine/data/idx_reader.h"
#include "engine/data/image_file.h"
#include "engine/data/numpy_array.h"
#include "engine/data/table_file.h"
#include "engine/util/check.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include <unistd.h>

namespace mantissa {

namespace {

namespace fs = std::filesystem;

constexpr float kByteScale = 1.0f / 255.0f; // 8-bit pixels to [0, 1], as the built-in sets

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

// Refuses data whose float tensors would not fit in the machine's memory, before allocating.
void checkFitsInMemory(double floats, const std::string& path)
{
    const long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || pageSize <= 0)
        return;
    const double memory = static_cast<double>(pages) * static_cast<double>(pageSize);
    const double bytes = floats * sizeof(float);
    if (bytes > memory * 0.8)
        throw DataError(path + ": the data needs " + std::to_string(static_cast<long long>(bytes / (1 << 20))) +
                        " MiB as float32 but the machine has " +
                        std::to_string(static_cast<long long>(memory / (1 << 20))) +
                        " MiB of memory; use a part of it (data.limit_train) or a smaller copy");
}

// The number of classes the labels need (largest + 1), checking they are class indices.
std::int64_t classCount(const std::vector<float>& labels, const std::string& where)
{
    float largest = 0;
    for (std::size_t i = 0; i < labels.size(); ++i) {
        const float y = labels[i];
        if (!(y >= 0) || y != std::floor(y) || y > (1 << 24))
            throw DataError(where + ": label " + std::to_string(y) + " of sample " + std::to_string(i) +
                            " is not a class index (an integer from 0)");
        largest = std::max(largest, y);
    }
    return static_cast<std::int64_t>(largest) + 1;
}

void setClasses(FileSource& source, const std::string& where)
{
    if (source.givenTest && source.test.sampleShape != source.train.sampleShape)
        throw DataError(where + ": the test samples are " + source.test.sampleShape.toString() +
                        " but the training samples " + source.train.sampleShape.toString());
    std::int64_t classes = classCount(source.train.labels, where);
    if (source.givenTest)
        classes = std::max(classes, classCount(source.test.labels, where));
    if (classes < 2)
        throw DataError(where + ": every label is 0; classification needs two classes at least");
    source.train.classes = source.test.classes = classes;
}

// ---- NumPy ----

// "x.npy" -> "y.npy", "x_train.npy" -> "y_train.npy": the labels beside the inputs.
fs::path partner(const fs::path& x, const std::string& from, const std::string& to)
{
    const std::string stem = x.stem().string();
    if (!stem.starts_with(from))
        return {};
    return x.parent_path() / (to + stem.substr(from.size()) + x.extension().string());
}

Dataset arraysToDataset(const NumpyArray& x, const NumpyArray& y, const std::string& xWhere, const std::string& yWhere,
                        const std::string& name)
{
    if (x.dims.empty() || x.dims[0] == 0)
        throw DataError(xWhere + ": the array holds no samples (shape " + Shape(x.dims).toString() + ")");
    if (y.dims.size() != 1 && !(y.dims.size() == 2 && y.dims[1] == 1))
        throw DataError(yWhere + ": the labels must be one per sample (shape [N]), got shape " +
                        Shape(y.dims).toString());
    if (x.dims[0] != y.dims[0])
        throw DataError(xWhere + " holds " + std::to_string(x.dims[0]) + " samples but " + yWhere + " holds " +
                        std::to_string(y.dims[0]) + " labels; they must be the same length");
    for (std::size_t i = 0; i < x.values.size(); ++i)
        if (!std::isfinite(x.values[i])) {
            const std::int64_t per = static_cast<std::int64_t>(x.values.size()) / x.dims[0];
            throw DataError(xWhere + ": sample " + std::to_string(static_cast<std::int64_t>(i) / per) + ", element " +
                            std::to_string(static_cast<std::int64_t>(i) % per) + " is " +
                            (std::isnan(x.values[i]) ? "NaN" : "infinite") + "; features must be finite");
        }
    Dataset d;
    d.name = name;
    std::vector<std::int64_t> shape(x.dims.begin() + 1, x.dims.end());
    if (shape.empty())
        shape = {1};
    d.sampleShape = Shape(shape);
    d.inputs = x.values;
    d.labels = y.values;
    return d;
}

FileSource readNpy(const std::string& path)
{
    fs::path x = path;
    if (fs::is_directory(x))
        x /= "x.npy";
    const fs::path y = partner(x, "x", "y");
    if (y.empty())
        throw DataError(x.string() + ": the inputs' file must be named x*.npy (x.npy, x_train.npy) so that its "
                                     "labels y*.npy beside it can be found");
    FileSource source;
    source.format = DataFormat::Npy;
    const NumpyArray xs = readNpyFile(x.string());
    checkFitsInMemory(static_cast<double>(xs.values.size()), x.string());
    source.train = arraysToDataset(xs, readNpyFile(y.string()), x.string(), y.string(), "files/train");
    // x.npy or x_train.npy: a test pair x_test.npy / y_test.npy beside it is the given test set.
    const std::string stem = x.stem().string();
    const fs::path xTest = x.parent_path() / "x_test.npy";
    if ((stem == "x" || stem == "x_train") && fs::exists(xTest)) {
        const fs::path yTest = x.parent_path() / "y_test.npy";
        source.test = arraysToDataset(readNpyFile(xTest.string()), readNpyFile(yTest.string()), xTest.string(),
                                      yTest.string(), "files/test");
        source.givenTest = true;
        source.notes.push_back("test set: " + xTest.string());
    }
    setClasses(source, y.string());
    return source;
}

FileSource readNpz(const std::string& path)
{
    FileSource source;
    source.format = DataFormat::Npz;
    const NumpyArray xs = readNpzMember(path, "x");
    source.train = arraysToDataset(xs, readNpzMember(path, "y"), path + ": x.npy", path + ": y.npy", "files/train");
    const NumpyArray xTest = readNpzMember(path, "x_test", false);
    if (!xTest.dims.empty()) {
        source.test = arraysToDataset(xTest, readNpzMember(path, "y_test"), path + ": x_test.npy",
                                      path + ": y_test.npy", "files/test");
        source.givenTest = true;
        source.notes.push_back("test set: x_test and y_test of the archive");
    }
    setClasses(source, path);
    return source;
}

// ---- Tables ----

FileSource readTable(const DataSpec& spec, char separator, DataFormat format)
{
    const Table table = readTableFile(spec.path, separator, spec.header, spec.labelColumn);
    FileSource source;
    source.format = format;
    source.train.name = "files/train";
    source.train.sampleShape = Shape{table.featureCount};
    source.train.inputs = table.features;
    source.train.labels = table.labels;
    source.notes.push_back(std::string(table.hadHeader ? "header row: " : "no header row; ") + "label column " +
                           std::to_string(table.labelColumn + 1) + " (" +
                           table.columns[static_cast<std::size_t>(table.labelColumn)] + ")");
    setClasses(source, spec.path);
    return source;
}

// ---- IDX ----

// The file of `dir` whose name starts with one of `prefixes` ("train-images"), or "".
std::string findIdx(const fs::path& dir, std::initializer_list<const char*> prefixes)
{
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        for (const char* prefix : prefixes)
            if (name.starts_with(prefix) && entry.is_regular_file())
                found.push_back(entry.path().string());
    }
    std::sort(found.begin(), found.end());
    // Both "x-ubyte" and "x-ubyte.gz" may be there: the compressed one, as the built-in loader.
    for (const std::string& f : found)
        if (f.ends_with(".gz"))
            return f;
    return found.empty() ? std::string() : found.front();
}

Dataset idxToDataset(const std::string& imagesPath, const std::string& labelsPath, const std::string& name)
{
    const IdxArray images = readIdxFile(imagesPath, 0);
    const IdxArray labels = readIdxFile(labelsPath, 1);
    checkIdxPair(images, imagesPath, labels, labelsPath, 256);
    Dataset d;
    d.name = name;
    std::vector<std::int64_t> shape(images.dims.begin() + 1, images.dims.end());
    if (shape.size() == 2) // rank 3 files hold grey images: one channel, as the built-in loader
        shape.insert(shape.begin(), 1);
    if (shape.empty())
        shape = {1};
    d.sampleShape = Shape(shape);
    d.inputs.resize(images.values.size());
    for (std::size_t i = 0; i < images.values.size(); ++i)
        d.inputs[i] = static_cast<float>(images.values[i]) * kByteScale;
    d.labels.assign(labels.values.begin(), labels.values.end());
    return d;
}

FileSource readIdx(const std::string& path)
{
    FileSource source;
    source.format = DataFormat::Idx;
    std::string trainImages, trainLabels, testImages, testLabels;
    if (fs::is_directory(path)) {
        trainImages = findIdx(path, {"train-images"});
        trainLabels = findIdx(path, {"train-labels"});
        testImages = findIdx(path, {"t10k-images", "test-images"});
        testLabels = findIdx(path, {"t10k-labels", "test-labels"});
        if (trainImages.empty() || trainLabels.empty())
            throw DataError(path + ": no train-images* and train-labels* IDX files in the folder");
    } else {
        const std::string name = fs::path(path).filename().string();
        const std::size_t at = name.find("images");
        if (at == std::string::npos)
            throw DataError(path + ": the IDX file's name must contain \"images\" so that its labels file "
                                   "(\"labels\" in its place) can be found");
        trainImages = path;
        trainLabels = (fs::path(path).parent_path() / (name.substr(0, at) + "labels" + name.substr(at + 6))).string();
    }
    source.train = idxToDataset(trainImages, trainLabels, "files/train");
    if (!testImages.empty() && !testLabels.empty()) {
        source.test = idxToDataset(testImages, testLabels, "files/test");
        source.givenTest = true;
        if (source.test.sampleShape != source.train.sampleShape)
            throw DataError(testImages + ": samples of " + source.test.sampleShape.toString() + " but " + trainImages +
                            " holds samples of " + source.train.sampleShape.toString());
        source.notes.push_back("test set: " + testImages);
    }
    setClasses(source, trainLabels);
    return source;
}

// ---- Image folders ----

struct ClassFolder {
    std::string name;
    std::vector<std::string> files;
};

std::vector<ClassFolder> listClassFolders(const fs::path& root, int& ignored)
{
    std::vector<ClassFolder> classes;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.starts_with(".") || !entry.is_directory())
            continue;
        ClassFolder folder{name, {}};
        for (const auto& file : fs::directory_iterator(entry.path(), ec)) {
            if (file.path().filename().string().starts_with("."))
                continue;
            if (file.is_regular_file() && isImageFile(file.path().string()))
                folder.files.push_back(file.path().string());
            else
                ++ignored;
        }
        std::sort(folder.files.begin(), folder.files.end());
        classes.push_back(std::move(folder));
    }
    if (ec)
        throw DataError(root.string() + ": cannot list the folder: " + ec.message());
    std::sort(classes.begin(), classes.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return classes;
}

struct DecodedImages {
    std::vector<Image> images;
    std::vector<float> labels;
};

DecodedImages decodeFolder(const std::vector<ClassFolder>& folders, const std::vector<std::string>& classNames,
                           const DataSpec& spec, int& skipped)
{
    DecodedImages out;
    for (const ClassFolder& folder : folders) {
        const auto index = std::find(classNames.begin(), classNames.end(), folder.name) - classNames.begin();
        for (const std::string& file : folder.files) {
            try {
                out.images.push_back(readImageFile(file));
            } catch (const DataError& e) {
                if (!spec.skipBadImages)
                    throw DataError(std::string(e.what()) + " (set data.skip_bad_images to skip such images)");
                ++skipped;
                continue;
            }
            out.labels.push_back(static_cast<float>(index));
        }
    }
    return out;
}

Dataset imagesToDataset(const DecodedImages& decoded, int channels, int height, int width, const DataSpec& spec,
                        const std::string& name, int& fitted, int& widened)
{
    Dataset d;
    d.name = name;
    d.sampleShape = Shape{channels, height, width};
    const std::size_t plane = static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
    d.inputs.resize(decoded.images.size() * plane * static_cast<std::size_t>(channels));
    float* out = d.inputs.data();
    for (const Image& original : decoded.images) {
        if (original.height != height || original.width != width)
            ++fitted;
        if (original.channels != channels)
            ++widened;
        const Image image = channels == 3 ? toColour(fitImage(original, height, width, spec.imageFit))
                                          : fitImage(original, height, width, spec.imageFit);
        for (int c = 0; c < channels; ++c) // HWC to CHW
            for (std::size_t p = 0; p < plane; ++p)
                *out++ = static_cast<float>(
                             image.pixels[p * static_cast<std::size_t>(channels) + static_cast<std::size_t>(c)]) *
                         kByteScale;
    }
    d.labels = decoded.labels;
    return d;
}

FileSource readImageFolder(const DataSpec& spec)
{
    const fs::path root = spec.path;
    std::error_code ec;
    if (!fs::is_directory(root, ec))
        throw DataError(spec.path + ": an image dataset is a folder with one subfolder of images per class");
    FileSource source;
    source.format = DataFormat::ImageFolder;
    const bool split = fs::is_directory(root / "train", ec) && fs::is_directory(root / "test", ec);
    int ignored = 0;
    const std::vector<ClassFolder> trainFolders = listClassFolders(split ? root / "train" : root, ignored);
    const std::string where = split ? (root / "train").string() : spec.path;
    if (trainFolders.empty())
        throw DataError(where + ": no class subfolders; put each class's images in a subfolder named after it");
    if (trainFolders.size() == 1)
        throw DataError(where + ": only one class subfolder (" + trainFolders[0].name +
                        "); classification needs two classes at least");
    for (const ClassFolder& folder : trainFolders)
        if (folder.files.empty())
            throw DataError(where + "/" + folder.name + ": the class folder holds no PNG or JPEG images");
    for (const ClassFolder& folder : trainFolders)
        source.classNames.push_back(folder.name);

    int skipped = 0;
    const DecodedImages train = decodeFolder(trainFolders, source.classNames, spec, skipped);
    DecodedImages test;
    if (split) {
        const std::vector<ClassFolder> testFolders = listClassFolders(root / "test", ignored);
        for (const ClassFolder& folder : testFolders)
            if (std::find(source.classNames.begin(), source.classNames.end(), folder.name) == source.classNames.end())
                throw DataError((root / "test" / folder.name).string() + ": a class the training folder does not have");
        test = decodeFolder(testFolders, source.classNames, spec, skipped);
        source.givenTest = true;
    }
    if (train.images.empty())
        throw DataError(where + ": no image could be decoded");

    const Image& first = train.images.front();
    const int height = spec.imageSize.empty() ? first.height : static_cast<int>(spec.imageSize[0]);
    const int width = spec.imageSize.empty() ? first.width : static_cast<int>(spec.imageSize[1]);
    bool colour = false;
    for (const DecodedImages* set : std::initializer_list<const DecodedImages*>{&train, &test})
        for (const Image& image : set->images)
            colour = colour || image.channels == 3;
    const int channels = colour ? 3 : 1;
    checkFitsInMemory(static_cast<double>(train.images.size() + test.images.size()) * channels * height * width,
                      spec.path);

    int fitted = 0, widened = 0;
    source.train = imagesToDataset(train, channels, height, width, spec, "files/train", fitted, widened);
    if (split)
        source.test = imagesToDataset(test, channels, height, width, spec, "files/test", fitted, widened);
    source.train.classes = source.test.classes = static_cast<std::int64_t>(source.classNames.size());

    source.notes.push_back(std::to_string(source.classNames.size()) + " classes; " +
                           (colour ? "colour (3 channels)" : "grey (1 channel)") + " images of " +
                           std::to_string(height) + "x" + std::to_string(width) +
                           (spec.imageSize.empty() ? " (the first image's size)" : ""));
    if (split)
        source.notes.push_back("test set: " + (root / "test").string());
    if (fitted > 0)
        source.notes.push_back(std::to_string(fitted) + " images of another size were " +
                               (spec.imageFit == ImageFit::Resize ? "stretched" : "scaled and centre-cropped") +
                               " to " + std::to_string(height) + "x" + std::to_string(width) + " (data.image_fit)");
    if (widened > 0)
        source.notes.push_back(std::to_string(widened) + " grey images were given 3 channels (the grey value in each)");
    if (skipped > 0)
        source.notes.push_back(std::to_string(skipped) + " images could not be decoded and were skipped");
    if (ignored > 0)
        source.notes.push_back(std::to_string(ignored) + " files that are not PNG or JPEG images were ignored");
    return source;
}

} // namespace

DataFormat resolveDataFormat(const std::string& path, DataFormat declared)
{
    if (declared != DataFormat::Auto)
        return declared;
    std::error_code ec;
    if (!fs::exists(path, ec))
        throw DataError(path + ": not found");
    const std::string name = lower(fs::path(path).filename().string());
    const std::string ext = lower(fs::path(path).extension().string());
    if (!fs::is_directory(path, ec)) {
        if (ext == ".csv")
            return DataFormat::Csv;
        if (ext == ".tsv" || ext == ".tab")
            return DataFormat::Tsv;
        if (ext == ".npy")
            return DataFormat::Npy;
        if (ext == ".npz")
            return DataFormat::Npz;
        if (ext == ".txt")
            return DataFormat::Text;
        if (name.find("ubyte") != std::string::npos || name.find(".idx") != std::string::npos)
            return DataFormat::Idx;
        throw DataError(path + ": the extension does not tell the format; set data.format (--data-format: " +
                        enumKeyList<DataFormat>() + ")");
    }
    if (fs::exists(fs::path(path) / "x.npy", ec))
        return DataFormat::Npy;
    bool subfolders = false;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
        const std::string file = entry.path().filename().string();
        if (file.starts_with("train-images"))
            return DataFormat::Idx;
        subfolders = subfolders || (entry.is_directory() && !file.starts_with("."));
    }
    if (subfolders)
        return DataFormat::ImageFolder;
    throw DataError(path +
                    ": a folder with no subfolders, x.npy or train-images file; set data.format "
                    "(--data-format: " +
                    enumKeyList<DataFormat>() + "), text for a folder of text files");
}

void useDataSource(DataSpec& spec, const std::string& source)
{
    if (const std::optional<DatasetKind> dataset = parseEnum<DatasetKind>(source);
        dataset && *dataset != DatasetKind::Files) {
        spec.dataset = *dataset;
        return;
    }
    if (source.starts_with("text:")) {
        spec.dataset = DatasetKind::Text;
        spec.directory = source.substr(5);
        if (spec.directory.empty())
            throw ConfigError("text: needs a file or folder after the colon, e.g. text:book.txt");
        return;
    }
    std::error_code ec;
    if (!fs::exists(source, ec)) {
        std::string builtIn;
        for (const EnumEntry<DatasetKind>& e : enumEntries<DatasetKind>())
            if (e.value != DatasetKind::Files)
                builtIn += std::string(e.key) + ", ";
        throw DataError(source + ": no such file or folder; the data is a built-in dataset (" + builtIn +
                        "text:FILE) or the path of your file or folder");
    }
    if (resolveDataFormat(source, spec.format) == DataFormat::Text) {
        spec.dataset = DatasetKind::Text;
        spec.directory = source;
        return;
    }
    spec.dataset = DatasetKind::Files;
    spec.path = source;
}

FileSource readFileSource(const DataSpec& spec)
{
    if (spec.path.empty())
        throw ConfigError("data.path is empty; give the file or folder to read (--data PATH)");
    std::error_code ec;
    if (!fs::exists(spec.path, ec))
        throw DataError(spec.path + ": not found (data.path)");
    switch (resolveDataFormat(spec.path, spec.format)) {
    case DataFormat::ImageFolder: return readImageFolder(spec);
    case DataFormat::Csv: return readTable(spec, ',', DataFormat::Csv);
    case DataFormat::Tsv: return readTable(spec, '\t', DataFormat::Tsv);
    case DataFormat::Npy: return readNpy(spec.path);
    case DataFormat::Npz: return readNpz(spec.path);
    case DataFormat::Idx: return readIdx(spec.path);
    case DataFormat::Text:
    case DataFormat::Auto: break;
    }
    throw ConfigError("data.format text: text is the text dataset; set data.dataset to text and data.directory to " +
                      spec.path);
}

} // namespace mantissa
