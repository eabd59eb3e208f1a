#pragma once
// The HTML report: one self-contained file that opens anywhere, offline, and survives
// being mailed: the style sheet is inline and the plots are PNG data URIs.
#include "report/report_data.h"
#include "report/report_document.h"

#include <QByteArray>

namespace mantissa::report {

QByteArray renderHtml(const ReportDocument& document, const ReportData& data);

} // namespace mantissa::report
