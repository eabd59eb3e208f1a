#pragma once
// Byte-level text for language models: a corpus read from a file (or every text file of a
// directory, e.g. Debian's fortunes), cut into training windows at seeded random offsets and
// evaluation windows that tile the held-out text. A window of `context` bytes is one sample;
// its labels are the same window shifted by one byte (the next byte at every position).
#include "engine/data/dataset.h"

#include <cstdint>
#include <string>

namespace mantissa {

// Byte values are the classes: 256 of them, whatever the text.
inline constexpr std::int64_t kByteVocabulary = 256;
// The corpus scripts/setup installs (Debian's fortunes package).
inline constexpr const char* kDefaultTextCorpus = "/usr/share/games/fortunes";

struct TextCorpus {
    std::string text;
    std::string source; // the file or directory it was read from
    int files = 0;
};

// Reads `path`: a text file, or a directory whose regular files are read in name order
// (fortunes' index files *.dat and links such as *.u8 are skipped). In fortune files the
// "%" lines that separate entries become blank lines. Throws DataError naming the file for
// a missing or unreadable path, an empty corpus, a NUL byte (a binary file) or bytes that are
// not UTF-8 (with the byte offset).
TextCorpus readTextCorpus(const std::string& path);

// `count` windows of `context` bytes starting at seeded random offsets of text[begin, end),
// each with its next-byte labels. The offsets depend only on (seed, salt, begin, end, count).
Dataset randomTextWindows(const std::string& text, std::int64_t begin, std::int64_t end, std::int64_t context,
                          std::int64_t count, std::uint64_t seed, std::uint64_t salt, const std::string& name);
// Consecutive, non-overlapping windows covering text[begin, end) (the tail that does not fill
// a window is left out), so that an evaluation sees every byte once, in order.
Dataset tiledTextWindows(const std::string& text, std::int64_t begin, std::int64_t end, std::int64_t context,
                         const std::string& name);

// The splits of a text run: the last 10% of the corpus is the test text, the validation
// fraction (data.validationSplit) the text before it, the rest the training text; training
// takes as many random windows as fit its text once (or data.limitTrain). Throws DataError
// for a corpus shorter than what the splits and the context need.
DatasetSplits loadTextDatasets(const DataSpec& spec, std::uint64_t seed);

} // namespace mantissa
