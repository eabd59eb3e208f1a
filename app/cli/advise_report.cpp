#include "cli/advise_report.h"

#include "cli/text_table.h"
#include "engine/util/enum_table.h"
#include "engine/util/format_number.h"

#include <cmath>

namespace mantissa::cli {

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

nlohmann::json jsonNumber(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

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

void printAdvice(std::FILE* out, const AdviceTable& table)
{
    const AdviceText text = adviceText(table);
    TextTable t;
    for (qsizetype c = 0; c < text.header.size(); ++c)
        t.addColumn(text.header[c], text.rightAligned[c] ? TextTable::Align::Right : TextTable::Align::Left);
    for (const QStringList& row : text.rows)
        t.addRow(row);
    t.print(out);

    std::fprintf(out, "\nshare of the GEMM layers' FLOPs (weights) in each format:\n");
    for (const QStringList& share : text.shares)
        std::fprintf(out, "  %-24s %7s of FLOPs  %7s of weights\n", qPrintable(share[0]), qPrintable(share[1]),
                     qPrintable(share[2]));
    for (const QString& line : text.scoreScales)
        std::fprintf(out, "%s\n", qPrintable(line));
    std::fprintf(out, "\n%s\n", qPrintable(text.budget));
    for (const QString& line : text.correlations + text.misfits)
        std::fprintf(out, "%s\n", qPrintable(line));
}

nlohmann::json adviceJson(const AdviceTable& table)
{
    nlohmann::json layers = nlohmann::json::array();
    for (std::size_t l = 0; l < table.layers.size(); ++l) {
        nlohmann::json row = {
            {"layer", table.layers[l].name}, {"flops", table.layers[l].flops}, {"weights", table.layers[l].weights}};
        for (std::size_t f = 0; f < table.formats.size(); ++f) {
            nlohmann::json cell = {{"score", jsonNumber(table.scores[l][f])}};
            if (!table.misfits[l][f].empty())
                cell["misfit"] = table.misfits[l][f];
            if (table.measured(l, f)) {
                cell["loss_increase"] = jsonNumber(table.probes[l][f].lossIncrease);
                cell["output_relative_error"] = jsonNumber(table.probes[l][f].outputRelativeError);
            }
            if (table.scoreOnly)
                cell["estimated_loss_increase"] = jsonNumber(table.costs[l][f]);
            row[std::string(enumKey(table.formats[f]))] = cell;
        }
        const std::string chosen = chosenFormat(table, l);
        row["chosen"] = chosen.empty() ? nlohmann::json(nullptr) : nlohmann::json(chosen);
        layers.push_back(row);
    }
    nlohmann::json correlations = nlohmann::json::object();
    for (std::size_t f = 0; f < table.formats.size() && !table.scoreOnly; ++f)
        correlations[std::string(enumKey(table.formats[f]))] =
            table.rankCorrelations[f] ? nlohmann::json(*table.rankCorrelations[f]) : nlohmann::json(nullptr);
    nlohmann::json scales = nlohmann::json::object();
    for (std::size_t f = 0; f < table.formats.size() && table.scoreOnly; ++f)
        scales[std::string(enumKey(table.formats[f]))] = table.scoreScale[f];
    return {{"layers", layers},
            {"score_scale", scales},
            {"budget", table.budget},
            {"within_budget", table.assignment.withinBudget},
            {"predicted_loss_increase", table.assignment.lossIncrease},
            {"baseline_loss", table.baselineLoss},
            {"rank_correlation", correlations}};
}

} // namespace mantissa::cli
