#include "report/advice_text.h"

#include "engine/util/enum_table.h"
#include "engine/util/format_number.h"

#include <cmath>
#include <limits>

namespace mantissa::report {

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }
QString key(LayerPrecision f) { return q(std::string(enumKey(f))); }

// A loss increase with its sign, to 4 significant digits: "+0.01234", "-0.0002".
QString signedNumber(double v)
{
    if (!std::isfinite(v))
        return QStringLiteral("nan");
    return (v > 0 ? QStringLiteral("+") : QString()) + QString::number(v, 'g', 4);
}

QString number(double v) { return std::isfinite(v) ? QString::number(v, 'g', 3) : QStringLiteral("nan"); }

QString percent(double share) { return QString::number(100.0 * share, 'f', 1) + "%"; }

} // namespace

AdviceText adviceText(const AdviceTable& table)
{
    AdviceText text;
    const bool several = table.formats.size() > 1;
    const auto column = [&](const QString& title, bool right) {
        text.header << title;
        text.rightAligned << right;
    };
    column(QStringLiteral("layer"), false);
    column(QStringLiteral("FLOPs"), true);
    for (LayerPrecision f : table.formats) {
        const QString suffix = several ? " " + key(f) : QString();
        if (!table.scoreOnly)
            column("probe dloss" + suffix, true);
        column("score" + suffix, true);
        column((table.scoreOnly ? "est. dloss" : "shadow rel.err") + suffix, true);
    }
    column(QStringLiteral("chosen"), false);
    for (std::size_t l = 0; l < table.layers.size(); ++l) {
        QStringList row{q(table.layers[l].name), q(formatSi(static_cast<double>(table.layers[l].flops)))};
        for (std::size_t f = 0; f < table.formats.size(); ++f) {
            const bool misfit = !table.misfits[l][f].empty();
            if (!table.scoreOnly)
                row << (misfit ? QStringLiteral("does not fit") : signedNumber(table.probes[l][f].lossIncrease));
            row << (misfit ? QStringLiteral("-") : number(table.scores[l][f]));
            if (table.scoreOnly)
                row << (misfit                 ? QStringLiteral("-")
                        : table.measured(l, f) ? signedNumber(table.costs[l][f]) + " (probe)"
                                               : signedNumber(table.costs[l][f]));
            else
                row << (misfit ? QStringLiteral("-") : number(table.probes[l][f].outputRelativeError));
        }
        const std::string chosen = chosenFormat(table, l);
        row << (chosen.empty() ? q(table.baselineLabel) + " (baseline)" : q(chosen));
        text.rows << row;
    }

    for (const FormatShare& share : formatShares(table)) {
        const QString name = share.format.empty() ? q(table.baselineLabel) + " (baseline)" : q(share.format);
        text.shares << QStringList{name, percent(share.flops), percent(share.weights)};
    }
    if (table.scoreOnly)
        for (std::size_t f = 0; f < table.formats.size(); ++f)
            text.scoreScales << q(scoreScaleSentence(table, f));
    // What the budget was spent on: measured increases, or in score-only their estimates.
    const QString what = table.scoreOnly ? QStringLiteral("estimated") : QStringLiteral("probe");
    const QString model = table.scoreOnly ? QStringLiteral("score-only: each layer's increase estimated from its "
                                                           "score, or measured where probed; additive")
                                          : QStringLiteral("additive model: each layer's increase measured alone");
    if (table.assignment.withinBudget)
        text.budget = QStringLiteral("loss budget %1: the chosen layers' %2 loss increases add up to %3 (%4; baseline "
                                     "held-out loss %5)")
                          .arg(number(table.budget), what, signedNumber(table.assignment.lossIncrease), model,
                               QString::number(table.baselineLoss, 'g', 5));
    else
        text.budget = QStringLiteral("no assignment meets the loss budget %1: the least total %2 loss increase found "
                                     "is %3, with the layers above (%4)")
                          .arg(number(table.budget), what, signedNumber(table.assignment.lossIncrease), model);
    if (!table.scoreOnly)
        for (std::size_t f = 0; f < table.formats.size(); ++f) {
            const std::optional<double>& r = table.rankCorrelations[f];
            text.correlations << QStringLiteral("rank correlation of score and probe (Spearman)%1: %2")
                                     .arg(several ? " in " + key(table.formats[f]) : QString(),
                                          r ? QString::number(*r, 'f', 3)
                                            : QStringLiteral("undefined (fewer than 2 layers measured, or no spread)"));
        }
    for (std::size_t l = 0; l < table.layers.size(); ++l)
        for (std::size_t f = 0; f < table.formats.size(); ++f)
            if (!table.misfits[l][f].empty())
                text.misfits << QStringLiteral("%1 cannot take %2: %3")
                                    .arg(q(table.layers[l].name), key(table.formats[f]), q(table.misfits[l][f]));
    return text;
}

AdviceSummary adviceSummary(const AdviceTable& table, const QString& subject, const QString& advisedConfigJson)
{
    AdviceSummary summary;
    summary.subject = subject;
    summary.baselineLabel = QString::fromStdString(table.baselineLabel);
    for (LayerPrecision f : table.formats)
        summary.formats << QString::fromStdString(std::string(enumKey(f)));
    summary.budget = table.budget;
    summary.estimated = table.scoreOnly;

    const AdviceText text = adviceText(table);
    summary.layerHeader = text.header;
    summary.layerRows = text.rows;
    summary.layerNumeric = text.rightAligned;
    summary.shareHeader = {QStringLiteral("Format"), QStringLiteral("FLOPs"), QStringLiteral("Weights")};
    summary.shareRows = text.shares;
    summary.findings = text.scoreScales;
    summary.findings << text.budget;
    summary.findings << text.correlations << text.misfits;

    for (std::size_t l = 0; l < table.layers.size(); ++l) {
        summary.layers << QString::fromStdString(table.layers[l].name);
        QList<double> costs;
        QList<bool> probed;
        int chosen = -1;
        const std::string format = chosenFormat(table, l);
        for (std::size_t f = 0; f < table.formats.size(); ++f) {
            costs << (table.misfits[l][f].empty() ? table.costs[l][f] : std::numeric_limits<double>::quiet_NaN());
            probed << table.measured(l, f);
            if (format == enumKey(table.formats[f]))
                chosen = int(f);
        }
        summary.costs << costs;
        summary.probed << probed;
        summary.chosen << chosen;
    }
    summary.advisedConfigJson = advisedConfigJson;
    return summary;
}

} // namespace mantissa::report
