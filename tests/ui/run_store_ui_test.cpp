// The workbench over a run database: runs are recorded as they train, the run browser
// lists them (sort, filter, rename, notes, tags, delete) and opens one read back from
// SQLite, and the comparison computes speedups and shows only the settings that differ.
#include "storage/run_store.h"
#include "tests/ui/quick_config.h"
#include "ui/comparison_table_model.h"
#include "ui/comparison_view.h"
#include "ui/config_diff.h"
#include "ui/config_document.h"
#include "ui/plot_widget.h"
#include "ui/run_browser.h"
#include "ui/run_controller.h"
#include "ui/run_list_model.h"
#include "ui/run_monitor.h"
#include "ui/workbench.h"

#include <QAbstractItemModelTester>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTemporaryDir>
#include <QtTest>

using namespace mantissa;
using namespace mantissa::ui;
using mantissa::ui::test::quickConfig;

namespace {

std::shared_ptr<RunRecording> fakeRun(const QString& name, PrecisionMode precision, double trainSeconds)
{
    auto r = std::make_shared<RunRecording>();
    r->name = name;
    r->config.precision = precision;
    RunSummary s;
    s.status = RunStatus::Finished;
    s.trainSeconds = trainSeconds;
    r->summary = s;
    return r;
}

} // namespace

class RunStoreUiTest : public QObject {
    Q_OBJECT

private slots:
    void aRunIsRecordedListedAndOpenedFromTheDatabase()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        Workbench bench;
        QVERIFY(bench.setDatabasePath(dir.filePath("runs.sqlite")));
        RunListModel* runs = bench.runBrowser()->runModel();
        QAbstractItemModelTester runTester(runs, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester proxyTester(bench.runBrowser()->proxyModel(),
                                             QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(runs->rowCount(), 0);

        bench.loadPreset("mlp");
        bench.document()->apply(quickConfig(bench.document()->config(), 20), "quick run");
        QSignalSpy ended(bench.controller(), &RunController::sequenceEnded);
        QVERIFY(bench.startRun());
        QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1, 120000);

        QCOMPARE(runs->rowCount(), 1);
        const qint64 id = runs->runId(0);
        QVERIFY(id > 0);
        QCOMPARE(runs->data(runs->index(0, RunListModel::Status)).toString(), QString("finished"));
        QCOMPARE(runs->data(runs->index(0, RunListModel::Precision)).toString(), QString("fp32"));
        QVERIFY(runs->data(runs->index(0, RunListModel::BestAccuracy)).toString().endsWith('%'));

        // Opening reads it back from SQLite into the monitor.
        QVERIFY(bench.openStoredRun(id));
        QVERIFY(bench.monitor()->recording()->runId == id);
        QCOMPARE(bench.monitor()->recording()->step.size(), 20);
        QCOMPARE(bench.monitor()->lossPlot()->graph(0)->dataCount(), 20);
        QCOMPARE(bench.monitor()->accuracyPlot()->graph(0)->dataCount(), 1);

        // Organising: rename in place, notes, tags; the filter finds by tag.
        QVERIFY(runs->setData(runs->index(0, RunListModel::Name), "baseline-mlp"));
        QCOMPARE(bench.store()->run(id).name, QString("baseline-mlp"));
        QVERIFY(runs->setNotes(0, "first try"));
        QVERIFY(runs->setTags(0, {"keep", "gui"}));
        QCOMPARE(bench.store()->run(id).notes, QString("first try"));
        QVERIFY(bench.store()->run(id).tags.contains("keep"));
        bench.runBrowser()->proxyModel()->setFilterFixedString("keep");
        QCOMPARE(bench.runBrowser()->proxyModel()->rowCount(), 1);
        bench.runBrowser()->proxyModel()->setFilterFixedString("no-such-run");
        QCOMPARE(bench.runBrowser()->proxyModel()->rowCount(), 0);
        bench.runBrowser()->proxyModel()->setFilterFixedString({});

        QVERIFY(runs->deleteRun(0));
        QCOMPARE(runs->rowCount(), 0);
        QCOMPARE(bench.store()->listRuns().size(), 0);
    }

    void aStoredRunsWeightsStartTheNextRunInMixedFp16()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        Workbench bench;
        QVERIFY(bench.setDatabasePath(dir.filePath("runs.sqlite")));
        bench.loadPreset("mlp");
        bench.document()->apply(quickConfig(bench.document()->config(), 20), "quick run");
        QSignalSpy ended(bench.controller(), &RunController::sequenceEnded);
        QVERIFY(bench.startRun());
        QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1, 120000);
        const qint64 fp32Id = bench.store()->listRuns().first().id;
        const QList<storage::CheckpointInfo> checkpoints = bench.store()->checkpoints(fp32Id);
        QCOMPARE(checkpoints.size(), 1); // at the end of the run
        QCOMPARE(checkpoints[0].step, qint64(20));

        // The browser lists the selected run's checkpoints and offers to start from them.
        RunBrowser* browser = bench.runBrowser();
        browser->reload();
        auto* start = browser->findChild<QPushButton*>("startFromWeights");
        auto* listed = browser->findChild<QLabel*>("runCheckpoints");
        QVERIFY(start && listed);
        browser->selectRuns({});
        QVERIFY(!start->isEnabled());
        browser->selectRuns({fp32Id});
        QVERIFY(start->isEnabled());
        QVERIFY2(listed->text().contains("epoch 1 (step 20)"), qPrintable(listed->text()));
        QCOMPARE(listed->toolTip(), checkpoints[0].absolutePath);
        start->click();
        QCOMPARE(QString::fromStdString(bench.document()->config().training.initFrom), checkpoints[0].absolutePath);
        auto* initial = bench.findChild<QLabel*>("initialWeights");
        QVERIFY(initial);
        QVERIFY2(initial->text().contains(QString("run-%1/epoch-1-step-20.ckpt").arg(fp32Id)),
                 qPrintable(initial->text()));
        // "Fresh weights" and undo both go back and forth.
        auto* fresh = bench.findChild<QPushButton*>("freshWeights");
        QVERIFY(fresh && fresh->isEnabled());
        fresh->click();
        QVERIFY(bench.document()->config().training.initFrom.empty());
        bench.document()->undoStack()->undo();
        QCOMPARE(QString::fromStdString(bench.document()->config().training.initFrom), checkpoints[0].absolutePath);

        RunConfig mixed = bench.document()->config();
        mixed.precision = PrecisionMode::MixedFp16;
        bench.document()->apply(mixed, "mixed fp16");
        QVERIFY(bench.startRun());
        QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 2, 120000);
        const storage::RunInfo tuned = bench.store()->listRuns().first();
        QVERIFY(tuned.id != fp32Id);
        QCOMPARE(tuned.status, RunStatus::Finished);
        QCOMPARE(tuned.precision, QString("mixed-fp16"));
        QCOMPARE(QString::fromStdString(parseRunConfig(tuned.configJson.toStdString(), "stored").training.initFrom),
                 checkpoints[0].absolutePath);
        // Same seed and data order: both first steps see the same batch. From fresh weights the
        // fp32 run's first loss is the untrained one; the fine-tune starts where it ended.
        const double fp32First = bench.store()->steps(fp32Id).loss.first();
        const double fp32Last = bench.store()->steps(fp32Id).loss.last();
        const double tunedFirst = bench.store()->steps(tuned.id).loss.first();
        QVERIFY2(fp32Last < 0.8 * fp32First, qPrintable(QString("fp32 %1 -> %2").arg(fp32First).arg(fp32Last)));
        QVERIFY2(tunedFirst < 0.8 * fp32First,
                 qPrintable(QString("fp32 first %1, fine-tune first %2").arg(fp32First).arg(tunedFirst)));
    }

    void comparePrecisionsRecordsAGroupAndComparesStoredRuns()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        Workbench bench;
        QVERIFY(bench.setDatabasePath(dir.filePath("runs.sqlite")));
        bench.loadPreset("mlp");
        bench.document()->apply(quickConfig(bench.document()->config(), 16), "quick run");
        QSignalSpy compared(&bench, &Workbench::comparisonFinished);
        QVERIFY(bench.startComparison());
        QTRY_VERIFY_WITH_TIMEOUT(compared.count() == 1, 120000);
        QCOMPARE(bench.comparison()->runCount(), 2);

        const auto stored = bench.store()->listRuns();
        QCOMPARE(stored.size(), 2);
        QVERIFY(stored[0].groupId.has_value());
        QCOMPARE(stored[0].groupId, stored[1].groupId);

        QVERIFY(bench.compareStoredRuns({stored[1].id, stored[0].id}));
        ComparisonTableModel* results = bench.comparison()->resultsModel();
        QAbstractItemModelTester tester(results, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(results->rowCount(), 2);
        QCOMPARE(results->data(results->index(0, ComparisonTableModel::Speedup)).toString(), QString("1.00×"));
        // The mixed-fp16 run says its speedup came from emulated kernels: no CPU sums fp16 in fp32.
        const QString mixedSpeedup = results->data(results->index(1, ComparisonTableModel::Speedup)).toString();
        QVERIFY2(mixedSpeedup.endsWith("× (emulated fp16)"), qPrintable(mixedSpeedup));
        // Only what differs: the precision mode (and the run names), not the optimizer.
        QTableWidget* diff = bench.comparison()->diffTable();
        QStringList keys;
        for (int row = 0; row < diff->rowCount(); ++row)
            keys << diff->item(row, 0)->text();
        QVERIFY2(keys.contains("precision.mode"), qPrintable(keys.join(", ")));
        QVERIFY2(!keys.contains("optimizer.lr"), qPrintable(keys.join(", ")));
    }

    void speedupIsTheBaselinesTrainingTimeOverTheRuns_data()
    {
        QTest::addColumn<double>("baseline");
        QTest::addColumn<double>("run");
        QTest::addColumn<double>("expected");
        QTest::newRow("twice as fast") << 10.0 << 5.0 << 2.0;
        QTest::newRow("slower") << 4.0 << 8.0 << 0.5;
        QTest::newRow("same") << 3.0 << 3.0 << 1.0;
        QTest::newRow("unknown time") << 0.0 << 3.0 << 0.0;
    }

    void speedupIsTheBaselinesTrainingTimeOverTheRuns()
    {
        QFETCH(double, baseline);
        QFETCH(double, run);
        QFETCH(double, expected);
        RunSummary a, b;
        a.trainSeconds = baseline;
        b.trainSeconds = run;
        QCOMPARE(speedup(a, b), expected);
    }

    void theResultsTableFollowsTheChosenBaseline()
    {
        ComparisonTableModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setRuns({fakeRun("fp32", PrecisionMode::Fp32, 2.0), fakeRun("mixed", PrecisionMode::MixedFp16, 1.0)});
        QCOMPARE(model.data(model.index(1, ComparisonTableModel::Speedup)).toString(), QString("2.00×"));
        model.setBaseline(1);
        QCOMPARE(model.data(model.index(0, ComparisonTableModel::Speedup)).toString(), QString("0.50×"));
        QCOMPARE(model.data(model.index(1, ComparisonTableModel::Precision)).toString(), QString("mixed-fp16"));
    }

    void theSpeedupSaysWhichKernelsEarnedIt()
    {
        const QString kernels = QStringLiteral("bf16: native: oneDNN avx512_core_bf16, bf16 products accumulated in "
                                               "fp32\nfp16: emulated: fp16 widened to fp32 (no AMX-FP16)");
        auto bf16 = fakeRun("bf16", PrecisionMode::MixedBf16, 1.0);
        auto fp16 = fakeRun("fp16", PrecisionMode::MixedFp16, 2.0);
        auto fp32 = fakeRun("fp32", PrecisionMode::Fp32, 2.0);
        for (const auto& run : {bf16, fp16, fp32})
            run->kernels = kernels;
        ComparisonTableModel model;
        model.setRuns({fp32, bf16, fp16});
        QCOMPARE(model.data(model.index(0, ComparisonTableModel::Speedup)).toString(), QString("1.00×"));
        QCOMPARE(model.data(model.index(1, ComparisonTableModel::Speedup)).toString(), QString("2.00× (native bf16)"));
        QCOMPARE(model.data(model.index(2, ComparisonTableModel::Speedup)).toString(),
                 QString("1.00× (emulated fp16)"));
        QVERIFY(
            model.data(model.index(1, ComparisonTableModel::Speedup), Qt::ToolTipRole).toString().contains(kernels));
    }

    void theConfigDiffListsOnlyDifferingKeys()
    {
        RunConfig a;
        RunConfig b = a;
        b.precision = PrecisionMode::MixedBf16;
        LayerSpec relu;
        relu.type = LayerKind::Relu;
        b.model.layers.push_back(relu);
        const QList<ConfigDifference> diffs =
            diffConfigs({QString::fromStdString(runConfigToJson(a)), QString::fromStdString(runConfigToJson(b))});
        QStringList keys;
        for (const ConfigDifference& d : diffs)
            keys << d.key;
        QVERIFY(keys.contains("precision.mode"));
        QVERIFY(keys.contains("model.layers[0].type"));
        QVERIFY(!keys.contains("optimizer.lr"));
        const auto mode =
            std::find_if(diffs.begin(), diffs.end(), [](const auto& d) { return d.key == "precision.mode"; });
        QCOMPARE(mode->values, QStringList({"fp32", "mixed-bf16"}));
        QCOMPARE(diffs.back().values.size(), 2);
    }
};

QTEST_MAIN(RunStoreUiTest)
#include "run_store_ui_test.moc"
