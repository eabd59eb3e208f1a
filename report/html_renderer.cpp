#include "report/html_renderer.h"

#include "report/html_blocks.h"
#include "report/report_plots.h"

namespace mantissa::report {

namespace {

// Logical size of a plot image; drawn at twice the pixels so that it stays sharp on
// high-density screens and when printed from the browser.
const QSize kPlotSize(860, 340);
constexpr double kPlotScale = 2.0;

} // namespace

QByteArray renderHtml(const ReportDocument& document, const ReportData& data)
{
    QString html =
        QStringLiteral("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                       "<meta name=\"generator\" content=\"Mantissa %1\">\n"
                       "<title>%2</title>\n<style>\n%3\n</style>\n</head>\n<body>\n")
            .arg(escapeHtml(data.mantissaVersion), escapeHtml(document.title + QStringLiteral(": ") + data.title()),
                 reportStyleSheet(HtmlDialect::Browser));
    html += QStringLiteral("<h1>%1</h1>\n<p class=\"subtitle\">%2</p>\n")
                .arg(escapeHtml(document.title), escapeHtml(document.subtitle));
    for (const ReportBlock& block : document.blocks) {
        QString source;
        if (block.kind == ReportBlock::Kind::Plot) {
            const QByteArray png = renderPlotPng(block, data, scaledPlotSize(block, kPlotSize), kPlotScale);
            source = QStringLiteral("data:image/png;base64,") + QString::fromLatin1(png.toBase64());
        }
        html += blockHtml(block, HtmlDialect::Browser, source) + QLatin1Char('\n');
    }
    html += QStringLiteral("</body>\n</html>\n");
    return html.toUtf8();
}

} // namespace mantissa::report
