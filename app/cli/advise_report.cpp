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

void printAdvice(std::FILE* out, const AdviceTable& table)
{
    const bool several = table.formats.size() > 1;
    TextTable t;
    t.addColumn("layer");
    t.addColumn("FLOPs", TextTable::Align::Right);
    for (LayerPrecision f : table.formats) {
        const QString suffix = several ? " " + key(f) : QString();
        if (!table.scoreOnly)
            t.addColumn("probe dloss" + suffix, TextTable::Align::Right);
        t.addColumn("score" + suffix, TextTable::Align::Right);
        if (table.scoreOnly)
            t.addColumn("est. dloss" + suffix, TextTable::Align::Right);
        else
            t.addColumn("shadow rel.err" + suffix, TextTable::Align::Right);
    }
    t.addColumn("chosen");
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
        t.addRow(row);
    }
    t.print(out);

    std::fprintf(out, "\nshare of the GEMM layers' FLOPs (weights) in each format:\n");
    for (const FormatShare& share : formatShares(table)) {
        const QString name = share.format.empty() ? q(table.baselineLabel) + " (baseline)" : q(share.format);
        std::fprintf(out, "  %-24s %7s of FLOPs  %7s of weights\n", qPrintable(name), qPrintable(percent(share.flops)),
                     qPrintable(percent(share.weights)));
    }
    if (table.scoreOnly)
        for (std::size_t f = 0; f < table.formats.size(); ++f)
            std::fprintf(out, "%s\n", scoreScaleSentence(table, f).c_str());
    // What the budget was spent on: measured increases, or in score-only their estimates.
    const char* what = table.scoreOnly ? "estimated" : "probe";
    const char* model = table.scoreOnly ? "score-only: each layer's increase estimated from its score, or "
                                          "measured where probed; additive"
                                        : "additive model: each layer's increase measured alone";
    if (table.assignment.withinBudget)
        std::fprintf(out,
                     "\nloss budget %s: the chosen layers' %s loss increases add up to %s (%s; baseline held-out "
                     "loss %s)\n",
                     qPrintable(number(table.budget)), what, qPrintable(signedNumber(table.assignment.lossIncrease)),
                     model, qPrintable(QString::number(table.baselineLoss, 'g', 5)));
    else
        std::fprintf(out,
                     "\nno assignment meets the loss budget %s: the least total %s loss increase found is %s, "
                     "with the layers above (%s)\n",
                     qPrintable(number(table.budget)), what, qPrintable(signedNumber(table.assignment.lossIncrease)),
                     model);
    if (!table.scoreOnly)
        for (std::size_t f = 0; f < table.formats.size(); ++f) {
            const std::optional<double>& r = table.rankCorrelations[f];
            std::fprintf(out, "rank correlation of score and probe (Spearman)%s: %s\n",
                         several ? qPrintable(" in " + key(table.formats[f])) : "",
                         r ? qPrintable(QString::number(*r, 'f', 3))
                           : "undefined (fewer than 2 layers measured, or no spread)");
        }
    for (std::size_t l = 0; l < table.layers.size(); ++l)
        for (std::size_t f = 0; f < table.formats.size(); ++f)
            if (!table.misfits[l][f].empty())
                std::fprintf(out, "%s cannot take %s: %s\n", table.layers[l].name.c_str(),
                             qPrintable(key(table.formats[f])), table.misfits[l][f].c_str());
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
