// A precision advice's report: what was advised and how, each layer's cost in each format as a
// chart and a table, the share of the FLOPs in each format, and, when the advice was verified
// over seeds, each configuration's gap to the baseline with its interval and the advice read
// against each rule of thumb (docs/advisor.md).
#include "report/advice_reading.h"
#include "report/report_sections.h"

#include <QJsonDocument>

#include <algorithm>
#include <cmath>

namespace mantissa::report {

namespace {

// The standard plot's height holds this many layer rows; a chart with more grows with them.
constexpr double kRowShare = 1.0 / 14;

ReportTable reportTable(const QStringList& header, const QList<QStringList>& rows, const QList<bool>& numeric)
{
    ReportTable table;
    table.header = header;
    table.rows = rows;
    table.numeric = numeric;
    while (table.numeric.size() < table.header.size())
        table.numeric << false;
    return table;
}

QString percent(double share) { return QString::number(100.0 * share, 'f', 1) + QLatin1Char('%'); }

QString signedNumber(double value, int decimals)
{
    return (value > 0 ? QStringLiteral("+") : QString()) + QString::number(value, 'f', decimals);
}

// The record of `other` against `baseline` on `metricKey`; null when the pair has none.
const sweep::PairVerdictRecord* findRecord(const std::vector<sweep::PairVerdictRecord>& records, std::size_t baseline,
                                           std::size_t other, const char* metricKey)
{
    for (const sweep::PairVerdictRecord& r : records)
        if (r.baseline == baseline && r.other == other && QLatin1String(r.metric->key) == QLatin1String(metricKey))
            return &r;
    return nullptr;
}

// "+0.0243 [+0.0068, +0.0419]" in the metric's reading scale; "-" without a test.
QString gapText(const sweep::PairVerdictRecord* record)
{
    if (!record || !record->verdict.test)
        return QStringLiteral("-");
    const stats::MetricFormat& format = record->metric->format;
    const stats::EquivalenceTest& test = *record->verdict.test;
    const int decimals = format.decimals + 1;
    return QStringLiteral("%1 [%2, %3]")
        .arg(signedNumber(test.difference * format.scale, decimals),
             signedNumber(test.differenceLow * format.scale, decimals),
             signedNumber(test.differenceHigh * format.scale, decimals));
}

QString verdictText(const sweep::PairVerdictRecord* record)
{
    if (!record)
        return QStringLiteral("-");
    QString text = QString::fromLatin1(sweep::verdictName(*record));
    if (record->verdict.verdict == stats::Verdict::Inconclusive && record->verdict.seedsToDecide > 0)
        text += QStringLiteral(" (~%1 seeds per arm would decide)").arg(record->verdict.seedsToDecide);
    return text;
}

void appendVerification(ReportDocument& document, const ReportData& data)
{
    const AdviceSummary& advice = *data.advice;
    const SeedStatistics& seeds = *data.seeds;
    const auto count = std::min<std::size_t>(seeds.results.size(), std::size_t(advice.candidates.size()));
    const std::vector<sweep::PairVerdictRecord> records = sweep::pairVerdicts(seeds.results, advice.margins);
    const sweep::SweepMetric& test = sweep::finalTestMetric(seeds.metric);
    const char* trainLoss = "final_train_loss";
    const QString low = advice.formats.value(0);

    document.heading(QStringLiteral("Verified over seeds"));
    document.paragraph(
        QStringLiteral("The advised config, the baseline and the rules of thumb, each trained over the same seeds "
                       "(the additive model behind the choice ignores how layers interact, and a forward-only "
                       "probe does not see the gradients' rounding: training every chosen layer low from the "
                       "start is the test). The gap is each configuration's mean minus the baseline's, with "
                       "its 95% interval."));
    ReportTable table;
    table.header = {QStringLiteral("Configuration"),
                    QStringLiteral("FLOPs in %1").arg(low),
                    QStringLiteral("Train-loss gap to the baseline"),
                    QStringLiteral("Verdict"),
                    QStringLiteral("Test %1 gap").arg(QString::fromLatin1(taskMetricName(seeds.metric))),
                    QStringLiteral("Verdict")};
    table.numeric = {false, true, true, false, true, false};
    for (std::size_t c = 0; c < count; ++c) {
        const AdviceCandidate& candidate = advice.candidates[qsizetype(c)];
        if (c == 0) {
            table.rows << QStringList{
                candidate.name, percent(candidate.flopShare), QStringLiteral("(baseline)"), QString(), QString(),
                QString()};
            continue;
        }
        const auto* loss = findRecord(records, 0, c, trainLoss);
        const auto* metric = findRecord(records, 0, c, test.key);
        table.rows << QStringList{candidate.name,  percent(candidate.flopShare), gapText(loss), verdictText(loss),
                                  gapText(metric), verdictText(metric)};
    }
    table.boldRow = count > 1 ? 1 : -1;
    document.table(table, sweep::verdictRule(advice.margins, seeds.metric));

    if (count <= 2)
        return;
    document.heading(QStringLiteral("Against the rules of thumb"), 2);
    ReportTable rules;
    rules.header = {QStringLiteral("Rule"), QStringLiteral("FLOPs low: rule / advice"),
                    QStringLiteral("Train loss: rule minus advice"), QStringLiteral("Reading")};
    rules.numeric = {false, true, true, false};
    const AdviceCandidate& advised = advice.candidates[1];
    for (std::size_t c = 2; c < count; ++c) {
        const AdviceCandidate& rule = advice.candidates[qsizetype(c)];
        const auto* record = findRecord(records, 1, c, trainLoss);
        rules.rows << QStringList{
            rule.name, percent(rule.flopShare) + QStringLiteral(" / ") + percent(advised.flopShare), gapText(record),
            adviceAgainstRuleText(advised.flopShare, rule.flopShare,
                                  record ? QString::fromLatin1(sweep::verdictName(*record)) : QString())};
    }
    document.table(rules,
                   QStringLiteral("For the same budget, the advice is better than a rule when it puts more FLOPs "
                                  "low at a gap no larger, or the same FLOPs at a smaller gap. A rule that gives "
                                  "the advice's own layers is named with the advice above."));
}

} // namespace

void appendAdvice(ReportDocument& document, const ReportData& data)
{
    if (!data.advice)
        return;
    const AdviceSummary& advice = *data.advice;
    document.heading(QStringLiteral("Precision advice"));
    document.paragraph(
        QStringLiteral("Which GEMM layers of %1 can go to %2. Each layer was measured alone in each format, the rest "
                       "staying as the baseline (%3) runs; the choice puts the most FLOPs low while the chosen "
                       "layers' held-out loss increases add up to at most %4.")
            .arg(advice.subject, advice.formats.join(QStringLiteral(" or ")), advice.baselineLabel)
            .arg(advice.budget));
    if (!advice.command.isEmpty())
        document.code(advice.command);
    document.plot(PlotKind::AdviceSensitivity, QStringLiteral("Loss increase per layer and format"),
                  advice.estimated
                      ? QStringLiteral("Each layer's held-out loss increase as the advisor estimated it from its "
                                       "score, scaled by the probed layers (diamonds); solid bars are the formats "
                                       "chosen, a layer without a solid bar stays as the baseline.")
                      : QStringLiteral("Each layer's held-out loss increase with that layer alone in the format "
                                       "(the probe); solid bars are the formats chosen, a layer without a solid bar "
                                       "stays as the baseline. A missing bar: the layer cannot take the format."));
    document.blocks.back().heightScale = std::max(1.0, (double(advice.layers.size()) + 2) * kRowShare);
    document.table(reportTable(advice.layerHeader, advice.layerRows, advice.layerNumeric),
                   QStringLiteral("Per GEMM layer, in the model's order: its forward FLOPs per sample, the probe's "
                                  "held-out loss increase, the score, the output's RMS error relative to fp32, and "
                                  "the format chosen."));
    QList<bool> numeric{false, true, true};
    document.table(reportTable(advice.shareHeader, advice.shareRows, numeric),
                   QStringLiteral("The share of the GEMM layers' FLOPs and weights in each format."));
    if (!advice.findings.isEmpty())
        document.bullets(advice.findings);
    if (data.seeds && !advice.candidates.isEmpty())
        appendVerification(document, data);
    else
        document.paragraph(QStringLiteral("Not verified over seeds: mantissa-cli advise ... --verify SEEDS trains the "
                                          "advice against the baseline and the rules of thumb."));
}

ReportDocument buildAdviceDocument(const ReportData& data)
{
    ReportDocument document;
    const AdviceSummary& advice = *data.advice;
    document.title = QStringLiteral("Mantissa precision advice");
    document.subtitle = QStringLiteral("%1 · written %2 UTC by Mantissa %3")
                            .arg(data.title(), data.generatedAt.toUTC().toString(QStringLiteral("yyyy-MM-dd HH:mm")),
                                 data.mantissaVersion);
    for (const RunData& run : data.runs)
        if (run.isIncomplete())
            document.notice(QStringLiteral("Run %1 of the verification has not finished: the verdicts use the "
                                           "finished runs only.")
                                .arg(run.info.name));
    appendAdvice(document, data);
    appendSeedStatistics(document, data);
    appendMachine(document, data);
    document.heading(QStringLiteral("Appendix: the advised config"));
    document.paragraph(QStringLiteral("mantissa-cli train CONFIG.json trains it as it is."));
    const QJsonDocument parsed = QJsonDocument::fromJson(advice.advisedConfigJson.toUtf8());
    document.code(parsed.isNull() ? advice.advisedConfigJson.trimmed()
                                  : QString::fromUtf8(parsed.toJson(QJsonDocument::Indented)).trimmed());
    return document;
}

} // namespace mantissa::report
