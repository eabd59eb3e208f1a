#pragma once
// A report as a list of format-neutral blocks (headings, paragraphs, tables, plots, code),
// built once from ReportData and rendered by each format: PDF, HTML and Markdown then say
// the same thing in the same order.
#include "engine/observe/records.h"

#include <QList>
#include <QString>
#include <QStringList>

namespace mantissa::report {

enum class PlotKind {
    Loss,
    Accuracy,
    LossScale,
    Throughput,
    MeanLoss,          // per configuration over its seeds, with a band (ReportData::seeds)
    MeanAccuracy,      // the same for the test metric per epoch (accuracy, RMSE or bits per character)
    ShadowHeatmap,     // one run's shadow error per layer and step, for one kind of tensor
    AdviceSensitivity, // the precision advice's loss increase per layer and format (ReportData::advice)
};

struct ReportTable {
    QStringList header; // a key-value table has {"Setting", "Value"} or similar
    QList<QStringList> rows;
    QList<bool> numeric; // per column: right-aligned
    int boldRow = -1;    // a totals row, or the baseline
};

struct ReportBlock {
    enum class Kind {
        Heading, // level 1 (section) or 2 (subsection)
        Paragraph,
        Notice,  // stands out: a run still running or interrupted
        Bullets, // items
        Table,
        Plot,
        Code, // preformatted text (the config JSON)
    };
    Kind kind = Kind::Paragraph;
    int level = 1;
    QString text;      // heading, paragraph, notice, code; a plot's title
    QStringList items; // bullets
    ReportTable table;
    PlotKind plot = PlotKind::Loss;
    QString caption; // under a plot or table
    // A plot of one run (ShadowHeatmap): its index in ReportData::runs, and the tensor kind.
    int run = -1;
    ShadowTensor shadowKind = ShadowTensor::Output;
    // A plot's height against the standard one: a chart with a row per layer grows with them.
    double heightScale = 1.0;
};

struct ReportDocument {
    QString title;
    QString subtitle; // date, version
    QList<ReportBlock> blocks;

    void heading(const QString& text, int level = 1);
    void paragraph(const QString& text);
    void notice(const QString& text);
    void bullets(const QStringList& items);
    void table(const ReportTable& table, const QString& caption = {});
    void plot(PlotKind kind, const QString& title, const QString& caption = {});
    void shadowHeatmap(int run, ShadowTensor kind, const QString& title, const QString& caption = {});
    void code(const QString& text);
};

// A short file-name-safe name of a plot ("loss", "loss-scale", "shadow-output-run-2"): unique
// within a report.
QString plotSlug(const ReportBlock& block);

} // namespace mantissa::report
