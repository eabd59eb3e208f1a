#include "engine/data/table_file.h"

#include "engine/data/text_lines.h"
#include "engine/util/check.h"

#include <charconv>
#include <cmath>
#include <optional>

namespace mantissa {

namespace {

[[noreturn]] void fail(const std::string& path, std::int64_t line, const std::string& problem)
{
    throw DataError(path + ":" + std::to_string(line) + ": " + problem);
}

std::vector<std::string> splitCells(const std::string& line, char separator)
{
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
                cell.push_back('"');
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                cell.push_back(c);
            }
        } else if (c == '"') {
            quoted = true;
        } else if (c == separator) {
            cells.push_back(std::move(cell));
            cell.clear();
        } else {
            cell.push_back(c);
        }
    }
    cells.push_back(std::move(cell));
    for (std::string& s : cells) { // spaces around a cell are layout, not content
        const std::size_t begin = s.find_first_not_of(' ');
        const std::size_t end = s.find_last_not_of(' ');
        s = begin == std::string::npos ? std::string() : s.substr(begin, end - begin + 1);
    }
    return cells;
}

std::optional<double> parseNumber(const std::string& cell)
{
    if (cell.empty())
        return std::nullopt;
    const char* begin = cell.data();
    if (*begin == '+')
        ++begin;
    double value = 0;
    const auto [end, error] = std::from_chars(begin, cell.data() + cell.size(), value);
    if (error != std::errc() || end != cell.data() + cell.size())
        return std::nullopt;
    return value;
}

std::string quote(const std::string& cell)
{
    return "\"" + (cell.size() > 40 ? cell.substr(0, 40) + "..." : cell) + "\"";
}

} // namespace

std::vector<TextRow> readTextRows(const std::string& path, char separator)
{
    TextLines in(path);
    std::vector<TextRow> rows;
    std::string line;
    while (in.next(line))
        if (line.find_first_not_of(" \t") != std::string::npos)
            rows.push_back({in.lineNumber(), splitCells(line, separator)});
    return rows;
}

Table readTableFile(const std::string& path, char separator, TableHeader header, const TableLabels& labels)
{
    TextLines in(path);
    Table table;
    std::string line;
    std::size_t width = 0;
    bool first = true;
    while (in.next(line)) {
        const std::int64_t lineNumber = in.lineNumber();
        if (line.find_first_not_of(" \t") == std::string::npos)
            continue;
        const std::vector<std::string> cells = splitCells(line, separator);
        if (first) {
            first = false;
            width = cells.size();
            if (width < 2)
                fail(path, lineNumber,
                     "the first row has one column; a table needs features and a label" +
                         std::string(separator == ',' ? " (is it tab-separated? use data.format tsv)"
                                                      : " (is it comma-separated? use data.format csv)"));
            const auto columns = static_cast<std::int64_t>(width);
            table.targets = labels.regression ? labels.targets : 1;
            if (labels.column > columns)
                fail(path, lineNumber,
                     "data.label_column is " + std::to_string(labels.column) + " but the table has " +
                         std::to_string(width) + " columns");
            table.labelColumn = labels.column == 0 ? columns - table.targets : labels.column - 1;
            if (table.labelColumn < 0 || table.labelColumn + table.targets > columns || table.targets >= columns)
                fail(path, lineNumber,
                     std::to_string(table.targets) + " target columns (data.targets) from column " +
                         std::to_string(table.labelColumn + 1) + " do not fit a table of " + std::to_string(width) +
                         " columns with a feature left");
            table.featureCount = columns - table.targets;
            bool numeric = true;
            for (const std::string& cell : cells)
                numeric = numeric && parseNumber(cell).has_value();
            table.hadHeader = header == TableHeader::Yes || (header == TableHeader::Auto && !numeric);
            if (table.hadHeader) {
                table.columns = cells;
                continue;
            }
            for (std::size_t c = 0; c < width; ++c)
                table.columns.push_back("column " + std::to_string(c + 1));
        }
        if (cells.size() != width)
            fail(path, lineNumber,
                 "the row has " + std::to_string(cells.size()) + " cells but the first has " + std::to_string(width) +
                     " (ragged rows)");
        for (std::size_t c = 0; c < width; ++c) {
            const std::string where =
                "column " + std::to_string(c + 1) + (table.hadHeader ? " (" + table.columns[c] + ")" : std::string());
            const std::optional<double> value = parseNumber(cells[c]);
            if (!value)
                fail(path, lineNumber,
                     where + ": " +
                         (cells[c].empty() ? std::string("the cell is empty") : quote(cells[c]) + " is not a number"));
            const auto column = static_cast<std::int64_t>(c);
            if (column >= table.labelColumn && column < table.labelColumn + table.targets) {
                if (labels.regression && !std::isfinite(*value))
                    fail(path, lineNumber, where + ": the target " + cells[c] + " is not a finite number");
                if (!labels.regression &&
                    (!std::isfinite(*value) || *value < 0 || *value != std::floor(*value) || *value > (1 << 24)))
                    fail(path, lineNumber,
                         where + ": the label " + cells[c] +
                             " is not a class index (an integer from 0); is data.label_column the right column? "
                             "For real-valued targets set data.task to regression");
                table.labels.push_back(static_cast<float>(*value));
                continue;
            }
            if (!std::isfinite(*value))
                fail(path, lineNumber, where + ": " + cells[c] + " is not a finite number (NaN or Inf in a feature)");
            table.features.push_back(static_cast<float>(*value));
        }
        ++table.rows;
    }
    if (table.rows == 0)
        throw DataError(path + ": the table has no data rows");
    return table;
}

} // namespace mantissa
