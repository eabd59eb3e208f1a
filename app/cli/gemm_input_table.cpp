#include "cli/gemm_input_table.h"

#include "cli/run_format.h"
#include "cli/text_table.h"

#include <cmath>
#include <cstdio>

namespace mantissa::cli {

namespace {

QString key(std::string_view k) { return QString::fromLatin1(k.data(), qsizetype(k.size())); }

bool matches(const GemmInputNumerics& g, const QString& filter)
{
    if (filter.isEmpty())
        return true;
    const QString layer = QString::fromStdString(g.layer);
    return filter == layer || filter == QString::number(g.layerIndex) || layer.startsWith(filter + u'.');
}

} // namespace

QString formatSqnr(double db)
{
    if (std::isnan(db))
        return QStringLiteral("-");
    if (std::isinf(db))
        return db > 0 ? QStringLiteral("exact") : QStringLiteral("-inf");
    return QString::number(db, 'f', 1);
}

QString formatExponentRange(const std::map<int, std::size_t>& exponents)
{
    if (exponents.empty())
        return QStringLiteral("-");
    const int low = exponents.begin()->first, high = exponents.rbegin()->first;
    return low == high ? QString::number(low) : QStringLiteral("%1..%2").arg(low).arg(high);
}

int printGemmInputs(const NumericsRecord& record, const QString& layerFilter)
{
    using Align = TextTable::Align;
    TextTable table;
    table.addColumn(QStringLiteral("layer"));
    table.addColumn(QStringLiteral("gemm"));
    table.addColumn(QStringLiteral("operand"));
    table.addColumn(QStringLiteral("format"));
    table.addColumn(QStringLiteral("blocks"), Align::Right);
    table.addColumn(QStringLiteral("clipped"), Align::Right);
    table.addColumn(QStringLiteral("flushed"), Align::Right);
    table.addColumn(QStringLiteral("SQNR dB"), Align::Right);
    table.addColumn(QStringLiteral("scale exp"), Align::Right);
    table.addColumn(QStringLiteral("non-finite"), Align::Right);
    int rows = 0;
    for (const GemmInputNumerics& g : record.gemmInputs) {
        if (!matches(g, layerFilter))
            continue;
        const QuantStats& s = g.stats;
        table.addRow(
            {QString::fromStdString(g.layer), key(enumKey(g.pass)), key(enumKey(g.operand)),
             QString::fromStdString(g.format), QString::number(s.blocks), formatPercent(s.clippedBlockFraction()),
             formatPercent(s.flushedFraction()), formatSqnr(s.sqnrDb()), formatExponentRange(s.scaleExponents),
             s.nonFinite == 0
                 ? QStringLiteral("0")
                 : QString::fromStdString(describeNonFinite(std::int64_t(s.nonFinite), std::int64_t(s.nanInputs)))});
        ++rows;
    }
    if (rows == 0)
        return 0;
    std::printf("\nGEMM inputs quantised by the recipe (one row per layer, GEMM and operand)\n");
    table.print(stdout);
    std::printf("clipped = blocks whose largest value saturated; flushed = nonzero values that came back "
                "zero; SQNR = 10 log10(sum x^2 / sum (q - x)^2) against the fp32 values of the same step; "
                "scale exp = binary exponents of the block (or tensor) scales\n");
    return rows;
}

} // namespace mantissa::cli
