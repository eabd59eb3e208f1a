#pragma once
// Datasets from the user's own files (data.dataset "files"): an image folder, a CSV or TSV
// table, NumPy .npy or .npz arrays, or IDX files of any shape. Each source gives a training
// set and, where it has one, its own test set; loadDatasets (dataset.h) splits and prepares them.
#include "engine/data/dataset.h"

#include <string>
#include <vector>

namespace mantissa {

// What a source held, before any split.
struct FileSource {
    Dataset train; // every sample, or the source's own training part
    Dataset test;  // the source's own test part; empty when it has none
    bool givenTest = false;
    DataFormat format = DataFormat::Auto; // as resolved
    // As resolved, never auto. Regression: labels hold labelShape {K} real targets a sample.
    DataTask task = DataTask::Classification;
    std::vector<std::string> classNames; // image folders: the subfolders' names, in class order
    std::vector<std::string> notes;      // what was done that the user should know
    // Every file read and every folder listed or looked into: what the decoded-data cache
    // (data_cache.h) checks for changes before it trusts a copy.
    std::vector<std::string> inputs;
};

// `declared` unless it is auto; else by `path`'s extension or, for a folder, its contents.
// Throws DataError naming the path when neither tells.
DataFormat resolveDataFormat(const std::string& path, DataFormat declared);

// Points `spec` at `source`, what --data names: a dataset's key ("fashion-mnist"), "text:FILE",
// or a file or folder, read as spec.format says (text goes to the text dataset, the rest to
// "files"). Throws DataError when a path is not there, naming what --data takes.
void useDataSource(DataSpec& spec, const std::string& source);

// Reads spec.path as spec.format says. Throws DataError naming the file and the place for
// every problem in the data (issue list in docs/data.md), ConfigError for a bad setting.
FileSource readFileSource(const DataSpec& spec);

} // namespace mantissa
