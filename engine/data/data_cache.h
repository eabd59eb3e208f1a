#pragma once
// The decoded-data cache: a file source as read, decoded, test-split and cut to its limits
// (everything that does not depend on the seed) kept in one file per source and settings under
// $XDG_CACHE_HOME/mantissa/data (else ~/.cache/mantissa/data), so that later loads (another
// run, a sweep's seeds, the workbench's data panel) read the tensors back instead of decoding.
//
// A copy is trusted only when its settings are the load's, every file and folder the source
// was read from is as it was (size, times, inode; the content itself where a timestamp could
// hide a change), and its checksums hold. Anything else is a miss: the source is decoded again
// and the copy rewritten. Copies are written to a temporary file and renamed into place, and
// one process decodes a source while others wanting it wait on a lock, so concurrent sweep
// workers neither corrupt a copy nor decode the same data twice.
#include "engine/config/run_config.h"
#include "engine/data/data_fingerprint.h"
#include "engine/data/dataset.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mantissa {

// What the cache holds: the seed-independent part of a file source's splits.
struct PreparedSource {
    Dataset train, test;
    DataTask task = DataTask::Classification;
    std::vector<std::string> classNames, notes;
    std::vector<std::string> inputs; // the files and folders it was read from (FileSource::inputs)
    // The fingerprint after train and test: a load finishes it with its own settings.
    DataFingerprint contentHash;
};

// Where the cache keeps its files: $XDG_CACHE_HOME/mantissa/data, else $HOME/.cache/mantissa/data;
// "" when neither variable is set.
std::string dataCacheDirectory();

// The text of everything a PreparedSource depends on besides the files' contents: the cache's
// layout version, the image decoders' versions, the source's absolute path and the settings
// that shape its tensors. A setting that changes what readFileSource, the test split or the
// limits produce must be part of it.
std::string dataCacheKey(const DataSpec& spec);

// The cache file for `key` in `directory`.
std::string dataCacheFile(const std::string& directory, const std::string& key);

// What became of a load through the cache.
struct DataCacheOutcome {
    bool hit = false;
    std::string file;    // the cache file used or written; "" when the cache is off
    std::string message; // for the notes: read from / written to / why not written or not trusted
};

// `decode()` when spec.cache is off; else the copy for `spec` when it can be trusted, or
// `decode()`'s result, written to the cache (within spec.cacheLimit MiB, the least recently
// used copies removed to make room). A copy that is there but cannot be trusted (truncated,
// corrupt, another layout) is named in the outcome's message, then replaced.
PreparedSource loadThroughDataCache(const DataSpec& spec, const std::function<PreparedSource()>& decode,
                                    DataCacheOutcome& outcome);

// The copy in `file` for `key` when it can be trusted; nothing for a missing or stale copy,
// nothing with `problem` set for one that is damaged.
std::optional<PreparedSource> readDataCacheFile(const std::string& file, const std::string& key, std::string& problem);
// Writes `source` for `key` to `file` through a temporary file and a rename. Throws DataError
// when the file cannot be written.
void writeDataCacheFile(const std::string& file, const std::string& key, const PreparedSource& source);

} // namespace mantissa
