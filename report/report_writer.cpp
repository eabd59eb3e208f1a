#include "report/report_writer.h"

#include "engine/util/check.h"
#include "report/csv_renderer.h"
#include "report/html_renderer.h"
#include "report/markdown_renderer.h"
#include "report/pdf_renderer.h"
#include "report/report_file.h"
#include "report/report_sections.h"

#include <QFileInfo>

namespace mantissa::report {

std::optional<ReportFormat> reportFormatForPath(const QString& path)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == QLatin1String("pdf"))
        return ReportFormat::Pdf;
    if (suffix == QLatin1String("html") || suffix == QLatin1String("htm"))
        return ReportFormat::Html;
    if (suffix == QLatin1String("md") || suffix == QLatin1String("markdown"))
        return ReportFormat::Markdown;
    if (suffix == QLatin1String("csv"))
        return ReportFormat::Csv;
    return std::nullopt;
}

QStringList writeReport(const RunStore& store, const ReportData& data, const QString& path, ReportFormat format)
{
    if (format == ReportFormat::Csv)
        return writeCsv(store, data, QFileInfo(path).absoluteFilePath());
    return writeReport(data, path, format);
}

QStringList writeReport(const ReportData& data, const QString& path, ReportFormat format)
{
    const QString absolute = QFileInfo(path).absoluteFilePath();
    switch (format) {
    case ReportFormat::Pdf: writePdf(buildReportDocument(data), data, absolute); return {absolute};
    case ReportFormat::Html: writeReportFile(absolute, renderHtml(buildReportDocument(data), data)); return {absolute};
    case ReportFormat::Markdown: return writeMarkdown(buildReportDocument(data), data, absolute);
    case ReportFormat::Csv: throw ConfigError("a CSV report reads the run store: writeReport(store, ...)");
    }
    return {};
}

} // namespace mantissa::report
