#include "cli/advise_report.h"

#include "cli/text_table.h"
#include "engine/util/enum_table.h"

#include <cmath>

namespace mantissa::cli {

namespace {

nlohmann::json jsonNumber(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

} // namespace

void printAdvice(std::FILE* out, const AdviceTable& table)
{
    const report::AdviceText text = report::adviceText(table);
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
