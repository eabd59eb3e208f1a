#include "report/markdown_renderer.h"

#include "report/report_file.h"
#include "report/report_plots.h"

#include <QDir>
#include <QFileInfo>
#include <QUrl>

#include <algorithm>

namespace mantissa::report {

namespace {

const QSize kPlotSize(860, 340);

// Characters that would end a table cell or start Markdown markup inside text.
QString escapeMarkdown(QString text)
{
    text.replace(QLatin1Char('\\'), QStringLiteral("\\\\"));
    for (const char* special : {"|", "*", "_", "`", "<", "[", "]"})
        text.replace(QLatin1String(special), QLatin1Char('\\') + QLatin1String(special));
    text.replace(QLatin1Char('\n'), QLatin1Char(' '));
    return text;
}

QString tableMarkdown(const ReportTable& table)
{
    QStringList header = table.header;
    if (std::all_of(header.cbegin(), header.cend(), [](const QString& h) { return h.isEmpty(); }))
        header = QStringList(table.rows.isEmpty() ? 1 : table.rows.first().size(), QStringLiteral(" "));
    QString text = QStringLiteral("|");
    QString rule = QStringLiteral("|");
    for (qsizetype c = 0; c < header.size(); ++c) {
        text += QLatin1Char(' ') + escapeMarkdown(header[c]) + QStringLiteral(" |");
        const bool numeric = c < table.numeric.size() && table.numeric[c];
        rule += numeric ? QStringLiteral(" ---: |") : QStringLiteral(" --- |");
    }
    text += QLatin1Char('\n') + rule + QLatin1Char('\n');
    for (qsizetype r = 0; r < table.rows.size(); ++r) {
        text += QLatin1Char('|');
        for (const QString& cell : table.rows[r]) {
            const QString escaped = escapeMarkdown(cell);
            text += QLatin1Char(' ') +
                    (r == table.boldRow && !cell.isEmpty() ? QStringLiteral("**%1**").arg(escaped) : escaped) +
                    QStringLiteral(" |");
        }
        text += QLatin1Char('\n');
    }
    return text;
}

} // namespace

QStringList writeMarkdown(const ReportDocument& document, const ReportData& data, const QString& path)
{
    const QFileInfo info(path);
    const QDir directory = info.absoluteDir();
    QStringList written{info.absoluteFilePath()};
    QString text =
        QStringLiteral("# %1\n\n%2\n\n").arg(escapeMarkdown(document.title), escapeMarkdown(document.subtitle));
    for (const ReportBlock& block : document.blocks) {
        using Kind = ReportBlock::Kind;
        switch (block.kind) {
        case Kind::Heading:
            text += QString(block.level + 1, QLatin1Char('#')) + QLatin1Char(' ') + escapeMarkdown(block.text) +
                    QStringLiteral("\n\n");
            break;
        case Kind::Paragraph: text += escapeMarkdown(block.text) + QStringLiteral("\n\n"); break;
        case Kind::Notice: text += QStringLiteral("> **%1**\n\n").arg(escapeMarkdown(block.text)); break;
        case Kind::Bullets:
            for (const QString& item : block.items)
                text += QStringLiteral("- ") + escapeMarkdown(item) + QLatin1Char('\n');
            text += QLatin1Char('\n');
            break;
        case Kind::Table:
            text += tableMarkdown(block.table) + QLatin1Char('\n');
            if (!block.caption.isEmpty())
                text += QStringLiteral("*%1*\n\n").arg(escapeMarkdown(block.caption));
            break;
        case Kind::Plot: {
            const QString name = QStringLiteral("%1-%2.png").arg(info.completeBaseName(), plotSlug(block));
            const QString file = directory.filePath(name);
            writeReportFile(file, renderPlotPng(block, data, scaledPlotSize(block, kPlotSize), 2.0));
            written << file;
            text += QStringLiteral("![%1](%2)\n\n")
                        .arg(escapeMarkdown(block.text), QString::fromLatin1(QUrl::toPercentEncoding(name)));
            if (!block.caption.isEmpty())
                text += QStringLiteral("*%1*\n\n").arg(escapeMarkdown(block.caption));
            break;
        }
        case Kind::Code: {
            // A config is JSON; a command line is shell.
            const bool json = block.text.startsWith(QLatin1Char('{'));
            text += QStringLiteral("```%1\n%2\n```\n\n").arg(json ? "json" : "sh", block.text);
            break;
        }
        }
    }
    writeReportFile(info.absoluteFilePath(), text.toUtf8());
    return written;
}

} // namespace mantissa::report
