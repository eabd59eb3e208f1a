// The workbench over a run database: runs are recorded as they train, the run browser
// lists them (sort, filter, rename, notes, tags, delete) and opens one read back from
// SQLite, and the comparison computes speedups and shows only the settings that differ; a
// language model's run is sampled from in the browser.
#include "engine/config/presets.h"
#include "storage/run_store.h"
#include "storage/run_writer.h"
#include "tests/ui/quick_config.h"
#include "ui/comparison_table_model.h"
#include "ui/comparison_view.h"
#include "ui/config_diff.h"
#include "ui/config_document.h"
#include "ui/layer_table_model.h"
#include "ui/model_editor.h"
#include "ui/plot_widget.h"
#include "ui/precision_panel.h"
#include "ui/run_browser.h"
#include "ui/run_controller.h"
#include "ui/run_list_model.h"
#include "ui/run_monitor.h"
#include "ui/sampling_dialog.h"
#include "ui/stored_run.h"
#include "ui/training_panel.h"
#include "ui/workbench.h"

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QSpinBox>

#include <QTemporaryDir>
#include <QTextEdit>
#include <QtTest>
#include <cmath>

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
        QVERIFY(runs->data(runs->index(0, RunListModel::BestMetric)).toString().endsWith('%'));

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

    // A tiny causal transformer trained in the GUI on "abcdefgh" repeated learns the cycle; the
    // run browser's "Sample text…" continues "abc" with it greedily (as mantissa-cli sample does),
    // the same seed gives the same draw, and a classifier run is not offered for sampling.
    void aLanguageModelRunIsSampledFromTheRunBrowser()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QFile text(dir.filePath("cycle.txt"));
        QVERIFY(text.open(QIODevice::WriteOnly));
        text.write(QByteArray("abcdefgh").repeated(400));
        text.close();
        Workbench bench;
        QVERIFY(bench.setDatabasePath(dir.filePath("runs.sqlite")));
        const RunConfig lm = parseRunConfig(QStringLiteral(R"({
  "name": "cycle-lm",
  "model": {"input": [16], "classes": 256, "layers": [
    {"type": "token_embedding", "vocabulary": 256, "units": 32},
    {"type": "positional_embedding"},
    {"type": "transformer", "heads": 2, "causal": true},
    {"type": "layernorm"},
    {"type": "linear", "units": 256, "bias": false, "tied": true}
  ]},
  "data": {"dataset": "text", "directory": "%1", "context": 16},
  "optimizer": {"type": "adamw", "lr": 0.01},
  "training": {"batch_size": 32, "epochs": 15, "seed": 3, "threads": 1}
})")
                                                .arg(text.fileName())
                                                .toStdString(),
                                            "cycle-lm");
        bench.document()->load(lm, "cycle-lm");
        QSignalSpy ended(bench.controller(), &RunController::sequenceEnded);
        QVERIFY(bench.startRun());
        QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1, 120000);
        const qint64 lmId = bench.store()->listRuns().first().id;
        // The monitor plots a language model's epochs in bits per character.
        QCOMPARE(bench.monitor()->accuracyPlot()->yAxis->label(), QStringLiteral("bits per character"));

        bench.loadPreset("mlp");
        bench.document()->apply(quickConfig(bench.document()->config(), 10), "quick run");
        QVERIFY(bench.startRun());
        QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 2, 120000);
        const qint64 mlpId = bench.store()->listRuns().first().id;
        QVERIFY(mlpId != lmId);

        RunBrowser* browser = bench.runBrowser();
        browser->reload();
        auto* sample = browser->findChild<QPushButton*>("sampleText");
        QVERIFY(sample);
        browser->selectRuns({mlpId});
        QVERIFY(!sample->isEnabled());
        QVERIFY2(sample->toolTip().contains("not a byte-level language model", Qt::CaseInsensitive) &&
                     sample->toolTip().contains("its first layer is flatten, not a token_embedding"),
                 qPrintable(sample->toolTip()));
        QVERIFY(!browser->openSamplingDialog());
        browser->selectRuns({lmId});
        QVERIFY2(sample->isEnabled(), qPrintable(sample->toolTip()));

        SamplingDialog* dialog = browser->openSamplingDialog();
        QVERIFY(dialog);
        dialog->promptEdit()->setPlainText("abc");
        dialog->tokensBox()->setValue(21); // past the end of the 16-byte context
        dialog->temperatureBox()->setValue(0);
        QSignalSpy generated(dialog, &SamplingDialog::generated);
        QSignalSpy failed(dialog, &SamplingDialog::failed);
        dialog->generate();
        QTRY_VERIFY_WITH_TIMEOUT(generated.count() == 1, 60000);
        QCOMPARE(generated.first().first().toString(), QStringLiteral("defghabcdefghabcdefgh"));
        QVERIFY(dialog->output()->toPlainText().startsWith("abcdefgh"));

        // A seeded draw at temperature 1 is the same twice.
        dialog->temperatureBox()->setValue(1);
        dialog->seedBox()->setValue(7);
        QTRY_VERIFY(!dialog->isGenerating());
        dialog->generate();
        QTRY_VERIFY_WITH_TIMEOUT(generated.count() == 2, 60000);
        QTRY_VERIFY(!dialog->isGenerating());
        dialog->generate();
        QTRY_VERIFY_WITH_TIMEOUT(generated.count() == 3, 60000);
        QCOMPARE(generated[2].first().toString(), generated[1].first().toString());

        // An empty prompt is refused with the reason, and nothing is generated.
        QTRY_VERIFY(!dialog->isGenerating());
        dialog->promptEdit()->clear();
        dialog->generate();
        QCOMPARE(failed.count(), 1);
        QVERIFY2(failed.first().first().toString().contains("prompt is empty"),
                 qPrintable(failed.first().first().toString()));
        QCOMPARE(generated.count(), 3);
        dialog->close();
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
        QCOMPARE(results->data(results->index(0, ComparisonTableModel::Speedup)).toString(), QString("1.00x"));
        // The mixed-fp16 run says its speedup came from emulated kernels: no CPU sums fp16 in fp32.
        const QString mixedSpeedup = results->data(results->index(1, ComparisonTableModel::Speedup)).toString();
        QVERIFY2(mixedSpeedup.endsWith("x (emulated fp16)"), qPrintable(mixedSpeedup));
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
        QCOMPARE(model.data(model.index(1, ComparisonTableModel::Speedup)).toString(), QString("2.00x"));
        model.setBaseline(1);
        QCOMPARE(model.data(model.index(0, ComparisonTableModel::Speedup)).toString(), QString("0.50x"));
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
        QCOMPARE(model.data(model.index(0, ComparisonTableModel::Speedup)).toString(), QString("1.00x"));
        QCOMPARE(model.data(model.index(1, ComparisonTableModel::Speedup)).toString(), QString("2.00x (native bf16)"));
        QCOMPARE(model.data(model.index(2, ComparisonTableModel::Speedup)).toString(),
                 QString("1.00x (emulated fp16)"));
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

    // A 1-rank and a 2-rank run of one config, recorded as mantissa-cli train and mpirun -np 2
    // record them (rank 0 writes the world size and every rank's throughput): the run list,
    // the comparison's table and its config diff tell them apart.
    // Opening a stored run (the run browser, `mantissa --run`) or comparing stored runs (`--runs`)
    // puts the run's own config into the panels, one undo step: the settings beside its curves
    // are the ones that trained it.
    void openingAStoredRunShowsItsOwnConfigInThePanels()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        Workbench bench;
        QVERIFY(bench.setDatabasePath(dir.filePath("runs.sqlite")));
        bench.loadPreset("mlp");
        const RunConfig mlp = bench.document()->config();
        const auto record = [&](const RunConfig& c) {
            storage::NewRun run;
            run.configJson = QString::fromStdString(runConfigToJson(c));
            run.preset = QString::fromStdString(c.name);
            run.precision = QString::fromStdString(precisionModeName(c.precision));
            const qint64 id = bench.store()->createRun(run);
            RunSummary s;
            s.status = RunStatus::Finished;
            bench.store()->finishRun(id, s);
            return id;
        };
        RunConfig gpt = presetConfig("char-gpt");
        gpt.precision = PrecisionMode::MixedBf16;
        gpt.update.masters = MasterWeights::Bf16Kahan;
        gpt.optimizer.lr = 0.00123f;
        const qint64 gptId = record(gpt);
        RunConfig gptFp32 = gpt;
        gptFp32.precision = PrecisionMode::Fp32;
        const qint64 fp32Id = record(gptFp32);

        bench.runBrowser()->reload();
        emit bench.runBrowser()->openRequested(gptId); // what a double-click in the browser sends
        QCOMPARE(bench.monitor()->recording()->runId, gptId);
        QCOMPARE(runConfigToJson(bench.document()->config()), runConfigToJson(gpt));
        QCOMPARE(bench.precisionPanel()->findChild<QComboBox*>("precision.mode")->currentData().toString(),
                 QString("mixed-bf16"));
        QCOMPARE(bench.precisionPanel()->findChild<QComboBox*>("precision.master_weights")->currentData().toString(),
                 QString("bf16-kahan"));
        QCOMPARE(float(bench.trainingPanel()->findChild<QDoubleSpinBox*>("optimizer.lr")->value()), 0.00123f);
        QCOMPARE(bench.modelEditor()->tableModel()->rowCount(), int(gpt.model.layers.size()));
        // One undo step back to what the panels held.
        bench.document()->undoStack()->undo();
        QCOMPARE(runConfigToJson(bench.document()->config()), runConfigToJson(mlp));

        // Stored runs compared: the first one's config.
        QVERIFY(bench.compareStoredRuns({fp32Id, gptId}));
        QCOMPARE(runConfigToJson(bench.document()->config()), runConfigToJson(gptFp32));
    }

    // The runs list's "Best" column shows each run's own task metric: accuracy for a classifier,
    // the lowest RMSE for regression, the lowest bits per character for a language model; and
    // sorts runs of one task best first.
    void theBestColumnShowsEachRunsTaskMetric()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        storage::RunStore store(dir.filePath("runs.sqlite"));
        const auto record = [&](const RunConfig& c, float bestAccuracy, float bestLoss) {
            storage::NewRun run;
            run.configJson = QString::fromStdString(runConfigToJson(c));
            run.preset = QString::fromStdString(c.name);
            run.precision = "fp32";
            const qint64 id = store.createRun(run);
            RunSummary s;
            s.status = RunStatus::Finished;
            s.epochs = 1;
            s.bestTestAccuracy = bestAccuracy;
            s.testAccuracy = bestAccuracy;
            s.bestTestLoss = bestLoss;
            s.testLoss = bestLoss;
            store.finishRun(id, s);
            return id;
        };
        RunConfig regression = presetConfig("mlp");
        regression.data.dataset = DatasetKind::Files;
        regression.data.path = dir.filePath("table.csv").toStdString();
        regression.data.task = DataTask::Regression;
        const qint64 classifier = record(presetConfig("mlp"), 0.8412f, 0.45f);
        const qint64 rmse = record(regression, 0, 0.0625f);
        const qint64 worseRmse = record(regression, 0, 0.25f);
        const qint64 gpt = record(presetConfig("char-gpt"), 0.3f, float(2 * std::log(2.0)));

        RunListModel runs;
        runs.setStore(&store);
        const auto best = [&](qint64 id, int role = Qt::DisplayRole) {
            return runs.data(runs.index(runs.rowOfRun(id), RunListModel::BestMetric), role);
        };
        QCOMPARE(best(classifier).toString(), QString("84.12%"));
        QCOMPARE(best(rmse).toString(), QString("0.25 RMSE"));
        QCOMPARE(best(gpt).toString(), QString("2.000 bpc"));
        QVERIFY(best(rmse, Qt::ToolTipRole).toString().contains("RMSE"));
        QVERIFY(best(gpt, Qt::ToolTipRole).toString().contains("bits per character"));
        // Lower RMSE is better: it sorts above the higher one in a descending sort.
        QVERIFY(best(rmse, RunListModel::SortRole).toDouble() > best(worseRmse, RunListModel::SortRole).toDouble());
    }

    void aOneRankAndATwoRankRunAreToldApart()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        storage::RunStore store(dir.filePath("runs.sqlite"));
        RunConfig config = presetConfig("mlp");
        const auto record = [&](const RunConfig& c, int ranks, double samplesPerSecond) {
            storage::NewRun run;
            run.configJson = QString::fromStdString(runConfigToJson(c));
            run.preset = "mlp";
            run.precision = "fp32";
            run.worldSize = ranks;
            const qint64 id = store.createRun(run);
            RunSummary s;
            s.status = RunStatus::Finished;
            s.samplesPerSecond = samplesPerSecond;
            for (int r = 0; r < ranks && ranks > 1; ++r)
                s.ranks.push_back({r, 2.0, samplesPerSecond / ranks, 0.25 * (r + 1)});
            store.finishRun(id, s);
            return id;
        };
        const qint64 one = record(config, 1, 7400);
        config.distributed.worldSize = 2;
        const qint64 two = record(config, 2, 3454);

        RunListModel runs;
        runs.setStore(&store);
        const int twoRow = runs.rowOfRun(two), oneRow = runs.rowOfRun(one);
        QCOMPARE(runs.data(runs.index(twoRow, RunListModel::Ranks)).toInt(), 2);
        QCOMPARE(runs.data(runs.index(oneRow, RunListModel::Ranks)).toInt(), 1);
        QCOMPARE(runs.data(runs.index(twoRow, RunListModel::Ranks), Qt::ToolTipRole).toString(),
                 QString("2 ranks, all-reduce in fp32, sum-then-divide, batch norm per-rank"));

        ComparisonTableModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setRuns({loadStoredRun(store, one), loadStoredRun(store, two)});
        QCOMPARE(model.data(model.index(0, ComparisonTableModel::Ranks)).toInt(), 1);
        QCOMPARE(model.data(model.index(1, ComparisonTableModel::Ranks)).toInt(), 2);
        QCOMPARE(model.data(model.index(0, ComparisonTableModel::Throughput)).toString(), QString("7400"));
        QCOMPARE(model.data(model.index(1, ComparisonTableModel::Throughput)).toString(), QString("3454"));
        const QString perRank =
            model.data(model.index(1, ComparisonTableModel::Throughput), Qt::ToolTipRole).toString();
        QVERIFY2(perRank.contains("rank 1: 1727 samples/s, all-reduce 25% of its step time"), qPrintable(perRank));
        QVERIFY(model.data(model.index(0, ComparisonTableModel::Throughput), Qt::ToolTipRole).isNull());

        QStringList configs{store.run(one).configJson, store.run(two).configJson};
        QMap<QString, QStringList> differing;
        for (const ConfigDifference& d : diffConfigs(configs))
            differing[d.key] = d.values;
        QCOMPARE(differing.value("distributed.world_size"), QStringList({"1", "2"}));
        QCOMPARE(differing.value("distributed.allreduce_dtype"), QStringList({"none (1 process)", "fp32"}));
        QCOMPARE(differing.value("distributed.reduction"), QStringList({"none (1 process)", "sum-then-divide"}));
        QCOMPARE(differing.value("distributed.batch_norm"), QStringList({"none (1 process)", "per-rank"}));
        QCOMPARE(differing.size(), 4); // nothing else differs
        // Two single processes do not differ in it.
        QVERIFY(diffConfigs({configs[0], configs[0]}).isEmpty());

        // The monitor's heading says how the opened run was trained; a single process's says nothing of it.
        RunMonitor monitor;
        monitor.setRecording(loadStoredRun(store, two));
        const QLabel* heading = monitor.findChild<QLabel*>("monitorHeading");
        QVERIFY(heading);
        QVERIFY2(heading->text().contains("2 ranks, all-reduce in fp32, sum-then-divide"), qPrintable(heading->text()));
        monitor.setRecording(loadStoredRun(store, one));
        QVERIFY2(!heading->text().contains("rank"), qPrintable(heading->text()));
    }

    // A stored 2-rank run that all-reduced in 16 bits: the monitor plots each step's flushed and
    // overflowed values as recorded; a run without them keeps the plot hidden.
    void theMonitorPlotsWhatEachStepsAllReduceLost()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath("runs.sqlite");
        storage::RunStore store(path);
        RunConfig config = presetConfig("mlp");
        config.precision = PrecisionMode::MixedFp16;
        config.distributed.worldSize = 2;
        config.distributed.allReduceType = AllReduceType::Compute;
        const QList<qint64> flushed{0, 130, 0, 7}, overflowed{2, 0, 0, 1};
        const auto record = [&](const RunConfig& c, bool counts) {
            storage::NewRun run;
            run.configJson = QString::fromStdString(runConfigToJson(c));
            run.preset = "mlp";
            run.precision = "mixed-fp16";
            run.worldSize = c.distributed.worldSize;
            const qint64 id = store.createRun(run);
            storage::RunWriter writer(path, id);
            for (int i = 0; i < flushed.size(); ++i) {
                StepRecord step;
                step.step = i + 1;
                step.epoch = 1;
                step.loss = 1.0f;
                if (counts) {
                    step.allReduceFlushed = flushed[i];
                    step.allReduceOverflowed = overflowed[i];
                }
                writer.onStep(step);
            }
            RunSummary s;
            s.status = RunStatus::Finished;
            writer.finish(s);
            return id;
        };
        const qint64 two = record(config, true);
        config.distributed = {};
        const qint64 one = record(config, false);

        RunMonitor monitor;
        monitor.setRecording(loadStoredRun(store, two));
        PlotWidget* plot = monitor.allReducePlot();
        QVERIFY(!plot->isHidden());
        QCOMPARE(plot->graphCount(), 2);
        for (int i = 0; i < flushed.size(); ++i) {
            QCOMPARE(plot->graph(0)->data()->at(i)->key, double(i + 1));
            QCOMPARE(plot->graph(0)->data()->at(i)->value, double(flushed[i]));
            QCOMPARE(plot->graph(1)->data()->at(i)->value, double(overflowed[i]));
        }
        monitor.setRecording(loadStoredRun(store, one));
        QVERIFY(plot->isHidden());
        QCOMPARE(plot->graph(0)->dataCount(), 0);
    }
};

QTEST_MAIN(RunStoreUiTest)
#include "run_store_ui_test.moc"
