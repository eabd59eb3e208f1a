#include "engine/data/file_dataset.h"

#include "engine/data/idx_reader.h"
#include "engine/data/image_file.h"
#include "engine/data/numpy_array.h"
#include "engine/data/table_file.h"
#include "engine/data/text_lines.h"
#include "engine/util/check.h"
#include "engine/util/format_number.h"

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
            throw DataError(where + ": label " + formatNumber(y) + " of sample " + std::to_string(i) +
                            " is not a class index (an integer from 0); for real-valued targets set data.task "
                            "to regression");
        largest = std::max(largest, y);
    }
    return static_cast<std::int64_t>(largest) + 1;
}

// Regression: every target finite, the same number of them in the training and test parts.
void setTargets(FileSource& source, const std::string& where)
{
    source.task = DataTask::Regression;
    if (source.givenTest && source.test.sampleShape != source.train.sampleShape)
        throw DataError(where + ": the test samples are " + source.test.sampleShape.toString() +
                        " but the training samples " + source.train.sampleShape.toString());
    if (source.givenTest && source.test.labelShape != source.train.labelShape)
        throw DataError(where + ": the test samples have " + source.test.labelShape.toString() +
                        " targets but the training samples " + source.train.labelShape.toString());
    for (const Dataset* part : {&source.train, &source.test})
        for (std::size_t i = 0; i < part->labels.size(); ++i)
            if (!std::isfinite(part->labels[i]))
                throw DataError(where + ": target " + std::to_string(static_cast<std::int64_t>(i) % part->labelSize()) +
                                " of " + part->name + " sample " +
                                std::to_string(static_cast<std::int64_t>(i) / part->labelSize()) +
                                " is not a finite number");
    source.train.classes = source.test.classes = 0;
}

// Image folders and IDX files hold class labels only.
void refuseRegression(const DataSpec& spec, const std::string& what)
{
    if (spec.task == DataTask::Regression)
        throw ConfigError("data.task is regression but " + spec.path + " is " + what +
                          ", which holds class labels; use a table or NumPy arrays for real-valued targets");
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

// Auto: float labels or more than one a sample are regression targets, integer ones class indices.
bool isRegression(const DataSpec& spec, const NumpyArray& y)
{
    if (spec.task != DataTask::Auto)
        return spec.task == DataTask::Regression;
    return y.dtype.starts_with("float") || (y.dims.size() == 2 && y.dims[1] != 1);
}

// Takes the arrays' values (no copy of a large array).
Dataset arraysToDataset(NumpyArray&& x, NumpyArray&& y, const std::string& xWhere, const std::string& yWhere,
                        const std::string& name, bool regression)
{
    if (x.dims.empty() || x.dims[0] == 0)
        throw DataError(xWhere + ": the array holds no samples (shape " + Shape(x.dims).toString() + ")");
    if (regression ? (y.dims.size() != 1 && y.dims.size() != 2)
                   : (y.dims.size() != 1 && !(y.dims.size() == 2 && y.dims[1] == 1)))
        throw DataError(yWhere + ": the labels must be " +
                        (regression ? "[N] or [N, targets] for regression" : "one class index per sample (shape [N])") +
                        ", got shape " + Shape(y.dims).toString());
    if (x.dims[0] != y.dims[0])
        throw DataError(xWhere + " holds " + std::to_string(x.dims[0]) + " samples but " + yWhere + " holds " +
                        std::to_string(y.dims[0]) + " labels; they must be the same length");
    if (const std::int64_t i = x.firstNonFinite; i >= 0) {
        const std::int64_t per = static_cast<std::int64_t>(x.values.size()) / x.dims[0];
        throw DataError(xWhere + ": sample " + std::to_string(i / per) + ", element " + std::to_string(i % per) +
                        " is " + (std::isnan(x.values[static_cast<std::size_t>(i)]) ? "NaN" : "infinite") +
                        "; features must be finite");
    }
    Dataset d;
    d.name = name;
    std::vector<std::int64_t> shape(x.dims.begin() + 1, x.dims.end());
    if (shape.empty())
        shape = {1};
    d.sampleShape = Shape(shape);
    d.inputs = std::move(x.values);
    d.labels = std::move(y.values);
    if (regression)
        d.labelShape = Shape{y.dims.size() == 2 ? y.dims[1] : 1};
    return d;
}

FileSource readNpy(const DataSpec& spec)
{
    fs::path x = spec.path;
    if (fs::is_directory(x))
        x /= "x.npy";
    const fs::path y = partner(x, "x", "y");
    if (y.empty())
        throw DataError(x.string() + ": the inputs' file must be named x*.npy (x.npy, x_train.npy) so that its "
                                     "labels y*.npy beside it can be found");
    FileSource source;
    source.format = DataFormat::Npy;
    // The folder too: a test pair put beside the arrays later changes what is read.
    source.inputs = {x.string(), y.string(), x.parent_path().empty() ? "." : x.parent_path().string()};
    NumpyArray xs = readNpyFile(x.string());
    checkFitsInMemory(static_cast<double>(xs.values.size()), x.string());
    NumpyArray ys = readNpyFile(y.string());
    const bool regression = isRegression(spec, ys);
    source.train = arraysToDataset(std::move(xs), std::move(ys), x.string(), y.string(), "files/train", regression);
    // x.npy or x_train.npy: a test pair x_test.npy / y_test.npy beside it is the given test set.
    const std::string stem = x.stem().string();
    const fs::path xTest = x.parent_path() / "x_test.npy";
    if ((stem == "x" || stem == "x_train") && fs::exists(xTest)) {
        const fs::path yTest = x.parent_path() / "y_test.npy";
        source.test = arraysToDataset(readNpyFile(xTest.string()), readNpyFile(yTest.string()), xTest.string(),
                                      yTest.string(), "files/test", regression);
        source.givenTest = true;
        source.inputs.push_back(xTest.string());
        source.inputs.push_back(yTest.string());
        source.notes.push_back("test set: " + xTest.string());
    }
    if (regression)
        setTargets(source, y.string());
    else
        setClasses(source, y.string());
    return source;
}

FileSource readNpz(const DataSpec& spec)
{
    const std::string& path = spec.path;
    FileSource source;
    source.format = DataFormat::Npz;
    source.inputs = {path};
    NumpyArray xs = readNpzMember(path, "x");
    NumpyArray ys = readNpzMember(path, "y");
    const bool regression = isRegression(spec, ys);
    source.train =
        arraysToDataset(std::move(xs), std::move(ys), path + ": x.npy", path + ": y.npy", "files/train", regression);
    NumpyArray xTest = readNpzMember(path, "x_test", false);
    if (!xTest.dims.empty()) {
        source.test = arraysToDataset(std::move(xTest), readNpzMember(path, "y_test"), path + ": x_test.npy",
                                      path + ": y_test.npy", "files/test", regression);
        source.givenTest = true;
        source.notes.push_back("test set: x_test and y_test of the archive");
    }
    if (regression)
        setTargets(source, path);
    else
        setClasses(source, path);
    return source;
}

// ---- Tables ----

FileSource readTable(const DataSpec& spec, char separator, DataFormat format)
{
    // Auto: several target columns are regression; one column is a class label unless declared.
    const bool regression = spec.task == DataTask::Regression || (spec.task == DataTask::Auto && spec.targets > 1);
    const Table table =
        readTableFile(spec.path, separator, spec.header, TableLabels{spec.labelColumn, regression, spec.targets});
    FileSource source;
    source.format = format;
    source.inputs = {spec.path};
    source.train.name = "files/train";
    source.train.sampleShape = Shape{table.featureCount};
    source.train.inputs = table.features;
    source.train.labels = table.labels;
    std::string columns;
    for (std::int64_t c = table.labelColumn; c < table.labelColumn + table.targets; ++c)
        columns += (columns.empty() ? "" : ", ") + std::to_string(c + 1) + " (" +
                   table.columns[static_cast<std::size_t>(c)] + ")";
    source.notes.push_back(std::string(table.hadHeader ? "header row; " : "no header row; ") +
                           (regression ? (table.targets > 1 ? "target columns " : "target column ") : "label column ") +
                           columns);
    if (regression) {
        source.train.labelShape = Shape{table.targets};
        setTargets(source, spec.path);
    } else {
        setClasses(source, spec.path);
    }
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
    if (fs::is_directory(path))
        source.inputs.push_back(path);
    source.inputs.push_back(trainImages);
    source.inputs.push_back(trainLabels);
    source.train = idxToDataset(trainImages, trainLabels, "files/train");
    if (!testImages.empty() && !testLabels.empty()) {
        source.test = idxToDataset(testImages, testLabels, "files/test");
        source.givenTest = true;
        source.inputs.push_back(testImages);
        source.inputs.push_back(testLabels);
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

// The class subfolders of `root` and their images in name order; `inputs` gains every folder
// listed and every image found.
std::vector<ClassFolder> listClassFolders(const fs::path& root, int& ignored, std::vector<std::string>& inputs)
{
    inputs.push_back(root.string());
    std::vector<ClassFolder> classes;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.starts_with(".") || !entry.is_directory())
            continue;
        ClassFolder folder{name, {}};
        inputs.push_back(entry.path().string());
        for (const auto& file : fs::directory_iterator(entry.path(), ec)) {
            if (file.path().filename().string().starts_with("."))
                continue;
            if (file.is_regular_file() && isImageFile(file.path().string()))
                folder.files.push_back(file.path().string());
            else
                ++ignored;
        }
        std::sort(folder.files.begin(), folder.files.end());
        inputs.insert(inputs.end(), folder.files.begin(), folder.files.end());
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

// Brings decoded images to one size and channel count and makes them the source's training
// (and given test) set, saying what was done. The classes are source.classNames.
void imagesToSource(FileSource& source, const DecodedImages& train, const DecodedImages* test, const DataSpec& spec,
                    const std::string& where, int skipped)
{
    if (train.images.empty())
        throw DataError(where + ": no image could be decoded");
    const DecodedImages none;
    const DecodedImages& testImages = test ? *test : none;
    const Image& first = train.images.front();
    const int height = spec.imageSize.empty() ? first.height : static_cast<int>(spec.imageSize[0]);
    const int width = spec.imageSize.empty() ? first.width : static_cast<int>(spec.imageSize[1]);
    bool colour = false;
    for (const DecodedImages* set : {&train, &testImages})
        for (const Image& image : set->images)
            colour = colour || image.channels == 3;
    const int channels = colour ? 3 : 1;
    checkFitsInMemory(static_cast<double>(train.images.size() + testImages.images.size()) * channels * height * width,
                      spec.path);

    int fitted = 0, widened = 0;
    source.train = imagesToDataset(train, channels, height, width, spec, "files/train", fitted, widened);
    if (test) {
        source.test = imagesToDataset(*test, channels, height, width, spec, "files/test", fitted, widened);
        source.givenTest = true;
    }
    source.train.classes = source.test.classes = static_cast<std::int64_t>(source.classNames.size());

    source.notes.insert(source.notes.begin(), std::to_string(source.classNames.size()) + " classes; " +
                                                  (colour ? "colour (3 channels)" : "grey (1 channel)") +
                                                  " images of " + std::to_string(height) + "x" + std::to_string(width) +
                                                  (spec.imageSize.empty() ? " (the first image's size)" : ""));
    if (fitted > 0)
        source.notes.push_back(std::to_string(fitted) + " images of another size were " +
                               (spec.imageFit == ImageFit::Resize ? "stretched" : "scaled and centre-cropped") +
                               " to " + std::to_string(height) + "x" + std::to_string(width) + " (data.image_fit)");
    if (widened > 0)
        source.notes.push_back(std::to_string(widened) + " grey images were given 3 channels (the grey value in each)");
    if (skipped > 0)
        source.notes.push_back(std::to_string(skipped) + " images could not be decoded and were skipped");
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
    const std::vector<ClassFolder> trainFolders =
        listClassFolders(split ? root / "train" : root, ignored, source.inputs);
    if (split)
        source.inputs.push_back(spec.path);
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
        const std::vector<ClassFolder> testFolders = listClassFolders(root / "test", ignored, source.inputs);
        for (const ClassFolder& folder : testFolders)
            if (std::find(source.classNames.begin(), source.classNames.end(), folder.name) == source.classNames.end())
                throw DataError((root / "test" / folder.name).string() + ": a class the training folder does not have");
        test = decodeFolder(testFolders, source.classNames, spec, skipped);
        source.givenTest = true;
    }
    if (split)
        source.notes.push_back("test set: " + (root / "test").string());
    imagesToSource(source, train, split ? &test : nullptr, spec, where, skipped);
    if (ignored > 0)
        source.notes.push_back(std::to_string(ignored) + " files that are not PNG or JPEG images were ignored");
    return source;
}

// ---- Images listed in a CSV ----

// Whether a CSV's first rows name image files (the first cell of the first or second row):
// then it lists images rather than holding features.
bool listsImages(const std::string& path)
{
    TextLines in(path);
    std::string line;
    for (int row = 0; row < 2 && in.next(line); ++row) {
        const std::string first = line.substr(0, line.find(','));
        std::string name = lower(first);
        while (!name.empty() && (name.back() == ' ' || name.back() == '"' || name.back() == '\r'))
            name.pop_back();
        if (isImageFile(name))
            return true;
    }
    return false;
}

// A CSV of "file,label" rows: the files relative to the CSV's folder, the labels class indices
// or, where any is not an integer, class names (the classes in name order).
FileSource readImageCsv(const DataSpec& spec)
{
    refuseRegression(spec, "a list of images");
    FileSource source;
    source.format = DataFormat::ImageCsv;
    source.inputs = {spec.path};
    std::vector<TextRow> rows = readTextRows(spec.path, ',');
    // A first row whose file is not an image is a header (file,label).
    const bool header = spec.header == TableHeader::Yes ||
                        (spec.header == TableHeader::Auto && !rows.empty() && !rows.front().cells.empty() &&
                         !isImageFile(lower(rows.front().cells.front())));
    if (header && !rows.empty())
        rows.erase(rows.begin());
    if (rows.empty())
        throw DataError(spec.path + ": lists no images (rows of file name and label)");
    const auto at = [&](const TextRow& row) { return spec.path + ":" + std::to_string(row.line) + ": "; };
    bool indices = true;
    for (const TextRow& row : rows) {
        if (row.cells.size() != 2)
            throw DataError(at(row) + "the row has " + std::to_string(row.cells.size()) +
                            " cells; each row is an image's file name and its label");
        if (row.cells[1].empty())
            throw DataError(at(row) + "the label of " + row.cells[0] + " is empty");
        indices = indices && row.cells[1].find_first_not_of("0123456789") == std::string::npos;
    }
    // Class names: the distinct labels in name order; indices: "0" to the largest.
    std::vector<std::string> names;
    if (!indices) {
        for (const TextRow& row : rows)
            names.push_back(row.cells[1]);
        std::sort(names.begin(), names.end());
        names.erase(std::unique(names.begin(), names.end()), names.end());
        source.classNames = names;
    }
    const fs::path folder = fs::path(spec.path).parent_path();
    DecodedImages train;
    int skipped = 0;
    std::int64_t largest = 0;
    for (const TextRow& row : rows) {
        const fs::path file = fs::path(row.cells[0]).is_absolute() ? fs::path(row.cells[0]) : folder / row.cells[0];
        std::error_code ec;
        if (!fs::is_regular_file(file, ec))
            throw DataError(at(row) + file.string() + " is not there");
        if (!isImageFile(file.string()))
            throw DataError(at(row) + file.string() + " is not a PNG or JPEG file");
        source.inputs.push_back(file.string());
        try {
            train.images.push_back(readImageFile(file.string()));
        } catch (const DataError& e) {
            if (!spec.skipBadImages)
                throw DataError(at(row) + e.what() + " (set data.skip_bad_images to skip such images)");
            ++skipped;
            continue;
        }
        const std::int64_t label = indices ? std::stoll(row.cells[1].substr(0, 9))
                                           : std::find(names.begin(), names.end(), row.cells[1]) - names.begin();
        if (indices && row.cells[1].size() > 9)
            throw DataError(at(row) + "the label " + row.cells[1] + " is not a class index this size");
        largest = std::max(largest, label);
        train.labels.push_back(static_cast<float>(label));
    }
    if (indices)
        for (std::int64_t c = 0; c <= largest; ++c)
            source.classNames.push_back(std::to_string(c));
    if (source.classNames.size() < 2)
        throw DataError(spec.path + ": every image has label " + rows.front().cells[1] +
                        "; classification needs two classes at least");
    source.notes.push_back(std::to_string(rows.size()) + " images listed" + (header ? " below a header row" : "") +
                           ", labelled by class " + (indices ? "index" : "name"));
    imagesToSource(source, train, nullptr, spec, spec.path, skipped);
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
    // A compressed table (digits.csv.gz) goes by the extension before ".gz"; tables read through zlib.
    const fs::path named = name.ends_with(".gz") ? fs::path(name).stem() : fs::path(name);
    const std::string ext = named.extension().string();
    if (!fs::is_directory(path, ec)) {
        if (ext == ".csv")
            return listsImages(path) ? DataFormat::ImageCsv : DataFormat::Csv;
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
    case DataFormat::ImageFolder: refuseRegression(spec, "an image folder"); return readImageFolder(spec);
    case DataFormat::ImageCsv: return readImageCsv(spec);
    case DataFormat::Csv: return readTable(spec, ',', DataFormat::Csv);
    case DataFormat::Tsv: return readTable(spec, '\t', DataFormat::Tsv);
    case DataFormat::Npy: return readNpy(spec);
    case DataFormat::Npz: return readNpz(spec);
    case DataFormat::Idx: refuseRegression(spec, "IDX data"); return readIdx(spec.path);
    case DataFormat::Text:
    case DataFormat::Auto: break;
    }
    throw ConfigError("data.format text: text is the text dataset; set data.dataset to text and data.directory to " +
                      spec.path);
}

} // namespace mantissa
