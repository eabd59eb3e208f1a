#include "cli/text_table.h"

#include "engine/util/check.h"

namespace mantissa::cli {

void TextTable::addColumn(const QString& title, Align align)
{
    m_titles << title;
    m_aligns << align;
}

void TextTable::addRow(const QStringList& cells)
{
    MANTISSA_ASSERT(cells.size() == m_titles.size());
    m_rows << cells;
}

void TextTable::print(std::FILE* out) const
{
    QList<qsizetype> widths;
    for (const QString& title : m_titles)
        widths << title.size();
    for (const QStringList& row : m_rows) {
        for (qsizetype c = 0; c < row.size(); ++c)
            widths[c] = std::max(widths[c], row[c].size());
    }
    auto printLine = [&](const QStringList& cells) {
        QString line;
        for (qsizetype c = 0; c < cells.size(); ++c) {
            const bool last = c + 1 == cells.size();
            if (c > 0)
                line += QStringLiteral("  ");
            if (m_aligns[c] == Align::Right)
                line += cells[c].rightJustified(widths[c]);
            else
                line += last ? cells[c] : cells[c].leftJustified(widths[c]); // no trailing blanks
        }
        std::fprintf(out, "%s\n", qPrintable(line));
    };
    printLine(m_titles);
    for (const QStringList& row : m_rows)
        printLine(row);
}

} // namespace mantissa::cli
