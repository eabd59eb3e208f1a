// Forks in the workbench: "Fork from here…" on a recorded run's loss curve, its dialog (the
// precision and learning rate it changes), the fork recorded with its parent and step (the run
// browser's "Forked from" column), and the comparison that draws the fork from its branch point
// with its parent's curve before it. A run with no saved state says so in the banner.
#include "engine/config/config_field.h"
#include "engine/config/presets.h"
#include "engine/model/model_validation.h"
#include "engine/train/fork_compatibility.h"
#include "engine/util/format_number.h"
#include "storage/fork_point.h"
#include "storage/run_store.h"
#include "tests/ui/quick_config.h"
#include "ui/comparison_table_model.h"
#include "ui/comparison_view.h"
#include "ui/config_document.h"
#include "ui/error_banner.h"
#include "ui/fork_dialog.h"
#include "ui/number_spin_box.h"
#include "ui/plot_widget.h"
#include "ui/run_browser.h"
#include "ui/run_controller.h"
#include "ui/run_list_model.h"
#include "ui/run_monitor.h"
#include "ui/stored_run.h"
#include "ui/workbench.h"

#include <QComboBox>
#include <QDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <algorithm>

using namespace mantissa;
using namespace mantissa::ui;
using mantissa::ui::test::quickConfig;

namespace {

QAction* actionNamed(const QMenu& menu, const QString& objectName)
{
    for (QAction* action : menu.actions())
        if (action->objectName() == objectName)
            return action;
    return nullptr;
}

} // namespace

class ForkUiTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_bench = std::make_unique<Workbench>();
        QVERIFY(m_bench->setDatabasePath(m_dir.filePath("runs.sqlite")));
        m_bench->loadPreset("mlp");
        RunConfig config = quickConfig(m_bench->document()->config(), 24);
        config.training.saveStateEvery = 8;
        m_bench->document()->apply(config, "quick run");
        QSignalSpy ended(m_bench->controller(), &RunController::sequenceEnded);
        QVERIFY(m_bench->startRun());
        QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1, 120000);
        m_parentId = m_bench->store()->listRuns().first().id;
        QCOMPARE(storage::savedStateSteps(*m_bench->store(), m_parentId), (QList<qint64>{8, 16, 24}));
    }

    void theLossCurveOfAStoredRunOffersForkFromHere()
    {
        QVERIFY(m_bench->openStoredRun(m_parentId));
        PlotWidget* loss = m_bench->monitor()->lossPlot();
        QMenu menu;
        loss->populateMenu(menu, QPoint(loss->width() / 2, loss->height() / 2));
        QAction* fork = actionNamed(menu, "forkFromHere");
        QVERIFY(fork);
        QCOMPARE(fork->text(), QString("Fork from here…"));
        // Chosen, it asks for a fork of this run at the step clicked (a monitor of its own here:
        // the workbench's would open the dialog, which the next tests answer).
        RunMonitor monitor;
        monitor.resize(800, 600);
        monitor.setRecording(loadStoredRun(*m_bench->store(), m_parentId));
        QMenu own;
        monitor.lossPlot()->populateMenu(own, QPoint(10, 10));
        QSignalSpy requested(&monitor, &RunMonitor::forkRequested);
        actionNamed(own, "forkFromHere")->trigger();
        QCOMPARE(requested.count(), 1);
        QCOMPARE(requested.first().at(0).toLongLong(), m_parentId);
        // A run still training has no fork entry: its state is not saved yet.
        RunMonitor live;
        auto running = std::make_shared<RunRecording>();
        running->runId = 5;
        live.setRecording(running);
        QMenu liveMenu;
        live.lossPlot()->populateMenu(liveMenu, QPoint(10, 10));
        QVERIFY(!actionNamed(liveMenu, "forkFromHere"));
    }

    void theDialogChangesThePrecisionMastersStateAndLearningRate()
    {
        RunConfig parent = m_bench->document()->config();
        ForkDialog dialog(parent, "Fork mlp at step 16");
        QCOMPARE(dialog.config().precision, parent.precision);
        QCOMPARE(dialog.config().optimizer.lr, parent.optimizer.lr);
        QVERIFY(dialog.problem().isEmpty());
        QVERIFY(dialog.startButton()->isEnabled());
        // Each combo offers exactly the engine's values for its field, in the engine's order.
        const auto keysOf = [](const QComboBox* combo) {
            QStringList keys;
            for (int i = 0; i < combo->count(); ++i)
                keys << combo->itemData(i).toString();
            return keys;
        };
        const auto engineKeys = [](std::string_view path) {
            QStringList keys;
            for (const FieldChoice& choice : runConfigField(path).choices())
                keys << QString::fromUtf8(choice.key.data(), qsizetype(choice.key.size()));
            return keys;
        };
        QCOMPARE(keysOf(dialog.precisionBox()), engineKeys("precision.mode"));
        QCOMPARE(keysOf(dialog.masterWeightsBox()), engineKeys("precision.master_weights"));
        QCOMPARE(keysOf(dialog.optimizerStateBox()), engineKeys("precision.optimizer_state"));
        QVERIFY(keysOf(dialog.precisionBox()).contains("mxfp8"));
        QVERIFY(keysOf(dialog.masterWeightsBox()).contains("bf16-kahan"));

        dialog.precisionBox()->setCurrentIndex(dialog.precisionBox()->findData("mixed-bf16"));
        dialog.masterWeightsBox()->setCurrentIndex(dialog.masterWeightsBox()->findData("bf16-stochastic"));
        dialog.optimizerStateBox()->setCurrentIndex(dialog.optimizerStateBox()->findData("bf16"));
        dialog.learningRateBox()->setValue(0.01);
        dialog.nameEdit()->setText("  bf16-fork ");
        QCOMPARE(dialog.config().precision, PrecisionMode::MixedBf16);
        QCOMPARE(dialog.config().update.masters, MasterWeights::Bf16Stochastic);
        QCOMPARE(dialog.config().update.state, OptimizerStatePrecision::Bf16);
        QCOMPARE(dialog.config().optimizer.lr, 0.01f);
        QCOMPARE(dialog.config().model.layers.size(), parent.model.layers.size());
        QCOMPARE(dialog.runName(), QString("bf16-fork"));
        QVERIFY2(dialog.problem().isEmpty(), qPrintable(dialog.problem()));
    }

    // The engine decides whether a fork can start, and the dialog says what it answered: a
    // changed model shape (which its editors cannot make, but a config can) is refused by name.
    void theDialogRefusesAForkThatChangesTheModelsShape()
    {
        const RunConfig parent = m_bench->document()->config();
        ForkDialog dialog(parent, "Fork mlp at step 16");
        RunConfig wider = parent;
        const auto linear = std::find_if(wider.model.layers.begin(), wider.model.layers.end(),
                                         [](const LayerSpec& l) { return l.type == LayerKind::Linear; });
        QVERIFY(linear != wider.model.layers.end());
        linear->units *= 2;
        dialog.setConfig(wider);
        const std::optional<std::string> engine = forkShapeChange(parent, wider);
        QVERIFY(engine.has_value());
        QCOMPARE(dialog.problem(), QString::fromStdString(*engine));
        const int index = int(linear - wider.model.layers.begin());
        const std::int64_t inputs = validateModel(parent.model).layers[std::size_t(index)].inputShape.numel();
        QCOMPARE(dialog.problem(),
                 QString("a fork keeps its parent's model shape (the saved weights must fit): layer %1 (linear) has %2 "
                         "parameters in the fork but %3 in the parent")
                     .arg(index)
                     .arg((inputs + 1) * linear->units)
                     .arg((inputs + 1) * (linear->units / 2)));
        QCOMPARE(dialog.problemLabel()->text(), dialog.problem());
        QVERIFY(!dialog.startButton()->isEnabled());
        dialog.setConfig(parent);
        QVERIFY(dialog.problem().isEmpty());
        QVERIFY(dialog.startButton()->isEnabled());
        // And the workbench refuses it too, with the same words, without starting anything.
        const int runs = int(m_bench->store()->listRuns().size());
        QVERIFY(!m_bench->startFork(m_parentId, 16, wider));
        QVERIFY2(m_bench->banner()->text().contains(QString::fromStdString(*engine).toHtmlEscaped()),
                 qPrintable(m_bench->banner()->text()));
        QCOMPARE(int(m_bench->store()->listRuns().size()), runs);
    }

    void forkFromHereStartsAForkAtTheNearestSavedState()
    {
        // The dialog is modal: answer it once it is up, as a user would.
        QTimer::singleShot(0, this, [] {
            auto* dialog = qobject_cast<ForkDialog*>(QApplication::activeModalWidget());
            QVERIFY(dialog);
            dialog->precisionBox()->setCurrentIndex(dialog->precisionBox()->findData("mixed-bf16"));
            dialog->nameEdit()->setText("bf16-from-16");
            dialog->accept();
        });
        QSignalSpy ended(m_bench->controller(), &RunController::sequenceEnded);
        QVERIFY(m_bench->forkStoredRun(m_parentId, 14.6)); // nearest saved state: step 16
        QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1, 120000);
        const storage::RunInfo fork = m_bench->store()->findRun("bf16-from-16");
        QCOMPARE(fork.precision, QString("mixed-bf16"));
        QVERIFY(fork.parent.has_value());
        QCOMPARE(fork.parent->runId, std::optional<qint64>(m_parentId));
        QCOMPARE(fork.parent->step, qint64(16));
        QCOMPARE(m_bench->store()->steps(fork.id).step.first(), 17.0);

        RunListModel* runs = m_bench->runBrowser()->runModel();
        runs->reload();
        const int row = runs->rowOfRun(fork.id);
        QCOMPARE(runs->data(runs->index(row, RunListModel::ForkedFrom)).toString(),
                 QString("#%1 at step 16").arg(m_parentId));
        QCOMPARE(runs->data(runs->index(runs->rowOfRun(m_parentId), RunListModel::ForkedFrom)).toString(), QString());
        m_forkId = fork.id;
    }

    void theComparisonDrawsTheForkFromItsBranchPoint()
    {
        QVERIFY(m_forkId > 0);
        // The fork alone: its parent's curve up to the branch, then the fork's own.
        QVERIFY(m_bench->compareStoredRuns({m_forkId, m_parentId}));
        PlotWidget* loss = m_bench->comparison()->plots().first();
        QCPGraph* forkCurve = loss->graph(0);
        QCOMPARE(forkCurve->name(), QString("bf16-from-16"));
        QCOMPARE(forkCurve->data()->begin()->key, 16.0);
        QCOMPARE((forkCurve->data()->end() - 1)->key, 24.0);
        // The parent is compared too, so its curve is drawn whole once (no separate lead), and
        // the branch point is marked where the fork leaves it.
        QStringList names;
        for (int i = 0; i < loss->graphCount(); ++i)
            names << loss->graph(i)->name();
        QVERIFY2(!names.join(",").contains("before the fork"), qPrintable(names.join(", ")));
        QVERIFY2(names.contains("forked at step 16"), qPrintable(names.join(", ")));
        const QCPGraph* parentCurve = loss->graph(names.indexOf(m_bench->store()->run(m_parentId).name));
        QCOMPARE(parentCurve->data()->begin()->key, 1.0);
        // The fork's curve leaves the parent's smoothed curve at the branch point.
        QCOMPARE(forkCurve->data()->begin()->value, parentCurve->data()->at(15)->value);
        // Its time covers only its own steps, so the speedup beside it is the throughputs' ratio.
        ComparisonTableModel* results = m_bench->comparison()->resultsModel();
        QVERIFY2(
            results->data(results->index(0, ComparisonTableModel::TrainTime)).toString().endsWith("s (after step 16)"),
            qPrintable(results->data(results->index(0, ComparisonTableModel::TrainTime)).toString()));
        const auto forkRun = loadStoredRun(*m_bench->store(), m_forkId);
        const auto parentRun = loadStoredRun(*m_bench->store(), m_parentId);
        const double ratio = parentRun->summary->samplesPerSecond / forkRun->summary->samplesPerSecond;
        results->setBaseline(0);
        QVERIFY2(results->data(results->index(1, ComparisonTableModel::Speedup))
                     .toString()
                     .startsWith(QString::fromStdString(formatRatio(ratio))),
                 qPrintable(results->data(results->index(1, ComparisonTableModel::Speedup)).toString()));
    }

    void aForkComparedWithoutItsParentDrawsTheParentsCurveBeforeIt()
    {
        // The fork on its own: the parent is not among the runs, so its curve up to the branch is
        // drawn, faded, before the fork's.
        m_bench->showComparison({loadStoredRun(*m_bench->store(), m_forkId)});
        PlotWidget* loss = m_bench->comparison()->plots().first();
        QStringList names;
        for (int i = 0; i < loss->graphCount(); ++i)
            names << loss->graph(i)->name();
        const int lead = names.indexOf(QString("%1 before the fork").arg(m_bench->store()->run(m_parentId).name));
        QVERIFY2(lead >= 0, qPrintable(names.join(", ")));
        QCOMPARE(loss->graph(lead)->data()->begin()->key, 1.0);
        QCOMPARE((loss->graph(lead)->data()->end() - 1)->key, 16.0);
    }

    void aRunWithoutSavedStateSaysSoInTheBanner()
    {
        storage::NewRun empty;
        empty.name = "nothing-saved";
        empty.configJson = QString::fromStdString(runConfigToJson(m_bench->document()->config()));
        const qint64 id = m_bench->store()->createRun(empty);
        RunSummary stopped;
        stopped.status = RunStatus::Stopped;
        m_bench->store()->finishRun(id, stopped);
        QVERIFY(!m_bench->forkStoredRun(id, 3));
        QVERIFY2(m_bench->banner()->text().contains("nothing-saved has no saved training state"),
                 qPrintable(m_bench->banner()->text()));
        // startFork at a step without a state lists the steps that have one.
        QVERIFY(!m_bench->startFork(m_parentId, 9, m_bench->document()->config()));
        QVERIFY2(m_bench->banner()->text().contains("it has one at steps 8, 16 and 24; the nearest are 8 and 16"),
                 qPrintable(m_bench->banner()->text()));
    }

private:
    QTemporaryDir m_dir;
    std::unique_ptr<Workbench> m_bench;
    qint64 m_parentId = 0, m_forkId = 0;
};

QTEST_MAIN(ForkUiTest)
#include "fork_ui_test.moc"
