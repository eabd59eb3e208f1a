#pragma once
// CSV and TSV tables of numbers: one sample per row, numeric feature columns and a label
// column. Every problem is reported with the file, the row and the column.
#include "engine/config/config_enums.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mantissa {

struct Table {
    std::vector<std::string> columns; // the header's names, or "column 1", "column 2", ...
    bool hadHeader = false;
    std::int64_t rows = 0;         // data rows
    std::int64_t featureCount = 0; // columns less the label column
    std::vector<float> features;   // rows x featureCount, row-major
    std::vector<float> labels;     // one per row
    std::int64_t labelColumn = 0;  // its index, from 0
};

// Reads a table separated by `separator` (',' or '\t'). `labelColumn` counts from 1, 0 for
// the last column. Cells may be quoted ("1.5"); empty lines are skipped. Throws DataError
// naming the file, the line and the column for a cell that is not a number, a row with another
// number of cells than the first, NaN or Inf among the features, a label that is not an
// integer >= 0, a table with no data rows, or a label column that is not there.
Table readTableFile(const std::string& path, char separator, TableHeader header, std::int64_t labelColumn);

} // namespace mantissa
