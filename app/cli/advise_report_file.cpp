#include "cli/advise_report_file.h"

#include "engine/util/build_identity.h"
#include "engine/util/check.h"
#include "report/advice_text.h"
#include "storage/run_store.h"
#include "sweep/sweep_results.h"

namespace mantissa::cli {

report::ReportFormat adviceReportFormat(const QString& path)
{
    const std::optional<report::ReportFormat> format = report::reportFormatForPath(path);
    if (!format || *format == report::ReportFormat::Csv)
        throw ConfigError("--report " + path.toStdString() +
                          ": an advice's report is a .pdf, .html or .md file (its tables and chart)");
    return *format;
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
            data.seeds->title = QStringLiteral("The verification (sweep %1)").arg(input.verification->sweepId);
            data.seeds->table = sweep::statisticsTable(results);
            data.seeds->sentences = sweep::pairSentences(results, input.margins);
        }
        for (report::RunData& run : data.runs)
            run.label = run.info.name;
    } else {
        data.machine = report::localMachineInfo();
        data.generatedAt = QDateTime::currentDateTimeUtc();
        data.mantissaVersion = QString::fromStdString(mantissa::buildIdentity());
    }
    data.advice = report::adviceSummary(table, input.subject, input.advisedConfigJson);
    data.advice->command = input.command;
    data.advice->margins = input.margins;
    if (input.verification)
        data.advice->candidates = input.verification->candidates;
    return report::writeReport(data, path, format);
}

} // namespace mantissa::cli
