#include "cli/advise_report_file.h"

#include "engine/util/check.h"
#include "engine/util/enum_table.h"
#include "storage/run_store.h"
#include "sweep/sweep_results.h"

#include <cmath>
#include <limits>

namespace mantissa::cli {

report::ReportFormat adviceReportFormat(const QString& path)
{
    const std::optional<report::ReportFormat> format = report::reportFormatForPath(path);
    if (!format || *format == report::ReportFormat::Csv)
        throw ConfigError("--report " + path.toStdString() +
                          ": an advice's report is a .pdf, .html or .md file (its tables and chart)");
    return *format;
}

report::AdviceSummary adviceSummary(const AdviceTable& table, const AdviceReportInput& input)
{
    report::AdviceSummary summary;
    summary.subject = input.subject;
    summary.command = input.command;
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
    if (input.verification)
        summary.candidates = input.verification->candidates;
    summary.margins = input.margins;
    summary.advisedConfigJson = input.advisedConfigJson;
    return summary;
}

QStringList writeAdviceReport(const QString& path, const AdviceTable& table, const AdviceReportInput& input,
                              const storage::RunStore* store)
{
    const report::ReportFormat format = adviceReportFormat(path);
    report::ReportData data;
    if (input.verification && store) {
        QList<qint64> ids;
        for (const sweep::ConfigurationResults& r : sweep::loadStoredSweep(*store, input.verification->sweepId).results)
            for (const storage::RunInfo& run : r.runs)
                ids << run.id;
        data = report::loadReportData(*store, ids);
        // The sweep's configurations are labelled by their overrides' JSON; the report names
        // them as the command does, and judges them with the command's margins.
        if (data.seeds) {
            auto& results = data.seeds->results;
            for (std::size_t c = 0; c < results.size() && c < std::size_t(input.verification->candidates.size()); ++c)
                results[c].configuration.label = input.verification->candidates[qsizetype(c)].name.toStdString();
            data.seeds->title =
                QStringLiteral("The verification (sweep %1)").arg(input.verification->sweepId);
            data.seeds->table = sweep::statisticsTable(results);
            data.seeds->sentences = sweep::pairSentences(results, input.margins);
        }
        for (report::RunData& run : data.runs)
            run.label = run.info.name;
    } else {
        data.machine = report::localMachineInfo();
        data.generatedAt = QDateTime::currentDateTimeUtc();
        data.mantissaVersion = QStringLiteral(MANTISSA_VERSION);
    }
    data.advice = adviceSummary(table, input);
    return report::writeReport(data, path, format);
}

} // namespace mantissa::cli
