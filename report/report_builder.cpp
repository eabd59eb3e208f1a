// The document model's helpers and the order of the sections.
#include "report/report_sections.h"

#include <QJsonDocument>

namespace mantissa::report {

void ReportDocument::heading(const QString& text, int level)
{
    ReportBlock block;
    block.kind = ReportBlock::Kind::Heading;
    block.text = text;
    block.level = level;
    blocks << block;
}

void ReportDocument::paragraph(const QString& text)
{
    ReportBlock block;
    block.kind = ReportBlock::Kind::Paragraph;
    block.text = text;
    blocks << block;
}

void ReportDocument::notice(const QString& text)
{
    ReportBlock block;
    block.kind = ReportBlock::Kind::Notice;
    block.text = text;
    blocks << block;
}

void ReportDocument::bullets(const QStringList& items)
{
    ReportBlock block;
    block.kind = ReportBlock::Kind::Bullets;
    block.items = items;
    blocks << block;
}

void ReportDocument::table(const ReportTable& table, const QString& caption)
{
    ReportBlock block;
    block.kind = ReportBlock::Kind::Table;
    block.table = table;
    block.caption = caption;
    blocks << block;
}

void ReportDocument::plot(PlotKind kind, const QString& title, const QString& caption)
{
    ReportBlock block;
    block.kind = ReportBlock::Kind::Plot;
    block.plot = kind;
    block.text = title;
    block.caption = caption;
    blocks << block;
}

void ReportDocument::shadowHeatmap(int run, ShadowTensor kind, const QString& title, const QString& caption)
{
    plot(PlotKind::ShadowHeatmap, title, caption);
    blocks.back().run = run;
    blocks.back().shadowKind = kind;
}

void ReportDocument::code(const QString& text)
{
    ReportBlock block;
    block.kind = ReportBlock::Kind::Code;
    block.text = text;
    blocks << block;
}

QString plotSlug(const ReportBlock& block)
{
    switch (block.plot) {
    case PlotKind::Loss: return QStringLiteral("loss");
    case PlotKind::Accuracy: return QStringLiteral("accuracy");
    case PlotKind::LossScale: return QStringLiteral("loss-scale");
    case PlotKind::Throughput: return QStringLiteral("throughput");
    case PlotKind::MeanLoss: return QStringLiteral("mean-loss");
    case PlotKind::MeanAccuracy: return QStringLiteral("mean-accuracy");
    case PlotKind::AdviceSensitivity: return QStringLiteral("advice-sensitivity");
    case PlotKind::ShadowHeatmap:
        return QStringLiteral("shadow-%1-run-%2")
            .arg(QString::fromLatin1(shadowTensorName(block.shadowKind)).replace(u'_', u'-'))
            .arg(block.run + 1);
    }
    return QStringLiteral("plot");
}

void appendAppendix(ReportDocument& document, const ReportData& data)
{
    document.heading(QStringLiteral("Appendix: run configuration"));
    document.paragraph(
        QStringLiteral("The full config of each run as stored in the database; "
                       "saved as a file, mantissa-cli train CONFIG.json trains it again with the same seed."));
    for (const RunData& run : data.runs) {
        document.heading(QStringLiteral("%1 (%2)").arg(run.info.name, run.label), 2);
        QString json = run.info.configJson.trimmed();
        // Configs are stored as written; a one-line config is indented to be readable.
        if (!json.contains(QLatin1Char('\n'))) {
            const QJsonDocument parsed = QJsonDocument::fromJson(json.toUtf8());
            if (!parsed.isNull())
                json = QString::fromUtf8(parsed.toJson(QJsonDocument::Indented)).trimmed();
        }
        document.code(json.isEmpty() ? QStringLiteral("(no config stored)") : json);
    }
}

ReportDocument buildReportDocument(const ReportData& data)
{
    if (data.advice)
        return buildAdviceDocument(data);
    ReportDocument document;
    appendOverview(document, data);
    appendMachine(document, data);
    appendModel(document, data);
    appendSettings(document, data);
    appendResults(document, data);
    appendSeedStatistics(document, data);
    appendPlots(document, data);
    appendOverflows(document, data);
    appendShadowErrors(document, data);
    appendAppendix(document, data);
    return document;
}

} // namespace mantissa::report
