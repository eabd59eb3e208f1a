#pragma once
// The entry point: a report of one run or a comparison, in the format its file name asks
// for. The CLI's report command and the GUI's "Export report..." both call this.
//
// Rendering draws QCustomPlot widgets and QPixmaps: it needs a QApplication and runs on
// its thread. Reading the runs (loadReportData) may happen on another thread with its own
// RunStore; a GUI loads there and renders here.
#include "report/report_data.h"

#include <QStringList>

#include <optional>

namespace mantissa::report {

enum class ReportFormat { Pdf, Html, Markdown, Csv };

// By suffix: .pdf, .html/.htm, .md/.markdown, .csv (case-insensitive).
std::optional<ReportFormat> reportFormatForPath(const QString& path);

// Writes the report of `data` to `path`; returns every file written, the report first
// (Markdown adds its PNG files, CSV its epochs file). `store` is read again only for CSV.
// Throws IoError when a file cannot be written, StorageError when the store fails.
QStringList writeReport(const RunStore& store, const ReportData& data, const QString& path, ReportFormat format);
// The same for the formats that read nothing more than `data` (PDF, HTML, Markdown); throws
// ConfigError for CSV.
QStringList writeReport(const ReportData& data, const QString& path, ReportFormat format);

} // namespace mantissa::report
