#pragma once
// Report blocks as HTML. The HTML file and the PDF (through QTextDocument, which reads a
// subset of HTML 4 and CSS 2) share this code; they differ where Qt's subset does: a
// notice box is a one-cell table for Qt, code wraps with pre-wrap instead of <pre>.
#include "report/report_document.h"

#include <QString>

namespace mantissa::report {

enum class HtmlDialect { Browser, QtRichText };

QString escapeHtml(const QString& text);

// A block as HTML. Plots are drawn by the caller: for a Plot block this returns the
// <img>/<figure> for `imageSource` (Browser) and an empty string for QtRichText.
QString blockHtml(const ReportBlock& block, HtmlDialect dialect, const QString& imageSource = {});

// The style sheet for each dialect (fonts, table rules, notice colours).
QString reportStyleSheet(HtmlDialect dialect);

} // namespace mantissa::report
