// The Numerics tab: a GUI run with statistics every 5 steps is recorded, opened back from
// the run database, and shows one heatmap column per sampled step and one table row per
// measured tensor at the selected step.
#include "engine/lens/what_if.h"
#include "storage/run_store.h"
#include "tests/ui/quick_config.h"
#include "ui/config_document.h"
#include "ui/loss_scale_plot.h"
#include "ui/numerics_table_model.h"
#include "ui/numerics_view.h"
#include "ui/run_browser.h"
#include "ui/run_controller.h"
#include "ui/run_list_model.h"
#include "ui/run_monitor.h"
#include "ui/workbench.h"

#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QSet>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <qcustomplot.h>

using namespace mantissa;
using namespace mantissa::ui;
using mantissa::ui::test::quickConfig;

class NumericsViewTest : public QObject {
    Q_OBJECT

private slots:
    void aRecordedRunShowsItsNumerics()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        Workbench bench;
        QVERIFY(bench.setDatabasePath(dir.filePath("runs.sqlite")));
        NumericsView* view = bench.numerics();
        QVERIFY(view);
        QAbstractItemModelTester tester(view->tableModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);

        bench.loadPreset("mlp");
        RunConfig quick = quickConfig(bench.document()->config(), 20);
        quick.numerics.every = 5;
        bench.document()->apply(quick, "quick run");
        QCOMPARE(bench.document()->config().numerics.every, 5);
        QSignalSpy ended(bench.controller(), &RunController::sequenceEnded);
        QVERIFY(bench.startRun());
        QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1, 120000);

        // The finished GUI run already fills the tab, read back from the database.
        QVERIFY(!view->steps().isEmpty());

        RunListModel* runs = bench.runBrowser()->runModel();
        QCOMPARE(runs->rowCount(), 1);
        const qint64 id = runs->runId(0);
        const QList<qint64> steps = bench.store()->numericsSteps(id);
        QVERIFY(steps.size() >= 3); // 20 steps, every 5

        view->clear();
        QVERIFY(bench.openStoredRun(id));
        QCOMPARE(view->steps(), steps);
        QVERIFY(view->layerCombo()->count() > 0);

        // Weight gradients of the first layer: one heatmap column per sampled step.
        view->kindCombo()->setCurrentIndex(view->kindCombo()->findData(static_cast<int>(TensorKind::WeightGrad)));
        QCOMPARE(view->colorMap()->data()->keySize(), static_cast<int>(steps.size()));
        bool anyData = false;
        for (int x = 0; x < view->colorMap()->data()->keySize(); ++x)
            for (int y = 0; y < view->colorMap()->data()->valueSize(); ++y)
                anyData = anyData || view->colorMap()->data()->cell(x, y) > 0;
        QVERIFY(anyData);

        // Shown as scaled: still one column per step, with the floor at fp16's own.
        view->scaledCheck()->setChecked(true);
        QCOMPARE(view->colorMap()->data()->keySize(), static_cast<int>(steps.size()));
        view->scaledCheck()->setChecked(false);

        // The table: one row per measured tensor at the selected step.
        view->selectStep(steps.last() + 2); // nearest sampled step
        QCOMPARE(view->selectedStep(), steps.last());
        const NumericsRecord record = bench.store()->numerics(id, steps.last());
        QVERIFY(!record.tensors.empty());
        QCOMPARE(view->tableModel()->rowCount(), static_cast<int>(record.tensors.size()));
        QCOMPARE(view->tableModel()->columnCount(), static_cast<int>(NumericsTableModel::ColumnCount));
        QVERIFY(!view->tableModel()->data(view->tableModel()->index(0, NumericsTableModel::Amax)).toString().isEmpty());

        // The what-if: beside each gradient, the scale the run used and the scale that would
        // lift the chosen percentile into fp16's normal range; a new percentile re-suggests.
        int gradRow = -1;
        for (int r = 0; r < static_cast<int>(record.tensors.size()) && gradRow < 0; ++r)
            if (record.tensors[static_cast<std::size_t>(r)].kind == TensorKind::WeightGrad)
                gradRow = r;
        QVERIFY(gradRow >= 0);
        const auto cell = [&](int column) {
            return view->tableModel()->data(view->tableModel()->index(gradRow, column)).toString();
        };
        QCOMPARE(cell(NumericsTableModel::ScaleUsed), QString::number(record.lossScale, 'g', 6));
        const TensorNumerics& g = record.tensors[static_cast<std::size_t>(gradRow)];
        const int shift = record.scaledGradients ? -static_cast<int>(std::lround(std::log2(record.lossScale))) : 0;
        QSet<QString> suggestions; // the percentile must change the answer for this to test anything
        for (double percent : {1.0, 0.01, 50.0}) {
            view->percentileSpin()->setValue(percent);
            suggestions << cell(NumericsTableModel::SuggestedScale);
            const auto expected = suggestLossScale(g.stats.histogram, percent / 100.0, g.target, shift);
            QVERIFY(expected.has_value());
            QVERIFY2(cell(NumericsTableModel::SuggestedScale).startsWith(QString::number(expected->suggested, 'g', 6)),
                     qPrintable(cell(NumericsTableModel::SuggestedScale)));
        }
        QVERIFY(suggestions.size() > 1);
        view->percentileSpin()->setValue(1.0);

        // Highlighting a layer marks its rows bold.
        const QString layer = QString::fromStdString(record.tensors.front().layer);
        view->selectStep(steps.front(), layer);
        QCOMPARE(view->selectedStep(), steps.front());
        QCOMPARE(view->layerCombo()->currentText(), layer);
        QVERIFY(view->tableModel()->data(view->tableModel()->index(0, 0), Qt::FontRole).value<QFont>().bold());

        // An overflow marker clicked on the loss-scale plot jumps to its step and layer.
        OverflowMarker marker;
        marker.step = static_cast<double>(steps[1]) + 1;
        marker.parameter = layer + ".weight";
        view->selectStep(steps.last());
        emit bench.monitor()->scalePlot()->overflowClicked(marker);
        QCOMPARE(view->selectedStep(), steps[1]);
        QCOMPARE(bench.findChild<QTabWidget*>("rightTabs")->currentWidget(), view);
        QCOMPARE(view->layerCombo()->currentText(), layer);

        // Every kind renders without data errors.
        for (int k = 0; k < view->kindCombo()->count(); ++k) {
            view->kindCombo()->setCurrentIndex(k);
            QVERIFY(view->colorMap()->data()->keySize() <= static_cast<int>(steps.size()));
        }
    }

    void theTabFillsLiveWhileTheRunTrains()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        Workbench bench;
        QVERIFY(bench.setDatabasePath(dir.filePath("runs.sqlite")));
        bench.resize(1400, 900);
        bench.show();
        NumericsView* view = bench.numerics();
        bench.loadPreset("mlp");
        // Long enough that it is still training when the checks below are done; stopped then.
        RunConfig c = quickConfig(bench.document()->config(), 100000);
        c.numerics.every = 5;
        c.training.epochs = 1000;
        bench.document()->apply(c, "long run");
        QSignalSpy ended(bench.controller(), &RunController::sequenceEnded);
        QVERIFY(bench.startRun());
        bench.findChild<QTabWidget*>("rightTabs")->setCurrentWidget(view);

        // Steps appear while the run is still going, read from what the writer committed.
        QTRY_VERIFY_WITH_TIMEOUT(!view->steps().isEmpty(), 30000);
        QVERIFY(bench.controller()->isRunning());
        QVERIFY(view->layerCombo()->count() > 0);
        QVERIFY(view->tableModel()->rowCount() > 0);
        const qsizetype seen = view->steps().size();
        // ... and keep coming: the heatmap grows a column per new sampled step, and the
        // table follows the latest step.
        QTRY_VERIFY_WITH_TIMEOUT(view->steps().size() > seen + 2, 30000);
        QVERIFY(bench.controller()->isRunning());
        QCOMPARE(view->selectedStep(), view->steps().last());
        view->kindCombo()->setCurrentIndex(view->kindCombo()->findData(static_cast<int>(TensorKind::WeightGrad)));
        QCOMPARE(view->colorMap()->data()->keySize(), static_cast<int>(view->steps().size()));

        bench.controller()->stop();
        QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1, 30000);
        // After the end the tab holds every sampled step the database has.
        const qint64 id = bench.runBrowser()->runModel()->runId(0);
        QCOMPARE(view->steps(), bench.store()->numericsSteps(id));
    }

    void aRunWithoutStatisticsLeavesTheTabEmpty()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        Workbench bench;
        QVERIFY(bench.setDatabasePath(dir.filePath("runs.sqlite")));
        bench.loadPreset("mlp");
        RunConfig c = quickConfig(bench.document()->config(), 4);
        c.numerics.every = 0;
        bench.document()->apply(c, "quick run");
        QSignalSpy ended(bench.controller(), &RunController::sequenceEnded);
        QVERIFY(bench.startRun());
        QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1, 120000);
        const qint64 id = bench.runBrowser()->runModel()->runId(0);
        QVERIFY(bench.openStoredRun(id));
        QVERIFY(bench.numerics()->steps().isEmpty());
        QCOMPARE(bench.numerics()->tableModel()->rowCount(), 0);
    }
};

QTEST_MAIN(NumericsViewTest)
#include "numerics_view_test.moc"
