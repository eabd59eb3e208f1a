// Sweeps in the workbench: "Compare precisions" with seeds: 3 runs a 2-precision x 3-seed sweep
// (or one over the precisions ticked in its menu)
// in mantissa-cli worker processes, recorded in the run store like `mantissa-cli sweep`, while
// the UI keeps responding; the Comparison tab then shows per configuration a mean curve equal
// to the mean of the stored (smoothed) curves, a min-max or 95% CI band around it, and the
// statistics table and sentences of Mantissa::sweep. Stored runs of one config over several
// seeds compare the same way.
#include "engine/config/presets.h"
#include "report/band_plot.h"
#include "stats/sample_statistics.h"
#include "storage/run_store.h"
#include "sweep/sweep_results.h"
#include "sweep/sweep_statistics.h"
#include "tests/ui/quick_config.h"
#include "ui/config_document.h"
#include "ui/plot_widget.h"
#include "ui/smoothing.h"
#include "ui/stored_run.h"
#include "ui/sweep_comparison_view.h"
#include "ui/sweep_controller.h"
#include "ui/sweep_editor.h"
#include "ui/workbench.h"

#include <QAction>
#include <QLabel>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

using namespace mantissa;
using namespace mantissa::ui;
using mantissa::ui::test::quickConfig;

namespace {

// The mean graphs of a plot and their band edges, by configuration.
QList<QCPGraph*> graphsNamed(QCustomPlot* plot, const QString& name)
{
    QList<QCPGraph*> graphs;
    for (int i = 0; i < plot->graphCount(); ++i)
        if (plot->graph(i)->objectName() == name)
            graphs << plot->graph(i);
    return graphs;
}

QVector<double> values(const QCPGraph* graph)
{
    QVector<double> out;
    for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it)
        out << it->value;
    return out;
}

} // namespace

class SweepUiTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath("runs.sqlite");
    }

    void compareOverSeedsRunsASweepAndShowsBands()
    {
        Workbench bench;
        QVERIFY(bench.setDatabasePath(m_db));
        bench.sweeps()->setWorkerProgram(QStringLiteral(MANTISSA_CLI));
        bench.document()->apply(quickConfig(bench.document()->config(), 6, 512), "quick sweep");
        bench.comparisonSeeds()->setValue(3);
        QSignalSpy finished(&bench, &Workbench::sweepFinished);
        QElapsedTimer clock;
        clock.start();
        bench.compareAction()->trigger();
        // The sweep runs in worker processes: the call returns at once and the UI is free.
        QVERIFY2(clock.elapsed() < 2000, qPrintable(QString::number(clock.elapsed())));
        QVERIFY(bench.sweeps()->isRunning());
        QVERIFY(!bench.runAction()->isEnabled());
        QVERIFY(bench.stopAction()->isEnabled());
        QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 120000);
        QVERIFY(bench.runAction()->isEnabled());

        storage::RunStore store(m_db);
        const QList<storage::SweepInfo> sweeps = store.sweeps();
        QCOMPARE(sweeps.size(), 1);
        QCOMPARE(finished.front().front().toLongLong(), sweeps.front().id);
        QCOMPARE(sweeps.front().runCount, 6);
        const QList<storage::RunInfo> runs = store.sweepRuns(sweeps.front().id);
        QCOMPARE(runs.size(), 6);
        for (const storage::RunInfo& run : runs)
            QCOMPARE(run.status, RunStatus::Finished);

        SweepComparisonView* view = bench.sweepComparison();
        QVERIFY(view->isVisible() || !view->isHidden());
        const SweepComparison& comparison = view->comparison();
        QCOMPARE(comparison.configurationCount(), 2);
        QCOMPARE(comparison.label(0), QStringLiteral("fp32"));
        QCOMPARE(comparison.label(1), QStringLiteral("mixed-fp16"));

        // The mean curve of each configuration is the mean of its stored runs' smoothed loss.
        view->setBandKind(sweep::BandKind::MinMax);
        const QList<QCPGraph*> means = graphsNamed(view->lossPlot(), "mean");
        const QList<QCPGraph*> lows = graphsNamed(view->lossPlot(), "band low");
        const QList<QCPGraph*> highs = graphsNamed(view->lossPlot(), "band high");
        QCOMPARE(means.size(), 2);
        QCOMPARE(highs.size(), 2);
        QList<QVector<double>> lastCurves; // per configuration, each run's last smoothed loss
        for (int c = 0; c < 2; ++c) {
            QCOMPARE(highs[c]->channelFillGraph(), lows[c]);
            QList<QVector<double>> curves;
            for (const storage::RunInfo& run : runs)
                if (*run.sweepIndex / 3 == c)
                    curves << smoothed(loadStoredRun(store, run.id)->loss, 0.8);
            QCOMPARE(curves.size(), 3);
            const QVector<double> mean = values(means[c]), low = values(lows[c]), high = values(highs[c]);
            QCOMPARE(mean.size(), curves[0].size());
            for (qsizetype i = 0; i < mean.size(); ++i) {
                const std::vector<double> atStep{curves[0][i], curves[1][i], curves[2][i]};
                QVERIFY(std::abs(mean[i] - (atStep[0] + atStep[1] + atStep[2]) / 3) < 1e-9);
                QCOMPARE(low[i], *std::min_element(atStep.begin(), atStep.end()));
                QCOMPARE(high[i], *std::max_element(atStep.begin(), atStep.end()));
            }
            lastCurves << QVector<double>{curves[0].last(), curves[1].last(), curves[2].last()};
        }
        // The 95% band is the t interval of the stats library.
        view->setBandKind(sweep::BandKind::ConfidenceInterval);
        const QList<QCPGraph*> ciLows = graphsNamed(view->lossPlot(), "band low");
        const QList<QCPGraph*> ciHighs = graphsNamed(view->lossPlot(), "band high");
        for (int c = 0; c < 2; ++c) {
            const stats::SampleSummary s = stats::summarize({lastCurves[c].begin(), lastCurves[c].end()});
            QVERIFY(std::abs(values(ciLows[c]).last() - s.ciLow) < 1e-9);
            QVERIFY(std::abs(values(ciHighs[c]).last() - s.ciHigh) < 1e-9);
        }
        QVERIFY(view->lossPlot()->legend->itemCount() == 2);

        // The table and the sentences are the sweep library's, over the same stored runs.
        const auto stored = sweep::loadStoredSweep(store, sweeps.front().id);
        QTableWidget* table = view->statisticsTable();
        QCOMPARE(table->columnCount(), 3);
        QCOMPARE(table->item(0, 1)->text(), QStringLiteral("3 of 3"));
        const auto expected = sweep::statisticsTable(stored.results);
        QCOMPARE(table->rowCount(), int(expected.rows.size()));
        QCOMPARE(table->item(2, 2)->text(), expected.rows[2][2]);
        const QStringList sentences = sweep::pairSentences(stored.results);
        QCOMPARE(view->sentences()->text(), sentences.join("\n"));
        QVERIFY(sentences.front().startsWith("mixed-fp16 vs fp32: test accuracy "));
        QVERIFY(sentences.front().contains("paired over 3 seeds")); // each precision ran the same 3 seeds
        QVERIFY(view->findChild<QLabel*>("sweepVerdictRule")->text().contains("within +/-0.5 points"));

        // The margins are the user's: wide enough, every pair's accuracy is equivalent, and the
        // sentences are the library's for those margins.
        view->accuracyMargin()->setValue(90);
        view->lossMargin()->setValue(5);
        sweep::EquivalenceMargins wide;
        wide.testAccuracy = 0.9;
        wide.trainLoss = 5;
        QCOMPARE(view->sentences()->text(), sweep::pairSentences(stored.results, wide).join("\n"));
        QVERIFY2(view->sentences()->text().contains("test accuracy equivalent within +/-90.0 points"),
                 qPrintable(view->sentences()->text()));
        QVERIFY(view->findChild<QLabel*>("sweepVerdictRule")->text().contains("within +/-90 points"));
    }

    void storedRunsOfOneConfigCompareOverTheirSeeds()
    {
        Workbench bench;
        QVERIFY(bench.setDatabasePath(m_db));
        storage::RunStore store(m_db);
        QList<qint64> ids;
        for (const storage::RunInfo& run : store.listRuns())
            ids.prepend(run.id);
        QCOMPARE(ids.size(), 6);
        QVERIFY(bench.compareStoredRuns(ids));
        const SweepComparison& comparison = bench.sweepComparison()->comparison();
        QCOMPARE(comparison.sweepId, 0);
        QCOMPARE(comparison.configurationCount(), 2);
        QCOMPARE(comparison.label(0), QStringLiteral("fp32"));
        QCOMPARE(comparison.results[1].runs.size(), 3);
        QCOMPARE(graphsNamed(bench.sweepComparison()->accuracyPlot(), "mean").size(), 2);
        // Two runs of different configurations are still compared run by run.
        QVERIFY(bench.compareStoredRuns({ids[0], ids[3]}));
        QCOMPARE(bench.sweepComparison()->comparison().sweepId, 0);
    }

    // Issue 17: the precisions ticked in Compare precisions' menu are the sweep's precision axis.
    void compareOverSeedsSweepsEveryChosenPrecision()
    {
        QTemporaryDir dir;
        Workbench bench;
        QVERIFY(bench.setDatabasePath(dir.filePath("runs.sqlite")));
        bench.sweeps()->setWorkerProgram(QStringLiteral(MANTISSA_CLI));
        bench.document()->apply(quickConfig(bench.document()->config(), 4, 256), "quick sweep");
        bench.comparisonPrecisions()->setCheckedKeys({"fp32", "config", "fp8-hybrid"});
        bench.comparisonSeeds()->setValue(2);
        QSignalSpy finished(&bench, &Workbench::sweepFinished);
        QVERIFY(bench.startComparison());
        QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 120000);

        storage::RunStore store(dir.filePath("runs.sqlite"));
        const storage::SweepInfo sweep = store.sweeps().front();
        QCOMPARE(sweep.runCount, 6);
        for (const storage::RunInfo& run : store.sweepRuns(sweep.id))
            QCOMPARE(run.status, RunStatus::Finished);
        const SweepComparison& comparison = bench.sweepComparison()->comparison();
        QCOMPARE(comparison.configurationCount(), 3);
        QCOMPARE(comparison.label(0), QStringLiteral("fp32"));
        QCOMPARE(comparison.label(1), QStringLiteral("mixed-fp16"));
        QCOMPARE(comparison.label(2), QStringLiteral("fp8-hybrid"));
    }

    void aMissingWorkerProgramIsReportedNotRun()
    {
        QTemporaryDir dir;
        Workbench bench;
        QVERIFY(bench.setDatabasePath(dir.filePath("runs.sqlite")));
        bench.sweeps()->setWorkerProgram(dir.filePath("no-such-mantissa-cli"));
        bench.comparisonSeeds()->setValue(2);
        QVERIFY(!bench.startComparison());
        QVERIFY(!bench.sweeps()->isRunning());
    }

    void sweepEditorChecksWithTheSpecsMessages()
    {
        SweepEditor editor(quickConfig(presetConfig("mlp"), 4, 256));
        editor.setSeeds("2");
        editor.addAxis(SweepEditor::AxisKind::Precisions, "fp32, mixed-fp16");
        editor.addAxis(SweepEditor::AxisKind::ConfigKey, "0.1, 0.05", "optimizer.lrr");
        QVERIFY(!editor.spec());
        QVERIFY2(editor.problem().contains("optimizer.lrr"), qPrintable(editor.problem()));
        QCOMPARE(editor.statusLabel()->text(), editor.problem());
        editor.axesTable()->item(1, 1)->setText("optimizer.lr"); // fixing the key revalidates
        QVERIFY2(editor.spec(), qPrintable(editor.problem()));
        QCOMPARE(editor.spec()->runCount(), std::size_t(8));
        const SweepPlan plan = expandSweep(*editor.spec(), "test");
        QCOMPARE(plan.configurations.size(), std::size_t(4));
        QCOMPARE(plan.runs[7].config.optimizer.lr, 0.05f);
        QCOMPARE(plan.runs[7].config.precision, PrecisionMode::MixedFp16);
        QCOMPARE(plan.runs[7].seed, std::uint64_t(1));
        // Bad values and grids are refused by the spec's own checks, naming what is wrong.
        editor.axesTable()->item(0, 2)->setText("fp32, fp12");
        QVERIFY(!editor.spec());
        QVERIFY2(editor.problem().contains("fp12"), qPrintable(editor.problem()));
        editor.axesTable()->item(0, 2)->setText("fp32, mixed-fp16");
        editor.addAxis(SweepEditor::AxisKind::Precisions, "bf16");
        QVERIFY2(editor.problem().contains("two axes sweep precision.mode"), qPrintable(editor.problem()));
        editor.axesTable()->removeRow(2);
        editor.setSeeds("0");
        QVERIFY(!editor.spec());
        QVERIFY2(editor.problem().contains("seeds"), qPrintable(editor.problem()));
        editor.setSeeds("3, 5");
        QVERIFY2(editor.spec(), qPrintable(editor.problem()));
        QCOMPARE(editor.spec()->seeds, (std::vector<std::uint64_t>{3, 5}));
    }

    void importsASweepDirectorySkippingForeignFiles()
    {
        QTemporaryDir source;
        QVERIFY(QDir(source.path()).mkpath("runs"));
        const SweepSpec spec =
            parseSweepSpec(R"({"base": "mlp", "precisions": ["fp32", "mixed-fp16"], "seeds": 1})", "test", "");
        const SweepPlan plan = expandSweep(spec, "test");
        const QString uid = QStringLiteral("4f1c2d7e-0000-4000-8000-00000000abcd");
        for (const SweepRun& run : plan.runs) {
            storage::RunStore task(source.filePath(QStringLiteral("runs/run-%1.sqlite").arg(run.index)));
            const qint64 sweepId = task.createSweep(
                {uid, QString::fromStdString(spec.name), QString::fromStdString(sweepSpecToJson(spec)), 2});
            storage::NewRun row;
            row.configJson = QString::fromStdString(runConfigToJson(run.config));
            row.precision = QString::fromStdString(precisionModeName(run.config.precision));
            row.sweepId = sweepId;
            row.sweepIndex = run.index;
            const qint64 id = task.createRun(row);
            RunSummary summary;
            summary.status = RunStatus::Finished;
            summary.epochs = 1;
            summary.testAccuracy = 0.8f + 0.01f * float(run.index);
            task.finishRun(id, summary);
        }
        QFile junk(source.filePath("runs/notes.sqlite"));
        QVERIFY(junk.open(QIODevice::WriteOnly));
        junk.write("not a database");
        junk.close();

        QTemporaryDir dir;
        Workbench bench;
        QVERIFY(bench.setDatabasePath(dir.filePath("runs.sqlite")));
        QString summary;
        QVERIFY(bench.importSweepDirectory(source.path(), &summary));
        QVERIFY2(summary.contains("2 runs imported") && summary.contains("1 files skipped"), qPrintable(summary));
        const SweepComparison& shown = bench.sweepComparison()->comparison();
        QVERIFY(shown.sweepId > 0);
        QCOMPARE(shown.configurationCount(), 2);
        QCOMPARE(shown.results[1].finished, 1);
        // Importing twice adds nothing.
        QVERIFY(bench.importSweepDirectory(source.path(), &summary));
        QVERIFY2(summary.contains("0 runs imported, 2 already here"), qPrintable(summary));
        QCOMPARE(bench.store()->sweeps().size(), 1);
        QCOMPARE(bench.store()->sweepRuns(shown.sweepId).size(), 2);
    }

private:
    QTemporaryDir m_dir;
    QString m_db;
};

QTEST_MAIN(SweepUiTest)
#include "sweep_ui_test.moc"
