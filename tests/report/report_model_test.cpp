// The report's model, without rendering: machine and device parsing, number formats,
// curve thinning, and what the data, comparison and overflow summaries say about the
// synthetic runs.
#include "engine/model/tensor_core_alignment.h"
#include "report/comparison.h"
#include "report/machine_info.h"
#include "report/overflow_summary.h"
#include "report/report_data.h"
#include "report/report_format.h"
#include "report/report_plots.h"
#include "report/report_sections.h"
#include "report/series_thinning.h"
#include "synthetic_runs.h"

#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <limits>
#include <memory>

using namespace mantissa;
using namespace mantissa::report;
using namespace mantissa::report::test;

class ReportModelTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_sample = writeSampleDatabase(m_dir.filePath(QStringLiteral("runs.sqlite")));
        m_store = std::make_unique<storage::RunStore>(m_sample.path);
    }

    void parsesCpuInfo()
    {
        const QString cpuinfo = QStringLiteral(
            "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz\n"
            "physical id\t: 0\ncore id\t\t: 0\n\n"
            "processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz\nphysical id\t: 0\ncore id\t\t: "
            "0\n\n"
            "processor\t: 2\nmodel name\t: Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz\nphysical id\t: 0\ncore id\t\t: "
            "1\n\n");
        const MachineInfo info = parseCpuInfo(cpuinfo);
        QCOMPARE(info.cpuModel, QStringLiteral("Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz"));
        QCOMPARE(info.logicalCores, 3);
        QCOMPARE(info.physicalCores, 2);
        QVERIFY(localMachineInfo().logicalCores > 0); // this Linux machine
    }

    void parsesDeviceDescriptions_data()
    {
        QTest::addColumn<QString>("device");
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("threads");
        QTest::addColumn<QString>("driver");
        QTest::addColumn<QString>("cuda");
        QTest::addColumn<QString>("cudnn");
        QTest::newRow("cpu as the CLI records it") << "cpu (OpenBLAS, 8 threads, F16C): AMD EPYC 7B13"
                                                   << "cpu"
                                                   << "AMD EPYC 7B13" << 8 << ""
                                                   << ""
                                                   << "";
        QTest::newRow("cpu, no model") << "cpu (OpenBLAS, 1 thread)"
                                       << "cpu"
                                       << "" << 1 << ""
                                       << ""
                                       << "";
        QTest::newRow("cuda with versions") << "cuda: NVIDIA H100 80GB HBM3, driver 550.54.15, CUDA 12.4, cuDNN 9.1.0"
                                            << "cuda"
                                            << "NVIDIA H100 80GB HBM3" << 0 << "550.54.15"
                                            << "12.4"
                                            << "9.1.0";
        QTest::newRow("cuda:1 in parentheses") << "cuda:1 (NVIDIA A100-SXM4-40GB, driver 535.104, CUDA 12.2)"
                                               << "cuda"
                                               << "NVIDIA A100-SXM4-40GB" << 0 << "535.104"
                                               << "12.2"
                                               << "";
        QTest::newRow("unknown") << "tpu v4"
                                 << ""
                                 << "" << 0 << ""
                                 << ""
                                 << "";
    }

    void parsesDeviceDescriptions()
    {
        QFETCH(QString, device);
        const DeviceInfo info = parseDeviceDescription(device);
        QCOMPARE(info.description, device);
        QTEST(info.kind, "kind");
        QTEST(info.name, "name");
        QTEST(info.threads, "threads");
        QTEST(info.driver, "driver");
        QTEST(info.cudaVersion, "cuda");
        QTEST(info.cudnnVersion, "cudnn");
    }

    void formatsNumbers()
    {
        QCOMPARE(formatPercent(0.9123), QStringLiteral("91.2%"));
        QCOMPARE(formatPercent(0.87418, 2), QStringLiteral("87.42%"));
        QCOMPARE(formatPercent(std::nullopt), notKnown());
        QCOMPARE(formatDuration(42.13), QStringLiteral("42.1 s"));
        QCOMPARE(formatDuration(192), QStringLiteral("3:12"));
        QCOMPARE(formatDuration(3725), QStringLiteral("1:02:05"));
        QCOMPARE(formatScale(65536.0), QStringLiteral("65536 (2^16)"));
        QCOMPARE(formatScale(0.5), QStringLiteral("0.5 (2^-1)"));
        QCOMPARE(formatScale(100.0), QStringLiteral("100"));
        QCOMPARE(formatRatio(1.93), QStringLiteral("1.93x"));
        QCOMPARE(formatRatio(1.05), QStringLiteral("1.05x"));
        QCOMPARE(formatCount(qint64(1234567)), QStringLiteral("1,234,567"));
        QCOMPARE(formatCount(qint64(-1000)), QStringLiteral("-1,000"));
        QCOMPARE(formatLoss(0.58), QStringLiteral("0.5800"));
        QCOMPARE(formatValue(std::numeric_limits<double>::quiet_NaN()), QStringLiteral("nan"));
    }

    void thinsCurvesKeepingSpikes()
    {
        QList<double> keys, values;
        for (int i = 0; i < 100000; ++i) {
            keys << i + 1;
            values << (i == 54321 ? 50.0 : 1.0 + 0.001 * (i % 7));
        }
        const XySeries thin = thinMinMax(keys, values, 1000);
        QVERIFY(thin.keys.size() <= 1000);
        QCOMPARE(thin.keys.size(), thin.values.size());
        QVERIFY(thin.values.contains(50.0));
        QVERIFY(thin.keys.contains(54322.0));
        for (qsizetype i = 1; i < thin.keys.size(); ++i)
            QVERIFY(thin.keys[i] > thin.keys[i - 1]);

        const XySeries mean = thinMean(keys, QList<double>(keys.size(), 3.0), 50);
        QCOMPARE(mean.keys.size(), 50);
        QCOMPARE(mean.values.first(), 3.0);

        const double gap = std::numeric_limits<double>::quiet_NaN();
        const QList<double> smooth = movingMean({1, 2, 3, gap, 5, 6}, 3);
        QCOMPARE(smooth, (QList<double>{1.5, 2, 2.5, 4, 5.5, 5.5})); // NaN is skipped, not averaged in
        QCOMPARE(lossSmoothingWindow(360), 6);
        QCOMPARE(lossSmoothingWindow(60), 5);

        const XySeries steps = changePoints({1, 2, 3, 4, 5, 6}, {8, 8, 4, 4, 4, 8});
        QCOMPARE(steps.keys, (QList<double>{1, 3, 6}));
        QCOMPARE(steps.values, (QList<double>{8, 4, 8}));

        const double nan = std::numeric_limits<double>::quiet_NaN();
        const XySeries small = thinMinMax({1, 2, 3}, {1, nan, 2}, 1000);
        QCOMPARE(small.keys.size(), 3); // the NaN stays: it draws as a gap
    }

    void loadsRunsWithLabelsAndBaseline()
    {
        ReportData data = loadReportData(*m_store, {m_sample.fp32, m_sample.mixed});
        QCOMPARE(data.runs.size(), 2);
        QVERIFY(data.isComparison());
        QCOMPARE(data.baseline, 0);
        QCOMPARE(data.runs[0].label, QStringLiteral("fp32"));
        QCOMPARE(data.runs[1].label, QStringLiteral("mixed-fp16"));
        QCOMPARE(data.runs[0].steps.size(), 360);
        QCOMPARE(data.runs[1].epochs.size(), 3);
        QVERIFY(data.runs[0].config.has_value());
        QCOMPARE(data.runs[0].model.totalParameters, 784 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10);
        QCOMPARE(data.runs[0].device.threads, 2);
        QCOMPARE(data.title(), QStringLiteral("mlp-fp32-1 vs mlp-mixed-fp16-2"));

        // A baseline not listed comes first; listed twice, a run appears once.
        data = loadReportData(*m_store, {m_sample.mixed, m_sample.mixed}, m_sample.fp32);
        QCOMPARE(data.runs.size(), 2);
        QCOMPARE(data.runs[data.baseline].info.id, m_sample.fp32);
        // Two runs of one precision are told apart by name.
        data = loadReportData(*m_store, {m_sample.mixed, m_sample.interrupted});
        QCOMPARE(data.runs[0].label, QStringLiteral("mlp-mixed-fp16-2"));
        QCOMPARE(data.runs[1].label, QStringLiteral("mlp-mixed-fp16-3"));
        QVERIFY(data.runs[1].isIncomplete());
        QCOMPARE(data.runs[1].device.kind, QStringLiteral("cuda"));

        try {
            loadReportData(*m_store, {m_sample.fp32, 9999});
            QFAIL("an unknown run must throw");
        } catch (const storage::StorageError& e) {
            QCOMPARE(e.kind(), storage::StorageError::Kind::NotFound);
        }
    }

    void comparesAgainstTheBaseline()
    {
        const ReportData data = loadReportData(*m_store, {m_sample.fp32, m_sample.mixed});
        const QList<ComparisonRow> rows = comparisonRows(data);
        QCOMPARE(rows.size(), 2);
        QVERIFY(rows[0].baseline);
        const storage::RunInfo fp32 = m_store->run(m_sample.fp32), mixed = m_store->run(m_sample.mixed);
        QCOMPARE(*rows[1].speedup, *fp32.wallSeconds / *mixed.wallSeconds);
        QVERIFY(*rows[1].speedup > 1.5); // 17100 vs 9000 samples/s, evaluation included
        QCOMPARE(rows[0].skippedSteps, 0);
        QCOMPARE(rows[1].skippedSteps, 6);
        QCOMPARE(rows[0].finalLossScaleText, QStringLiteral("none"));
        QCOMPARE(rows[1].finalLossScaleText, QStringLiteral("8192 (2^13)"));
        QCOMPARE(*rows[1].testAccuracy, double(syntheticTestAccuracy(m_sample.mixedSpec, 3)));

        const QStringList statements = comparisonStatements(data);
        QCOMPARE(statements.size(), 1);
        const QString expected =
            QStringLiteral("mixed-fp16 reached %1 vs %2 in fp32, %3 faster, 6 skipped steps, %4 the peak memory.")
                .arg(formatPercent(*mixed.summary.finalTestAccuracy), formatPercent(*fp32.summary.finalTestAccuracy),
                     formatRatio(*fp32.wallSeconds / *mixed.wallSeconds), formatRatio(236.0 / 412.0));
        QCOMPARE(statements.first(), expected);

        // Measured against the mixed run instead, fp32 is the slower one.
        const ReportData reversed = loadReportData(*m_store, {m_sample.fp32, m_sample.mixed}, m_sample.mixed);
        QVERIFY(comparisonStatements(reversed).first().contains(QStringLiteral("slower")));
    }

    void summarisesOverflows()
    {
        const ReportData data = loadReportData(*m_store, {m_sample.mixed});
        const OverflowSummary summary = summarizeOverflows(data.runs.first());
        QCOMPARE(summary.skippedSteps, 6);
        QCOMPARE(summary.overflowEvents, 6);
        QCOMPARE(summary.firstOverflows.size(), 6);
        QCOMPARE(summary.firstOverflows[0].step, 1);
        QCOMPARE(summary.firstOverflows[0].scaleBefore, 65536.0f);
        QCOMPARE(summary.firstOverflows[0].scaleAfter, 32768.0f);
        QCOMPARE(summary.firstOverflows[3].step, 110);
        QCOMPARE(summary.topParameters.first().parameter, QStringLiteral("3.linear.weight"));
        QCOMPARE(summary.topParameters.first().count, 4);
        QCOMPARE(summary.scaleGrowths, 3);
        QCOMPARE(summary.scaleBackoffs, 6);
        QCOMPARE(*summary.minScale, 8192.0);
        QCOMPARE(*summary.maxScale, 65536.0);
        QCOMPARE(summarizeOverflows(data.runs.first(), 2, 1).firstOverflows.size(), 2);
    }

    void buildsTheSectionsInOrder()
    {
        const ReportDocument document = buildReportDocument(loadReportData(*m_store, {m_sample.fp32, m_sample.mixed}));
        QStringList sections;
        int plots = 0;
        for (const ReportBlock& block : document.blocks) {
            if (block.kind == ReportBlock::Kind::Heading && block.level == 1)
                sections << block.text;
            plots += block.kind == ReportBlock::Kind::Plot;
        }
        QCOMPARE(sections, (QStringList{"Machine", "Model", "Settings", "Results", "Plots", "Overflow summary",
                                        "Appendix: run configuration"}));
        QCOMPARE(plots, 4);

        // An fp32 run alone has no loss scale to plot, and says so.
        const ReportDocument single = buildReportDocument(loadReportData(*m_store, {m_sample.fp32}));
        int singlePlots = 0;
        bool saysWhy = false;
        for (const ReportBlock& block : single.blocks) {
            singlePlots += block.kind == ReportBlock::Kind::Plot;
            saysWhy = saysWhy || block.text.contains(QStringLiteral("no loss-scale plot"));
        }
        QCOMPARE(singlePlots, 3);
        QVERIFY(saysWhy);
    }

    // A run with validation samples has its final and best validation metric in its results and
    // a validation loss and accuracy per epoch (report_seeds_test draws its curve); a run without
    // has neither.
    void aRunsValidationFiguresAreReported()
    {
        SyntheticRun spec;
        spec.name = QStringLiteral("validated");
        spec.epochs = 2;
        spec.stepsPerEpoch = 30;
        spec.validation = true;
        const QString path = m_dir.filePath(QStringLiteral("validated.sqlite"));
        const qint64 id = writeSyntheticRun(path, spec);
        const storage::RunStore store(path);
        const ReportData data = loadReportData(store, {id});
        const ReportDocument document = buildReportDocument(data);
        const float last = syntheticTestAccuracy(spec, 2) - 0.005f;
        QStringList rows, header;
        for (const ReportBlock& block : document.blocks) {
            if (block.kind != ReportBlock::Kind::Table)
                continue;
            for (const QStringList& row : block.table.rows)
                rows << row.join(QStringLiteral(": "));
            if (block.table.header.contains(QStringLiteral("Validation loss")))
                header = block.table.header;
        }
        QVERIFY2(rows.contains(QStringLiteral("Final validation accuracy: %1")
                                   .arg(QString::fromStdString(formatTaskMetric(TaskMetric::Accuracy, last)))),
                 qPrintable(rows.join("\n")));
        QCOMPARE(header.mid(header.size() - 3), (QStringList{"Validation loss", "Validation accuracy", "Wall time"}));

        const ReportData plain = loadReportData(*m_store, {m_sample.fp32});
        for (const ReportBlock& block : buildReportDocument(plain).blocks) {
            QVERIFY(!block.table.header.contains(QStringLiteral("Validation loss")));
            for (const QStringList& row : block.table.rows)
                QVERIFY2(!row.front().contains(QStringLiteral("validation")), qPrintable(row.join(": ")));
        }
    }

    // The model section carries the engine's tensor-core advice for the mixed-fp16 run (the
    // mlp's 10 classes), and none for fp32.
    void theModelSectionGivesTheTensorCoreAdviceOfSixteenBitRuns()
    {
        const ReportData data = loadReportData(*m_store, {m_sample.fp32, m_sample.mixed});
        const ReportDocument document = buildReportDocument(data);
        const QString mixedLabel = data.runs[1].label;
        QString inSection;
        qsizetype paragraphs = 0;
        QStringList items;
        for (qsizetype i = 0; i < document.blocks.size(); ++i) {
            const ReportBlock& block = document.blocks[i];
            if (block.kind == ReportBlock::Kind::Heading && block.level == 1)
                inSection = block.text;
            if (block.kind != ReportBlock::Kind::Paragraph ||
                !block.text.startsWith(QStringLiteral("Tensor-core alignment")))
                continue;
            ++paragraphs;
            QCOMPARE(inSection, QStringLiteral("Model"));
            QVERIFY2(block.text.startsWith(QStringLiteral("Tensor-core alignment of %1:").arg(mixedLabel)),
                     qPrintable(block.text));
            QVERIFY(i + 1 < document.blocks.size() && document.blocks[i + 1].kind == ReportBlock::Kind::Bullets);
            items = document.blocks[i + 1].items;
        }
        QCOMPARE(paragraphs, 1);
        QCOMPARE(items, QStringList{QString::fromStdString(
                            tensorCoreAdvice(*data.runs[1].config, data.runs[1].model).messages().front())});
        QVERIFY2(items.front().startsWith(
                     QStringLiteral("layer 3 (linear), fp16: out features = 10 is not a multiple of 8")),
                 qPrintable(items.front()));

        for (const ReportBlock& block : buildReportDocument(loadReportData(*m_store, {m_sample.fp32})).blocks)
            QVERIFY2(!block.text.contains(QStringLiteral("Tensor-core")), qPrintable(block.text));
    }

    // The model section says what a recipe run's recipe covered; a 16-bit run says nothing.
    void theModelSectionSaysWhatARecipeCovered()
    {
        SyntheticRun spec;
        spec.name = QStringLiteral("mx");
        spec.precision = QStringLiteral("mxfp4");
        const QString path = m_dir.filePath(QStringLiteral("recipe.sqlite"));
        const qint64 id = writeSyntheticRun(path, spec);
        storage::RunStore store(path);
        const ReportData data = loadReportData(store, {id});
        QStringList items;
        const QList<ReportBlock>& blocks = buildReportDocument(data).blocks;
        for (qsizetype i = 0; i + 1 < blocks.size(); ++i)
            if (blocks[i].text.startsWith(QStringLiteral("The sub-16-bit recipes quantise")))
                items = blocks[i + 1].items;
        QCOMPARE(items, QStringList{data.runs[0].label +
                                    QStringLiteral(": mxfp4: 1 of 3 GEMMs quantised; kept unquantised: 1.linear "
                                                   "(keep_first_last: the first GEMM), 3.linear (keep_first_last: "
                                                   "the last GEMM)")});
        for (const ReportBlock& block : buildReportDocument(loadReportData(*m_store, {m_sample.mixed})).blocks)
            QVERIFY2(!block.text.contains(QStringLiteral("sub-16-bit")), qPrintable(block.text));
    }

    // A comparison of runs that did not see the same data says so, naming the fingerprints; runs
    // that did, or that do not know theirs, give no such notice.
    void aComparisonWarnsWhenTheRunsSawDifferentData()
    {
        const QString path = m_dir.filePath(QStringLiteral("fingerprints.sqlite"));
        const auto write = [&](const QString& name, const QString& fingerprint) {
            SyntheticRun spec;
            spec.name = name;
            spec.epochs = 1;
            spec.stepsPerEpoch = 10;
            spec.dataFingerprint = fingerprint;
            return writeSyntheticRun(path, spec);
        };
        const qint64 a = write(QStringLiteral("a"), QStringLiteral("00000000000000aa"));
        const qint64 b = write(QStringLiteral("b"), QStringLiteral("00000000000000bb"));
        const qint64 same = write(QStringLiteral("same"), QStringLiteral("00000000000000aa"));
        const qint64 unknown = write(QStringLiteral("unknown"), QString());
        storage::RunStore store(path);
        const auto notices = [&](const QList<qint64>& ids) {
            QStringList out;
            for (const ReportBlock& block : buildReportDocument(loadReportData(store, ids)).blocks)
                if (block.kind == ReportBlock::Kind::Notice)
                    out << block.text;
            return out;
        };
        QCOMPARE(notices({a, b}),
                 QStringList{QStringLiteral("These runs did not see the same data, so their results are not "
                                            "comparable as they stand: a saw data fingerprint 00000000000000aa; b "
                                            "saw data fingerprint 00000000000000bb (mantissa-cli data PATH prints a "
                                            "dataset's fingerprint).")});
        QCOMPARE(notices({a, same, unknown}), QStringList{});
        QCOMPARE(notices({a, same, b}).size(), 1);
        QVERIFY(
            notices({a, same, b}).front().contains(QStringLiteral("a, same saw data fingerprint 00000000000000aa")));
    }

private:
    QTemporaryDir m_dir;
    SampleDatabase m_sample;
    std::unique_ptr<storage::RunStore> m_store;
};

QTEST_GUILESS_MAIN(ReportModelTest)
#include "report_model_test.moc"
