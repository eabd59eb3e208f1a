#pragma once
// The Markdown report (GitHub-flavoured: pipe tables), for a repository or a wiki; the
// plots are PNG files beside it, named after it ("report-loss.png" for "report.md").
#include "report/report_data.h"
#include "report/report_document.h"

#include <QStringList>

namespace mantissa::report {

// Writes `path` and its PNG files; returns every file written, the Markdown first.
// Throws IoError naming the file that cannot be written.
QStringList writeMarkdown(const ReportDocument& document, const ReportData& data, const QString& path);

} // namespace mantissa::report
