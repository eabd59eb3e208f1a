// The Advise panel: the precision advisor on the current config, off the GUI thread, with
// Cancel between probes, the result table, and Apply as one undoable edit of
// model.precision_overrides; and on a stored run chosen in the Runs tab (its config at its
// latest checkpoint), with a clear refusal for a run that has no state to probe.
#include "engine/advisor/precision_probe.h"
#include "engine/backend/backend.h"
#include "engine/config/presets.h"
#include "engine/util/enum_table.h"
#include "storage/run_store.h"
#include "tests/ui/quick_config.h"
#include "ui/advisor_job.h"
#include "ui/advisor_panel.h"
#include "ui/config_document.h"
#include "ui/run_browser.h"
#include "ui/run_controller.h"
#include "ui/workbench.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include <atomic>
#include <memory>

using namespace mantissa;
using namespace mantissa::ui;

namespace {

// The mlp preset, trained for a few steps on synthetic data: the probes take milliseconds.
RunConfig tinyConfig() { return test::quickConfig(presetConfig("mlp"), 8, 256); }

void checkFormat(AdvisorPanel& panel, const QString& key)
{
    for (int i = 0; i < panel.formats()->count(); ++i)
        if (panel.formats()->item(i)->data(Qt::UserRole).toString() == key)
            panel.formats()->item(i)->setCheckState(Qt::Checked);
}

QAction* actionNamed(QMenu& menu, const QString& name)
{
    for (QAction* action : menu.actions())
        if (action->objectName() == name)
            return action;
    return nullptr;
}

bool waitForEnd(AdvisorPanel& panel)
{
    QSignalSpy finished(&panel, &AdvisorPanel::finished);
    return finished.count() > 0 || finished.wait(120000);
}

} // namespace

class AdvisorPanelTest : public QObject {
    Q_OBJECT
private slots:
    void formatsComeFromTheEngineTable()
    {
        ConfigDocument document;
        AdvisorPanel panel(&document);
        // Every format the engine accepts for a layer, auto (the config's own) excepted.
        QCOMPARE(panel.formats()->count(), static_cast<int>(enumEntries<LayerPrecision>().size()) - 1);
        for (int i = 0; i < panel.formats()->count(); ++i)
            QVERIFY(parseEnum<LayerPrecision>(panel.formats()->item(i)->data(Qt::UserRole).toString().toStdString()));
    }

    void probesShowsRowsAppliesAndUndoes()
    {
        ConfigDocument document;
        document.load(tinyConfig(), "tiny mlp");
        const PrecisionOverrides before = document.config().model.precisionOverrides;
        AdvisorPanel panel(&document);
        checkFormat(panel, "mxfp4");
        panel.budget()->setValue(10); // generous: any layer whose increase is below it may go low
        panel.heldOutBatches()->setValue(1);
        QVERIFY(!panel.applyButton()->isEnabled());
        QVERIFY(panel.startAdvice());
        QVERIFY(panel.isRunning());
        QVERIFY(!panel.adviseButton()->isEnabled());
        QVERIFY(waitForEnd(panel));
        QVERIFY2(panel.advice().has_value(), qPrintable(panel.errorLabel()->text()));

        const AdviceTable& advice = *panel.advice();
        QVERIFY(!advice.layers.empty());
        QCOMPARE(panel.table()->rowCount(), static_cast<int>(advice.layers.size()));
        const int chosenColumn = panel.table()->columnCount() - 1;
        for (int row = 0; row < panel.table()->rowCount(); ++row) {
            QCOMPARE(panel.table()->item(row, 0)->text().toStdString(),
                     advice.layers[static_cast<std::size_t>(row)].name);
            const std::string chosen = chosenFormat(advice, static_cast<std::size_t>(row));
            if (!chosen.empty())
                QCOMPARE(panel.table()->item(row, chosenColumn)->text().toStdString(), chosen);
            // The probe's loss increase, as measured.
            QCOMPARE(panel.table()->item(row, 2)->text().isEmpty(), false);
        }
        QVERIFY(panel.summary()->text().contains("rank correlation of score and probe"));
        QVERIFY(panel.applyButton()->isEnabled());

        // Export report…: the advice as the command's report, each layer's row and its chosen format.
        QVERIFY(panel.exportButton()->isEnabled());
        QTemporaryDir reports;
        const QStringList files = panel.exportReport(reports.filePath("advice.md"));
        QCOMPARE(files.size(), 2); // the report and its sensitivity chart
        QFile markdown(files.front());
        QVERIFY(markdown.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(markdown.readAll());
        QVERIFY(text.contains(QString::fromStdString(document.config().name) + " (the config trained here first)"));
        QVERIFY(text.contains("Not verified over seeds"));
        for (int row = 0; row < panel.table()->rowCount(); ++row)
            QVERIFY2(text.contains("| " + panel.table()->item(row, 0)->text() + " | " +
                                   panel.table()->item(row, 1)->text() + " |"),
                     qPrintable(text));
        QVERIFY(panel.exportReport(reports.filePath("advice.csv")).isEmpty());
        QVERIFY(panel.errorLabel()->text().contains("an advice's report is a .pdf, .html or .md file"));

        QVERIFY(panel.applyAdvice());
        const PrecisionOverrides& applied = document.config().model.precisionOverrides;
        std::size_t chosenCount = 0;
        for (std::size_t l = 0; l < advice.layers.size(); ++l) {
            const std::string chosen = chosenFormat(advice, l);
            if (chosen.empty())
                continue;
            ++chosenCount;
            const auto it = applied.find(advice.layers[l].name);
            QVERIFY(it != applied.end());
            QVERIFY(it->second == LayerFormat(LayerPrecision::Mxfp4));
        }
        QVERIFY2(chosenCount > 0, "a budget of 10 should let at least one layer go to mxfp4");
        QCOMPARE(applied.size(), before.size() + chosenCount);

        document.undoStack()->undo();
        QVERIFY(document.config().model.precisionOverrides == before);
    }

    void cancelStopsBetweenProbes()
    {
        ConfigDocument document;
        document.load(tinyConfig(), "tiny mlp");
        AdvisorPanel panel(&document);
        checkFormat(panel, "mxfp8");
        checkFormat(panel, "mxfp4");
        panel.heldOutBatches()->setValue(1);
        // Cancel as the first probe starts, on the worker thread, so that the stop is asked for
        // while probe 1 is measured: the job must end before probe 2.
        std::atomic<int> probesStarted{0};
        std::atomic<int> probesTotal{0};
        connect(&panel, &AdvisorPanel::jobStarting, this, [&](AdvisorJob* job) {
            connect(
                job, &AdvisorJob::progress, job,
                [&, job](int, int total, const QString&) {
                    if (total == 0)
                        return;
                    probesTotal = total;
                    ++probesStarted;
                    job->cancel();
                },
                Qt::DirectConnection);
        });
        QVERIFY(panel.startAdvice());
        QVERIFY(waitForEnd(panel));
        QVERIFY(!panel.advice().has_value());
        QVERIFY(panel.errorLabel()->isHidden());
        QCOMPARE(probesStarted.load(), 1);
        QVERIFY(probesTotal.load() > 1);
        QVERIFY(panel.statusLabel()->text().contains("cancelled"));
        QVERIFY(!panel.applyButton()->isEnabled());
        QCOMPARE(panel.table()->rowCount(), 0);
    }

    void cancelButtonStopsTheBaselineTraining()
    {
        ConfigDocument document;
        document.load(test::quickConfig(presetConfig("mlp"), 100000, 4096), "long mlp");
        AdvisorPanel panel(&document);
        checkFormat(panel, "mxfp4");
        QVERIFY(panel.startAdvice());
        QVERIFY(panel.cancelButton()->isEnabled());
        QTest::mouseClick(panel.cancelButton(), Qt::LeftButton);
        QVERIFY(waitForEnd(panel));
        QVERIFY(!panel.advice().has_value());
        QVERIFY(panel.statusLabel()->text().contains("cancelled"));
        QVERIFY(panel.adviseButton()->isEnabled());
    }

    void aFormatIsRequired()
    {
        ConfigDocument document;
        document.load(tinyConfig(), "tiny mlp");
        AdvisorPanel panel(&document);
        QVERIFY(!panel.startAdvice());
        QVERIFY(!panel.errorLabel()->isHidden());
        QVERIFY(panel.errorLabel()->text().contains("format"));
    }

    void aBudgetNothingMeetsIsShown()
    {
        ConfigDocument document;
        document.load(tinyConfig(), "tiny mlp");
        AdvisorPanel panel(&document);
        checkFormat(panel, "mxfp4");
        panel.scoreOnly()->setChecked(true);
        panel.trainFirst()->setChecked(false);
        panel.heldOutBatches()->setValue(1);
        panel.budget()->setValue(-1); // a loss decrease of 1 no set of layers reaches
        QVERIFY(panel.startAdvice());
        QVERIFY(waitForEnd(panel));
        QVERIFY(panel.advice().has_value());
        QVERIFY(!panel.advice()->assignment.withinBudget);
        QVERIFY(!panel.errorLabel()->isHidden());
        QVERIFY(panel.errorLabel()->text().contains("no assignment meets the loss budget"));
    }

    void advisesAStoredRunChosenInTheRunsTab()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        Workbench bench;
        QVERIFY(bench.setDatabasePath(dir.filePath("runs.sqlite")));
        bench.document()->load(tinyConfig(), "tiny mlp");
        QSignalSpy ended(bench.controller(), &RunController::sequenceEnded);
        QVERIFY(bench.startRun());
        QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1, 120000);
        const storage::RunInfo run = bench.store()->listRuns().first();
        const storage::CheckpointInfo latest = bench.store()->checkpoints(run.id).last();
        const QString checkpoint = latest.absolutePath;
        const RunConfig runConfig = parseRunConfig(run.configJson.toStdString(), "the stored run");
        // The current config moves on (another seed, bf16): the advice must follow the run's.
        RunConfig later = bench.document()->config();
        later.precision = PrecisionMode::Bf16;
        later.training.seed += 1;
        bench.document()->apply(later, "a later edit");

        // The Runs tab offers Advise… on the selected run, as a button and in the context menu,
        // and the main window opens the panel on it (wired here as it wires it).
        RunBrowser* browser = bench.runBrowser();
        browser->reload();
        browser->selectRuns({run.id});
        auto* button = browser->findChild<QPushButton*>("adviseRun");
        QVERIFY(button && button->isEnabled());
        const std::unique_ptr<QMenu> menu(browser->makeContextMenu());
        QAction* fromMenu = actionNamed(*menu, "adviseRun");
        QVERIFY(fromMenu && fromMenu->isEnabled());
        QSignalSpy asked(browser, &RunBrowser::adviseRequested);
        fromMenu->trigger();
        QCOMPARE(asked.count(), 1);
        QCOMPARE(asked.first().first().toLongLong(), run.id);

        AdvisorPanel panel(bench.document());
        connect(browser, &RunBrowser::adviseRequested, &panel,
                [&](qint64 id) { panel.adviseStoredRun(*bench.store(), id); });
        QVERIFY(!panel.isOnStoredRun());
        button->click();
        QVERIFY2(panel.isOnStoredRun(), qPrintable(panel.errorLabel()->text()));
        const QString described =
            QString("run %1 (%2), epoch %3, step %4").arg(run.id).arg(run.name).arg(latest.epoch).arg(latest.step);
        QVERIFY2(panel.sourceLabel()->text().contains(described), qPrintable(panel.sourceLabel()->text()));
        QVERIFY(!panel.trainFirst()->isEnabled()); // its own state is probed, nothing is trained
        QVERIFY(!panel.currentConfigButton()->isHidden());

        checkFormat(panel, "mxfp4");
        panel.budget()->setValue(10);
        panel.heldOutBatches()->setValue(1);
        QVERIFY(panel.startAdvice());
        QVERIFY(waitForEnd(panel));
        QVERIFY2(panel.advice().has_value(), qPrintable(panel.errorLabel()->text()));
        // Measured on the run's config at its checkpoint: the same baseline loss as a probe built
        // from them directly, and not the loss of the run's untrained weights.
        const DatasetSplits data = loadDatasets(runConfig.data, runConfig.training.seed);
        const std::unique_ptr<Backend> backend = makeCpuBackend(1);
        const AdvisorProbeOptions options{1, runConfig.training.batchSize};
        PrecisionProbe trained(runConfig, *backend, data, checkpoint.toStdString(), options);
        PrecisionProbe untrained(runConfig, *backend, data, "", options);
        QCOMPARE(panel.advice()->baselineLoss, trained.baselineLoss());
        QVERIFY(std::abs(trained.baselineLoss() - untrained.baselineLoss()) > 1e-3);
        QCOMPARE(panel.advice()->baselineLabel, std::string("fp32"));

        // Apply: the run's config with the advised formats becomes the current config.
        QVERIFY(panel.applyAdvice());
        const RunConfig applied = bench.document()->config();
        QCOMPARE(applied.precision, runConfig.precision);
        QCOMPARE(applied.training.seed, runConfig.training.seed);
        QVERIFY(applied.model.precisionOverrides == advisedConfig(runConfig, *panel.advice()).model.precisionOverrides);
        QVERIFY(!applied.model.precisionOverrides.empty());
        bench.document()->undoStack()->undo();
        QCOMPARE(bench.document()->config().precision, PrecisionMode::Bf16);

        // Back to the current config: the run's advice no longer applies.
        panel.currentConfigButton()->click();
        QVERIFY(!panel.isOnStoredRun());
        QVERIFY(!panel.advice().has_value());
        QVERIFY(panel.trainFirst()->isEnabled());
    }

    void aStoredRunWithoutAStateIsRefusedClearly()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        Workbench bench;
        QVERIFY(bench.setDatabasePath(dir.filePath("runs.sqlite")));
        storage::NewRun diverged;
        diverged.name = "diverged-run";
        diverged.configJson = QString::fromStdString(runConfigToJson(tinyConfig()));
        diverged.precision = "fp32";
        const qint64 id = bench.store()->createRun(diverged);
        RunSummary summary;
        summary.status = RunStatus::Diverged;
        bench.store()->finishRun(id, summary);

        // The browser does not offer it, and says why.
        RunBrowser* browser = bench.runBrowser();
        browser->reload();
        browser->selectRuns({id});
        auto* button = browser->findChild<QPushButton*>("adviseRun");
        QVERIFY(button && !button->isEnabled());
        QVERIFY2(button->toolTip().contains("no checkpoint"), qPrintable(button->toolTip()));
        const std::unique_ptr<QMenu> menu(browser->makeContextMenu());
        QAction* fromMenu = actionNamed(*menu, "adviseRun");
        QVERIFY(fromMenu && !fromMenu->isEnabled());

        // Asked anyway (a run whose state went since), the panel says which run and why, and
        // stays on the current config.
        AdvisorPanel panel(bench.document());
        QVERIFY(!panel.adviseStoredRun(*bench.store(), id));
        QVERIFY(!panel.isOnStoredRun());
        QVERIFY(!panel.errorLabel()->isHidden());
        QVERIFY2(
            panel.errorLabel()->text().contains(QString("run %1 (diverged-run, diverged) has no checkpoint").arg(id)),
            qPrintable(panel.errorLabel()->text()));
        QVERIFY(!panel.adviseStoredRun(*bench.store(), id + 100));
        QVERIFY2(panel.errorLabel()->text().contains(QString("Cannot advise on run %1").arg(id + 100)),
                 qPrintable(panel.errorLabel()->text()));
    }
};

QTEST_MAIN(AdvisorPanelTest)
#include "advisor_panel_test.moc"
