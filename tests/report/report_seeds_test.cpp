// A report of runs that repeat configurations with other seeds (a sweep's, or runs grouped by
// seed): the "Over the seeds" section holds the statistics table and the sentence per pair as
// the stats library computes them, and the mean curves with a min-max band.
#include "report/report_plots.h"
#include "report/report_sections.h"
#include "report/report_writer.h"
#include "stats/comparison_text.h"
#include "stats/sample_statistics.h"
#include "synthetic_runs.h"

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <qcustomplot.h>

#include <cmath>

using namespace mantissa;
using namespace mantissa::report;
using namespace mantissa::report::test;

class ReportSeedsTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath("runs.sqlite");
        m_specs = writeSeededRuns(m_db, m_ids);
    }

    void statisticsAndSentencesAreTheStatsLibrarys()
    {
        RunStore store(m_db);
        const ReportData data = loadReportData(store, m_ids);
        QVERIFY(data.seeds.has_value());
        QCOMPARE(data.seeds->results.size(), std::size_t(2));
        QCOMPARE(data.seeds->results[0].configuration.label, std::string("fp32"));
        QCOMPARE(data.seeds->results[1].configuration.label, std::string("mixed-fp16"));
        // The sentence, recomputed here from the runs' final accuracies with the stats library:
        // both configurations ran seeds 0, 1 and 2 (in that order), so the test is paired by seed.
        std::vector<double> fp32, mixed;
        for (int i = 0; i < 6; ++i)
            (i < 3 ? fp32 : mixed).push_back(double(syntheticTestAccuracy(m_specs[i], 2)));
        // One pair: Holm's correction over one p-value leaves it as it is.
        const stats::MetricFormat accuracy{"test accuracy", 100, "points", 1};
        const auto test = stats::pairedEquivalenceTest(fp32, mixed, 0.005);
        QVERIFY(test.has_value());
        stats::PairVerdict verdict;
        verdict.verdict = test->pEquivalent < 0.05 ? stats::Verdict::Equivalent : stats::Verdict::Inconclusive;
        verdict.test = test;
        verdict.pEquivalentAdjusted = test->pEquivalent;
        verdict.pDifferentAdjusted = test->pDifferent;
        const std::string expected = stats::describeVerdict("mixed-fp16", "fp32", accuracy, verdict, 0.005, 3, 3);
        QCOMPARE(data.seeds->sentences.front(), QString::fromStdString(expected));
        QVERIFY(expected.find("equivalent within +/-0.5 points") != std::string::npos);
        QVERIFY(expected.find("paired over 3 seeds") != std::string::npos);
        QVERIFY(expected.find(stats::formatP(test->pEquivalent)) != std::string::npos);
        // The table's accuracy cell: mean +/- sd [95% CI] over the three seeds.
        const stats::SampleSummary s = stats::summarize(fp32);
        const QString cell = QStringLiteral("%1 +/- %2 [%3, %4]")
                                 .arg(s.mean * 100, 0, 'f', 1)
                                 .arg(s.sd * 100, 0, 'f', 1)
                                 .arg(s.ciLow * 100, 0, 'f', 1)
                                 .arg(s.ciHigh * 100, 0, 'f', 1);
        bool found = false;
        for (const QStringList& row : data.seeds->table.rows)
            found = found || (row.front() == QStringLiteral("test accuracy (%)") && row[1] == cell);
        QVERIFY2(found, qPrintable(cell));

        // Markdown and HTML say the same, with both mean plots.
        const QStringList markdown = writeReport(store, data, m_dir.filePath("seeds.md"), ReportFormat::Markdown);
        const QString text = readTextFile(markdown.front());
        QVERIFY(text.contains(QStringLiteral("## Over the seeds")));
        QVERIFY(text.contains(
            QString::fromStdString(expected).replace("[", "\\[").replace("]", "\\]").replace("<", "\\<")));
        QVERIFY(text.contains(QStringLiteral("Holm-corrected over the pairs")));
        QVERIFY(text.contains(QString(cell).replace("[", "\\[").replace("]", "\\]"))); // Markdown escapes
        QVERIFY(markdown.contains(m_dir.filePath("seeds-mean-loss.png")));
        QVERIFY(markdown.contains(m_dir.filePath("seeds-mean-accuracy.png")));
        const QString html =
            readTextFile(writeReport(store, data, m_dir.filePath("seeds.html"), ReportFormat::Html).front());
        QVERIFY(html.contains(QStringLiteral("Over the seeds")));
        QVERIFY(html.contains(cell));
        QVERIFY(!writeReport(store, data, m_dir.filePath("seeds.pdf"), ReportFormat::Pdf).isEmpty());
    }

    void meanCurvesHaveBands()
    {
        RunStore store(m_db);
        const ReportData data = loadReportData(store, m_ids);
        QCustomPlot plot;
        fillPlot(plot, PlotKind::MeanAccuracy, QStringLiteral("accuracy"), data);
        QList<QCPGraph*> means, highs;
        for (int i = 0; i < plot.graphCount(); ++i) {
            if (plot.graph(i)->objectName() == QLatin1String("mean"))
                means << plot.graph(i);
            if (plot.graph(i)->objectName() == QLatin1String("band high"))
                highs << plot.graph(i);
        }
        QCOMPARE(means.size(), 2);
        QCOMPARE(highs.size(), 2);
        QVERIFY(highs[0]->channelFillGraph() != nullptr);
        for (int c = 0; c < 2; ++c) {
            double sum = 0, max = 0;
            for (int i = 0; i < 3; ++i) {
                const double a = syntheticTestAccuracy(m_specs[c * 3 + i], 2) * 100.0;
                sum += a;
                max = std::max(max, a);
            }
            QCOMPARE(means[c]->data()->size(), 2); // epochs 1 and 2
            QVERIFY(std::abs((means[c]->data()->constEnd() - 1)->value - sum / 3) < 1e-4);
            QVERIFY(std::abs((highs[c]->data()->constEnd() - 1)->value - max) < 1e-4);
        }
    }

    // Language models over seeds are summarised and compared in bits per character (lower is
    // better), the table's rows, the verdicts and the mean plot alike; not in next-byte accuracy.
    void aLanguageModelsSeedsAreJudgedInBitsPerCharacter()
    {
        const QString db = m_dir.filePath("text.sqlite");
        QList<qint64> ids;
        writeSeededRuns(db, ids, true);
        RunStore store(db);
        const ReportData data = loadReportData(store, ids);
        QVERIFY(data.seeds.has_value());
        QCOMPARE(data.seeds->metric, TaskMetric::BitsPerCharacter);
        // Every run ends with test loss 0.33 + 0.25 / 2 nats: (0.455 / ln 2) bits per character.
        const double bits = double(float(0.33 + 0.25 / 2)) / std::log(2.0);
        QStringList labels;
        for (const QStringList& row : data.seeds->table.rows) {
            labels << row.front();
            if (row.front() == QStringLiteral("test bits per character"))
                QCOMPARE(row[1], sweep::meanSdText({bits, bits, bits}, 1, 3, true));
        }
        QVERIFY2(labels.contains(QStringLiteral("test bits per character")), qPrintable(labels.join(", ")));
        QVERIFY2(labels.contains(QStringLiteral("best test bits per character")), qPrintable(labels.join(", ")));
        QVERIFY2(!labels.join(" ").contains(QStringLiteral("accuracy")), qPrintable(labels.join(", ")));
        QVERIFY2(
            data.seeds->sentences.front().startsWith(QStringLiteral("mixed-fp16 vs fp32: test bits per character ")),
            qPrintable(data.seeds->sentences.join("\n")));
        QVERIFY(
            sweep::verdictRule({}, data.seeds->metric).contains(QStringLiteral("+/-0.01 of test bits per character")));

        QCustomPlot plot;
        fillPlot(plot, PlotKind::MeanAccuracy, QStringLiteral("bits"), data);
        QCOMPARE(plot.yAxis->label(), QStringLiteral("test bits per character"));
        for (int i = 0; i < plot.graphCount(); ++i)
            if (plot.graph(i)->objectName() == QLatin1String("mean"))
                QVERIFY(std::abs((plot.graph(i)->data()->constEnd() - 1)->value - bits) < 1e-6);
    }

    // (Here for the widgets a plot needs.) A run with validation samples has a dotted
    // validation curve beside its test and train curves on the epoch plot.
    void aRunsValidationCurveIsPlotted()
    {
        SyntheticRun spec;
        spec.name = QStringLiteral("validated");
        spec.epochs = 2;
        spec.stepsPerEpoch = 30;
        spec.validation = true;
        const QString path = m_dir.filePath("validated.sqlite");
        const qint64 id = writeSyntheticRun(path, spec);
        RunStore store(path);
        const ReportData data = loadReportData(store, {id});
        QCustomPlot plot;
        fillPlot(plot, PlotKind::Accuracy, QStringLiteral("accuracy"), data);
        QCPGraph* validation = nullptr;
        for (int i = 0; i < plot.graphCount(); ++i)
            if (plot.graph(i)->name() == data.runs[0].label + QStringLiteral(" validation"))
                validation = plot.graph(i);
        QVERIFY(validation);
        QCOMPARE(validation->dataCount(), 2);
        QVERIFY(std::abs((validation->data()->constEnd() - 1)->value -
                         100.0 * double(syntheticTestAccuracy(spec, 2) - 0.005f)) < 1e-4);
    }

    void runsOfDifferentConfigsHaveNoSeedSection()
    {
        RunStore store(m_db);
        const ReportData data = loadReportData(store, {m_ids[0], m_ids[3]});
        QVERIFY(!data.seeds.has_value());
    }

private:
    QTemporaryDir m_dir;
    QString m_db;
    QList<SyntheticRun> m_specs;
    QList<qint64> m_ids;
};

QTEST_MAIN(ReportSeedsTest)
#include "report_seeds_test.moc"
