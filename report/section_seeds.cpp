#include "report/report_plots.h"
#include "report/report_sections.h"

namespace mantissa::report {

void appendSeedStatistics(ReportDocument& document, const ReportData& data)
{
    if (!data.seeds)
        return;
    const SeedStatistics& seeds = *data.seeds;
    document.heading(QStringLiteral("Over the seeds"));
    document.paragraph(QStringLiteral("%1: %2 configurations. One seed can make a precision look better or worse "
                                      "than it is; these figures are over every seed of each configuration.")
                           .arg(seeds.title)
                           .arg(seeds.results.size()));
    ReportTable table;
    table.header = seeds.table.header;
    table.rows = seeds.table.rows;
    for (qsizetype c = 0; c < table.header.size(); ++c)
        table.numeric << (c > 0);
    document.table(table, QStringLiteral("Mean +/- sd [95% confidence interval of the mean] of each final metric "
                                         "over the runs that did not diverge; the divergence rate with Wilson's "
                                         "95% interval."));
    if (!seeds.sentences.isEmpty()) {
        document.paragraph(sweep::verdictRule({}, seeds.metric));
        document.bullets(seeds.sentences);
    }
    document.plot(PlotKind::MeanLoss, QStringLiteral("Training loss over the seeds"),
                  QStringLiteral("Per configuration, the mean over its finished runs of the training loss (each "
                                 "run's running mean over 1/60 of its steps) with the band from the lowest to the "
                                 "highest run."));
    const QString metric = QString::fromLatin1(taskMetricName(seeds.metric));
    document.plot(PlotKind::MeanAccuracy, QStringLiteral("Test %1 over the seeds").arg(metric),
                  QStringLiteral("Per configuration, the mean test %1 after each epoch over its finished "
                                 "runs, with the band from the lowest to the highest run.")
                      .arg(metric));
}

} // namespace mantissa::report
