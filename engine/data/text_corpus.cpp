#include "engine/data/text_corpus.h"

#include "engine/data/data_fingerprint.h"
#include "engine/data/permutation.h"
#include "engine/util/check.h"
#include "engine/util/format_number.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace mantissa {

namespace {

namespace fs = std::filesystem;

// Salts that keep the window draws of each split apart from each other and from the
// epoch orders, which are seeded with the epoch number.
constexpr std::uint64_t kTrainWindowsKey = 0x7478742d747261ull; // "txt-tra"

// Offset of the first byte that does not start a valid UTF-8 sequence, or npos. Overlong
// forms, surrogates and code points past U+10FFFF are refused as the standard says.
std::size_t firstInvalidUtf8(const std::string& s)
{
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    std::size_t i = 0;
    while (i < n) {
        const unsigned c = p[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        int extra = 0;
        unsigned low = 0x80, high = 0xBF; // allowed range of the second byte
        if (c >= 0xC2 && c <= 0xDF) {
            extra = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            extra = 2;
            if (c == 0xE0)
                low = 0xA0;
            if (c == 0xED)
                high = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            extra = 3;
            if (c == 0xF0)
                low = 0x90;
            if (c == 0xF4)
                high = 0x8F;
        } else {
            return i;
        }
        if (i + static_cast<std::size_t>(extra) >= n) // cut off by the end of the file
            return i;
        if (p[i + 1] < low || p[i + 1] > high)
            return i;
        for (int k = 2; k <= extra; ++k)
            if (p[i + static_cast<std::size_t>(k)] < 0x80 || p[i + static_cast<std::size_t>(k)] > 0xBF)
                return i;
        i += static_cast<std::size_t>(extra) + 1;
    }
    return std::string::npos;
}

std::string readFile(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw DataError(path.string() + ": cannot be read");
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (in.bad())
        throw DataError(path.string() + ": read error");
    std::string text = std::move(bytes).str();
    if (const std::size_t nul = text.find('\0'); nul != std::string::npos)
        throw DataError(path.string() + ": byte " + std::to_string(nul) +
                        " is NUL; this looks like a binary file, not text");
    if (const std::size_t bad = firstInvalidUtf8(text); bad != std::string::npos)
        throw DataError(path.string() + ": byte " + std::to_string(bad) + " (value " +
                        std::to_string(static_cast<unsigned char>(text[bad])) +
                        ") does not start valid UTF-8; convert the file (e.g. iconv -t UTF-8) or choose another");
    return text;
}

// Fortune files separate their entries with lines holding only "%"; a language model should
// see a paragraph break there, not the marker.
std::string withoutFortuneSeparators(const std::string& text)
{
    std::string out;
    out.reserve(text.size());
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        const bool last = end == std::string::npos;
        if (last)
            end = text.size();
        const std::string_view line(text.data() + start, end - start);
        if (line != "%")
            out.append(line);
        if (!last)
            out.push_back('\n');
        start = end + 1;
    }
    return out;
}

Dataset emptyWindows(std::int64_t context, const std::string& name)
{
    Dataset d;
    d.sampleShape = Shape{context};
    d.labelShape = Shape{context};
    d.classes = kByteVocabulary;
    d.name = name;
    return d;
}

void appendWindow(Dataset& d, const std::string& text, std::int64_t offset, std::int64_t context)
{
    const auto* bytes = reinterpret_cast<const unsigned char*>(text.data()) + offset;
    for (std::int64_t t = 0; t < context; ++t) {
        d.inputs.push_back(static_cast<float>(bytes[t]));
        d.labels.push_back(static_cast<float>(bytes[t + 1]));
    }
}

} // namespace

TextCorpus readTextCorpus(const std::string& path)
{
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (!fs::exists(status))
        throw DataError(path + ": text corpus not found" +
                        (path == kDefaultTextCorpus
                             ? std::string("; scripts/setup installs it (Debian package fortunes)")
                             : std::string()));
    TextCorpus corpus;
    corpus.source = path;
    if (!fs::is_directory(status)) {
        corpus.text = readFile(path);
        corpus.files = 1;
    } else {
        std::vector<fs::path> files;
        for (const auto& entry : fs::directory_iterator(path, ec)) {
            if (entry.is_symlink() || !entry.is_regular_file() || entry.path().extension() == ".dat")
                continue;
            files.push_back(entry.path());
        }
        if (ec)
            throw DataError(path + ": cannot list the directory: " + ec.message());
        std::sort(files.begin(), files.end());
        for (const auto& file : files) {
            std::string text = withoutFortuneSeparators(readFile(file));
            if (!text.empty() && text.back() != '\n')
                text.push_back('\n');
            corpus.text += text;
            ++corpus.files;
        }
        if (corpus.files == 0)
            throw DataError(path + ": the directory holds no text files");
    }
    if (corpus.text.empty())
        throw DataError(path + ": the text corpus is empty");
    return corpus;
}

Dataset randomTextWindows(const std::string& text, std::int64_t begin, std::int64_t end, std::int64_t context,
                          std::int64_t count, std::uint64_t seed, std::uint64_t salt, const std::string& name)
{
    // A window needs context + 1 bytes: the inputs and, one further, the last label.
    MANTISSA_ASSERT(begin >= 0 && end <= static_cast<std::int64_t>(text.size()) && end - begin > context);
    Dataset d = emptyWindows(context, name);
    d.inputs.reserve(static_cast<std::size_t>(count * context));
    d.labels.reserve(static_cast<std::size_t>(count * context));
    auto engine = seededEngine({seed, salt, static_cast<std::uint64_t>(begin), static_cast<std::uint64_t>(end)});
    const auto starts = static_cast<std::uint64_t>(end - begin - context);
    for (std::int64_t i = 0; i < count; ++i)
        appendWindow(d, text, begin + static_cast<std::int64_t>(uniformBelow(engine, starts)), context);
    return d;
}

Dataset tiledTextWindows(const std::string& text, std::int64_t begin, std::int64_t end, std::int64_t context,
                         const std::string& name)
{
    MANTISSA_ASSERT(begin >= 0 && end <= static_cast<std::int64_t>(text.size()));
    Dataset d = emptyWindows(context, name);
    for (std::int64_t offset = begin; offset + context + 1 <= end; offset += context)
        appendWindow(d, text, offset, context);
    return d;
}

DatasetSplits loadTextDatasets(const DataSpec& spec, std::uint64_t seed)
{
    const std::string path = resolveDataDirectory(spec).path;
    const TextCorpus corpus = readTextCorpus(path);
    const auto size = static_cast<std::int64_t>(corpus.text.size());
    const std::int64_t context = spec.context;
    // Each split needs one whole window (context + 1 bytes) at least.
    const std::int64_t testBegin = size - size / 10;
    const std::int64_t validationBegin =
        testBegin - static_cast<std::int64_t>(static_cast<double>(spec.validationSplit) * static_cast<double>(size));
    const auto tooShort = [&](const std::string& split, std::int64_t bytes) {
        return DataError(path + ": " + std::to_string(size) + " bytes of text leave " + std::to_string(bytes) +
                         " for the " + split + " split, fewer than one window of data.context " +
                         std::to_string(context) + " + 1; use a longer text or a shorter context");
    };
    if (size - testBegin <= context)
        throw tooShort("test", size - testBegin);
    if (validationBegin <= context)
        throw tooShort("training", validationBegin);
    if (spec.validationSplit > 0 && testBegin - validationBegin <= context)
        throw tooShort("validation", testBegin - validationBegin);

    DatasetSplits splits;
    splits.directory = path;
    // As many random windows as tile the training text once: an epoch reads about every byte
    // once, at offsets that differ from window to window.
    std::int64_t trainWindows = validationBegin / context;
    if (spec.limitTrain > 0)
        trainWindows = std::min(trainWindows, spec.limitTrain);
    splits.train =
        randomTextWindows(corpus.text, 0, validationBegin, context, trainWindows, seed, kTrainWindowsKey, "text/train");
    splits.validation = spec.validationSplit > 0
                            ? tiledTextWindows(corpus.text, validationBegin, testBegin, context, "text/validation")
                            : emptyWindows(context, "text/validation");
    splits.test = tiledTextWindows(corpus.text, testBegin, size, context, "text/test");
    keepFirst(splits.test, spec.limitTest);
    // The text and the cuts made in it; the training windows' offsets follow from the seed.
    DataFingerprint hash;
    hash.addText(corpus.text);
    for (double setting :
         {double(context), double(spec.validationSplit), double(spec.limitTrain), double(spec.limitTest)})
        hash.addNumber(setting);
    splits.fingerprint = hash.hex();
    // Token ids are not measurements: they are never normalised (data.normalize is ignored).
    return splits;
}

} // namespace mantissa
