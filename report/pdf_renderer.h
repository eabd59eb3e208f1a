#pragma once
// The PDF report: A4, text and tables laid out by QTextDocument, plots drawn as vectors
// by QCustomPlot through the same painter (they stay sharp at any zoom and their labels
// are text a reader can search and copy).
#include "report/report_data.h"
#include "report/report_document.h"

#include <QString>

namespace mantissa::report {

// Throws IoError when the file cannot be written.
void writePdf(const ReportDocument& document, const ReportData& data, const QString& path);

} // namespace mantissa::report
