// A precision advice's report: the advice against each rule of thumb read from FLOPs and the
// train-loss verdict in every case; the document's chart grows with the layers and its tables
// are the command's; with a verification the gap of each configuration to the baseline is the
// stats library's difference and interval, in the configurations' own names.
#include "report/advice_reading.h"
#include "report/report_plots.h"
#include "report/report_sections.h"
#include "report/report_writer.h"
#include "synthetic_runs.h"

#include <QFile>
#include <QImage>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <limits>

using namespace mantissa;
using namespace mantissa::report;
using namespace mantissa::report::test;

namespace {

// An advice on `layers` layers in mxfp4: every even layer chosen, the last one unable to take it.
AdviceSummary sampleAdvice(int layers)
{
    AdviceSummary advice;
    advice.subject = QStringLiteral("sample (the config trained here first)");
    advice.command = QStringLiteral("mantissa-cli advise --preset sample --format mxfp4");
    advice.baselineLabel = QStringLiteral("mixed-bf16");
    advice.formats = {QStringLiteral("mxfp4")};
    advice.budget = 0.01;
    advice.layerHeader = {"layer", "FLOPs", "probe dloss", "score", "shadow rel.err", "chosen"};
    advice.layerNumeric = {false, true, true, true, true, false};
    for (int l = 0; l < layers; ++l) {
        const QString name = QStringLiteral("%1.linear").arg(l);
        const bool fits = l + 1 < layers;
        advice.layers << name;
        advice.costs << QList<double>{fits ? 0.001 * (l + 1) : std::numeric_limits<double>::quiet_NaN()};
        advice.probed << QList<bool>{fits};
        advice.chosen << (fits && l % 2 == 0 ? 0 : -1);
        advice.layerRows << QStringList{name,  "1 k",  fits ? QString::number(0.001 * (l + 1)) : "does not fit",
                                        "0.1", "0.01", advice.chosen.back() == 0 ? "mxfp4" : "mixed-bf16 (baseline)"};
    }
    advice.shareHeader = {"Format", "FLOPs", "Weights"};
    advice.shareRows = {{"mixed-bf16 (baseline)", "50.0%", "50.0%"}, {"mxfp4", "50.0%", "50.0%"}};
    advice.findings = {QStringLiteral("loss budget 0.01: the chosen layers' probe loss increases add up to +0.009")};
    advice.advisedConfigJson = QStringLiteral("{\"name\": \"sample\"}");
    return advice;
}

ReportData adviceOnly(int layers)
{
    ReportData data;
    data.generatedAt = QDateTime::currentDateTimeUtc();
    data.mantissaVersion = QStringLiteral("test");
    data.advice = sampleAdvice(layers);
    return data;
}

const ReportBlock* findPlot(const ReportDocument& document, PlotKind kind)
{
    for (const ReportBlock& block : document.blocks)
        if (block.kind == ReportBlock::Kind::Plot && block.plot == kind)
            return &block;
    return nullptr;
}

} // namespace

class ReportAdviceTest : public QObject {
    Q_OBJECT

private slots:
    void theAdviceReadsAgainstARuleFromFlopsAndTheGap_data()
    {
        QTest::addColumn<double>("advice");
        QTest::addColumn<double>("rule");
        QTest::addColumn<QString>("verdict"); // the rule's train loss against the advice's
        QTest::addColumn<int>("expected");
        using R = AdviceAgainstRule;
        QTest::newRow("more FLOPs, smaller gap") << 0.9 << 0.8 << "worse" << int(R::AdviceBetter);
        QTest::newRow("same FLOPs, smaller gap") << 0.9 << 0.9002 << "worse" << int(R::AdviceBetter);
        QTest::newRow("more FLOPs, equivalent gap") << 0.9 << 0.8 << "equivalent" << int(R::AdviceBetter);
        QTest::newRow("fewer FLOPs, larger gap") << 0.8 << 0.9 << "better" << int(R::RuleBetter);
        QTest::newRow("same FLOPs, larger gap") << 0.9 << 0.9 << "better" << int(R::RuleBetter);
        QTest::newRow("fewer FLOPs, equivalent gap") << 0.8 << 0.9 << "equivalent" << int(R::RuleBetter);
        QTest::newRow("same FLOPs, equivalent gap") << 0.9 << 0.9 << "equivalent" << int(R::Same);
        QTest::newRow("fewer FLOPs, smaller gap") << 0.5 << 0.9 << "worse" << int(R::TradeOff);
        QTest::newRow("more FLOPs, larger gap") << 0.9 << 0.5 << "better" << int(R::TradeOff);
        QTest::newRow("more FLOPs, not told apart") << 0.9 << 0.5 << "inconclusive" << int(R::Undecided);
        QTest::newRow("too few runs") << 0.9 << 0.5 << "undecidable" << int(R::Undecided);
    }

    void theAdviceReadsAgainstARuleFromFlopsAndTheGap()
    {
        QFETCH(double, advice);
        QFETCH(double, rule);
        QFETCH(QString, verdict);
        QFETCH(int, expected);
        QCOMPARE(int(adviceAgainstRule(advice, rule, verdict)), expected);
    }

    void theSentenceSaysBothCounts()
    {
        QCOMPARE(adviceAgainstRuleText(0.92, 0.90, QStringLiteral("inconclusive")),
                 QStringLiteral("undecided: more seeds would tell: more FLOPs low and a gap not told apart"));
        QCOMPARE(adviceAgainstRuleText(0.5, 0.9, QStringLiteral("worse")),
                 QStringLiteral("a trade-off: fewer FLOPs low and a smaller gap"));
    }

    void theChartGrowsWithTheLayersAndTheTablesAreTheCommands()
    {
        const ReportData few = adviceOnly(4);
        const ReportData many = adviceOnly(40);
        const ReportDocument small = buildReportDocument(few);
        const ReportDocument large = buildReportDocument(many);
        QCOMPARE(small.title, QStringLiteral("Mantissa precision advice"));
        const ReportBlock* smallChart = findPlot(small, PlotKind::AdviceSensitivity);
        const ReportBlock* largeChart = findPlot(large, PlotKind::AdviceSensitivity);
        QVERIFY(smallChart && largeChart);
        QCOMPARE(smallChart->heightScale, 1.0);
        QCOMPARE(largeChart->heightScale, 42.0 / 14.0); // 40 rows and the axis' two, 14 to a standard plot
        // The layer table is the summary's, row for row.
        bool found = false;
        for (const ReportBlock& block : large.blocks)
            if (block.kind == ReportBlock::Kind::Table && block.table.header == many.advice->layerHeader) {
                QCOMPARE(block.table.rows, many.advice->layerRows);
                found = true;
            }
        QVERIFY(found);
        // Not verified: said, and no verification section.
        bool saysNotVerified = false;
        for (const ReportBlock& block : small.blocks) {
            QVERIFY(block.text != QStringLiteral("Verified over seeds"));
            saysNotVerified = saysNotVerified || block.text.startsWith(QStringLiteral("Not verified over seeds"));
        }
        QVERIFY(saysNotVerified);

        QTemporaryDir dir;
        const QStringList files = writeReport(many, dir.filePath("advice.md"), ReportFormat::Markdown);
        QCOMPARE(files.size(), 2);
        const QImage chart(dir.filePath("advice-advice-sensitivity.png"));
        QCOMPARE(chart.width(), 860 * 2);
        QCOMPARE(chart.height(), int(std::lround(340 * 42.0 / 14.0)) * 2);
        const QString markdown = readTextFile(files.front());
        QVERIFY(markdown.contains(QStringLiteral("```sh\nmantissa-cli advise --preset sample --format mxfp4\n```")));
        QVERIFY(markdown.contains(QStringLiteral("| 39.linear | 1 k | does not fit |")));
        QVERIFY_THROWS_EXCEPTION(ConfigError, writeReport(many, dir.filePath("advice.csv"), ReportFormat::Csv));
    }

    void theVerificationGivesEachGapWithItsInterval()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        QList<qint64> ids;
        writeSeededRuns(db, ids);
        RunStore store(db);
        ReportData data = loadReportData(store, ids);
        QVERIFY(data.seeds.has_value());
        data.advice = sampleAdvice(3);
        data.advice->candidates = {{QStringLiteral("baseline"), 0.0}, {QStringLiteral("advised"), 0.6}};
        const ReportDocument document = buildReportDocument(data);
        const std::vector<sweep::PairVerdictRecord> records =
            sweep::pairVerdicts(data.seeds->results, sweep::EquivalenceMargins{});
        const sweep::PairVerdictRecord* loss = nullptr;
        for (const sweep::PairVerdictRecord& r : records)
            if (QLatin1String(r.metric->key) == QLatin1String("final_train_loss"))
                loss = &r;
        QVERIFY(loss && loss->verdict.test);
        const stats::EquivalenceTest& test = *loss->verdict.test;
        const auto number = [](double v) { return (v > 0 ? "+" : "") + QString::number(v, 'f', 5); };
        const QString gap = QStringLiteral("%1 [%2, %3]")
                                .arg(number(test.difference), number(test.differenceLow), number(test.differenceHigh));
        bool found = false;
        for (const ReportBlock& block : document.blocks)
            if (block.kind == ReportBlock::Kind::Table && block.table.header.value(2).startsWith("Train-loss gap")) {
                QCOMPARE(block.table.rows.size(), 2);
                QCOMPARE(block.table.rows[0].first(), QStringLiteral("baseline"));
                QCOMPARE(block.table.rows[1].mid(0, 3), (QStringList{"advised", "60.0%", gap}));
                QVERIFY(block.table.rows[1][3].startsWith(QString::fromLatin1(sweep::verdictName(*loss))));
                QCOMPARE(block.table.boldRow, 1);
                found = true;
            }
        QVERIFY(found);
        QVERIFY(!writeReport(data, dir.filePath("advice.pdf"), ReportFormat::Pdf).isEmpty());
    }
};

QTEST_MAIN(ReportAdviceTest)
#include "report_advice_test.moc"
