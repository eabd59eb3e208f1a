#pragma once
// CSV and TSV tables of numbers: one sample per row, numeric feature columns and a label
// column (classification) or target columns (regression); gzip-compressed or not (text_lines.h).
// Every problem is reported with the file, the row and the column.
#include "engine/config/config_enums.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mantissa {

struct Table {
    std::vector<std::string> columns; // the header's names, or "column 1", "column 2", ...
    bool hadHeader = false;
    std::int64_t rows = 0;         // data rows
    std::int64_t featureCount = 0; // columns less the label or target columns
    std::vector<float> features;   // rows x featureCount, row-major
    std::vector<float> labels;     // rows x targets, row-major (one class index a row when classifying)
    std::int64_t labelColumn = 0;  // the first label or target column's index, from 0
    std::int64_t targets = 1;      // label or target columns
};

// A delimited text file's rows of cells, as read (quotes removed, spaces around cells trimmed),
// each with its line number; empty lines are skipped. Throws DataError naming the file when
// it cannot be read.
struct TextRow {
    std::int64_t line = 0;
    std::vector<std::string> cells;
};
std::vector<TextRow> readTextRows(const std::string& path, char separator);

// How a table's labels are read.
struct TableLabels {
    std::int64_t column = 0;  // counted from 1; 0: the last column (or the last `targets` columns)
    bool regression = false;  // real-valued targets rather than class indices
    std::int64_t targets = 1; // regression: target columns, from `column` on
};

// Reads a table separated by `separator` (',' or '\t'). Cells may be quoted ("1.5"); empty
// lines are skipped. Throws DataError naming the file, the line and the column for a cell that
// is not a number, a row with another number of cells than the first, NaN or Inf among the
// features or targets, a class label that is not an integer >= 0, a table with no data rows,
// or label columns that are not there.
Table readTableFile(const std::string& path, char separator, TableHeader header, const TableLabels& labels);

} // namespace mantissa
