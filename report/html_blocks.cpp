#include "report/html_blocks.h"

#include <algorithm>

namespace mantissa::report {

namespace {

QString tableHtml(const ReportTable& table, HtmlDialect dialect)
{
    const auto alignment = [&](qsizetype column) {
        return column < table.numeric.size() && table.numeric[column] ? QStringLiteral(" align=\"right\"")
                                                                      : QStringLiteral(" align=\"left\"");
    };
    QString html = QStringLiteral("<table class=\"data\" width=\"100%\" cellspacing=\"0\" cellpadding=\"4\">");
    const bool hasHeader =
        std::any_of(table.header.cbegin(), table.header.cend(), [](const QString& h) { return !h.isEmpty(); });
    if (hasHeader) {
        html += QStringLiteral("<thead><tr>");
        for (qsizetype c = 0; c < table.header.size(); ++c)
            html += QStringLiteral("<th%1>%2</th>").arg(alignment(c), escapeHtml(table.header[c]));
        html += QStringLiteral("</tr></thead>");
    }
    html += QStringLiteral("<tbody>");
    for (qsizetype r = 0; r < table.rows.size(); ++r) {
        // Qt's subset has no :nth-child, so stripes are attributes.
        const bool stripe = dialect == HtmlDialect::QtRichText && r % 2 == 1;
        html += stripe ? QStringLiteral("<tr bgcolor=\"#f2f5f8\">") : QStringLiteral("<tr>");
        const QStringList& row = table.rows[r];
        for (qsizetype c = 0; c < row.size(); ++c) {
            QString cell = escapeHtml(row[c]);
            if (r == table.boldRow && !cell.isEmpty())
                cell = QStringLiteral("<b>%1</b>").arg(cell);
            html += QStringLiteral("<td%1>%2</td>").arg(alignment(c), cell);
        }
        html += QStringLiteral("</tr>");
    }
    return html + QStringLiteral("</tbody></table>");
}

QString captionHtml(const QString& caption)
{
    return caption.isEmpty() ? QString() : QStringLiteral("<p class=\"caption\">%1</p>").arg(escapeHtml(caption));
}

} // namespace

QString escapeHtml(const QString& text) { return text.toHtmlEscaped(); }

QString blockHtml(const ReportBlock& block, HtmlDialect dialect, const QString& imageSource)
{
    using Kind = ReportBlock::Kind;
    switch (block.kind) {
    case Kind::Heading: return QStringLiteral("<h%1>%2</h%1>").arg(block.level + 1).arg(escapeHtml(block.text));
    case Kind::Paragraph: return QStringLiteral("<p>%1</p>").arg(escapeHtml(block.text));
    case Kind::Notice:
        if (dialect == HtmlDialect::QtRichText)
            return QStringLiteral("<table class=\"notice\" width=\"100%\" cellpadding=\"6\" cellspacing=\"0\" "
                                  "border=\"1\" bgcolor=\"#fff4d6\"><tr><td><b>%1</b></td></tr></table>")
                .arg(escapeHtml(block.text));
        return QStringLiteral("<div class=\"notice\">%1</div>").arg(escapeHtml(block.text));
    case Kind::Bullets: {
        QString html = QStringLiteral("<ul>");
        for (const QString& item : block.items)
            html += QStringLiteral("<li>%1</li>").arg(escapeHtml(item));
        return html + QStringLiteral("</ul>");
    }
    case Kind::Table: return tableHtml(block.table, dialect) + captionHtml(block.caption);
    case Kind::Plot:
        if (dialect == HtmlDialect::QtRichText)
            return {};
        return QStringLiteral("<figure><img src=\"%1\" alt=\"%2\"><figcaption>%3</figcaption></figure>")
            .arg(imageSource, escapeHtml(block.text), escapeHtml(block.caption));
    case Kind::Code:
        if (dialect == HtmlDialect::QtRichText)
            return QStringLiteral("<p class=\"code\">%1</p>").arg(escapeHtml(block.text));
        return QStringLiteral("<pre><code>%1</code></pre>").arg(escapeHtml(block.text));
    }
    return {};
}

QString reportStyleSheet(HtmlDialect dialect)
{
    if (dialect == HtmlDialect::QtRichText) {
        // Sizes in points: the PDF is laid out in points.
        return QStringLiteral(
            "h1 { font-size: 20pt; font-weight: bold; margin-top: 0; margin-bottom: 2pt; }"
            "h2 { font-size: 14pt; font-weight: bold; color: #1f3a5f; margin-top: 10pt; margin-bottom: 4pt; }"
            "h3 { font-size: 11pt; font-weight: bold; color: #1f3a5f; margin-top: 8pt; margin-bottom: 3pt; }"
            "p { margin-top: 2pt; margin-bottom: 4pt; }"
            "p.subtitle { color: #555555; margin-bottom: 8pt; }"
            "p.caption { font-size: 7.5pt; color: #555555; margin-top: 2pt; margin-bottom: 6pt; }"
            "p.code { font-family: 'DejaVu Sans Mono', monospace; font-size: 7pt; white-space: pre-wrap; "
            "margin-top: 2pt; margin-bottom: 6pt; }"
            "table.data { border-collapse: collapse; border-width: 0; }"
            "th { font-size: 8pt; font-weight: bold; background-color: #dde5ee; }"
            "td { font-size: 8pt; }"
            "li { margin-bottom: 2pt; }");
    }
    return QStringLiteral(
        "body { font-family: 'DejaVu Sans', 'Segoe UI', Helvetica, Arial, sans-serif; font-size: 14px; color: #1a1a1a;"
        " max-width: 960px; margin: 24px auto; padding: 0 16px; line-height: 1.45; }\n"
        "h1 { font-size: 28px; margin-bottom: 4px; }\n"
        "h2 { font-size: 21px; color: #1f3a5f; border-bottom: 1px solid #c8d3df; padding-bottom: 3px; margin-top: "
        "32px; }\n"
        "h3 { font-size: 17px; color: #1f3a5f; margin-top: 22px; }\n"
        ".subtitle { color: #555; margin-top: 0; }\n"
        "table.data { border-collapse: collapse; width: 100%; margin: 6px 0; font-size: 13px; }\n"
        "table.data th { background: #dde5ee; border-bottom: 1px solid #9fb2c6; }\n"
        "table.data td, table.data th { padding: 4px 8px; }\n"
        "table.data tbody tr:nth-child(even) { background: #f2f5f8; }\n"
        ".caption, figcaption { font-size: 12px; color: #555; margin: 2px 0 14px 0; }\n"
        ".notice { background: #fff4d6; border: 1px solid #d39e00; padding: 10px 12px; margin: 10px 0; font-weight: "
        "bold; }\n"
        "figure { margin: 12px 0 20px 0; }\n"
        "figure img { width: 100%; max-width: 880px; height: auto; border: 1px solid #e3e3e3; }\n"
        "pre { background: #f6f8fa; border: 1px solid #e1e4e8; padding: 10px; font-size: 12px; overflow-x: auto; }\n"
        "code { font-family: 'DejaVu Sans Mono', Menlo, Consolas, monospace; }");
}

} // namespace mantissa::report
