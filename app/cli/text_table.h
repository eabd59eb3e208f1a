#pragma once
// A plain-text table for the terminal: columns padded to their widest cell, numbers
// right-aligned so that digits line up. No colours or box drawing: the output is also
// read by scripts and pasted into issues.
#include <QList>
#include <QString>
#include <QStringList>

#include <cstdio>

namespace mantissa::cli {

class TextTable {
public:
    enum class Align { Left, Right };

    void addColumn(const QString& title, Align align = Align::Left);
    void addRow(const QStringList& cells); // one cell per column
    bool isEmpty() const { return m_rows.isEmpty(); }
    void print(std::FILE* out) const;

private:
    QStringList m_titles;
    QList<Align> m_aligns;
    QList<QStringList> m_rows;
};

} // namespace mantissa::cli
