// The Numerics tab: a GUI run with statistics every 5 steps is recorded, opened back from
// the run database, and shows one heatmap column per sampled step and one table row per
// measured tensor at the selected step; under a block-format recipe, one row per quantised
// GEMM input with the histogram of its block scale exponents.
#include "engine/lens/what_if.h"
#include "engine/util/format_number.h"
#include "storage/run_store.h"
#include "tests/ui/quick_config.h"
#include "ui/config_document.h"
#include "ui/gemm_input_panel.h"
#include "ui/gemm_input_table_model.h"
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
#include <QMap>
#include <QSet>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <qcustomplot.h>

using namespace mantissa;
using namespace mantissa::ui;
using mantissa::ui::test::quickConfig;

namespace {

// The heatmap's named lines: name -> whether the line is drawn (a legend-only entry has no data).
QMap<QString, bool> limitLines(const NumericsView* view)
{
    QMap<QString, bool> lines;
    for (int i = 0; i < view->heatmap()->graphCount(); ++i) {
        const QCPGraph* g = view->heatmap()->graph(i);
        if (!g->name().isEmpty())
            lines.insert(g->name(), !g->data()->isEmpty());
    }
    return lines;
}

} // namespace

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

        // An fp32 run is measured against fp16 ("what if it ran in fp16"): fp16's limits are
        // lines, and the floor after loss scaling a band.
        const QMap<QString, bool> lines = limitLines(view);
        QCOMPARE(lines.value(QStringLiteral("fp16 max 65504 (2^16)")), true);
        QCOMPARE(lines.value(QStringLiteral("fp16 min normal 2^-14")), true);
        QCOMPARE(lines.value(QStringLiteral("fp16 min subnormal 2^-24")), true);
        QCOMPARE(lines.value(QStringLiteral("fp16 floor after loss scaling (2^-24 / scale): lost below")), true);
        QVERIFY(!lines.contains(
            QStringLiteral("GEMM inputs: scaled per block; what they lose is on the GEMM inputs page")));

        // Shown as scaled: still one column per step, with the floor at fp16's own.
        view->scaledCheck()->setChecked(true);
        QCOMPARE(view->colorMap()->data()->keySize(), static_cast<int>(steps.size()));
        QVERIFY(limitLines(view).contains(QStringLiteral("lost in fp16: below 2^-24 as stored")));
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
        QCOMPARE(cell(NumericsTableModel::ScaleUsed), QString::fromStdString(formatScale(record.lossScale)));
        const TensorNumerics& g = record.tensors[static_cast<std::size_t>(gradRow)];
        const int shift = record.scaledGradients ? -static_cast<int>(std::lround(std::log2(record.lossScale))) : 0;
        QSet<QString> suggestions; // the percentile must change the answer for this to test anything
        for (double percent : {1.0, 0.01, 50.0}) {
            view->percentileSpin()->setValue(percent);
            suggestions << cell(NumericsTableModel::SuggestedScale);
            const auto expected = suggestLossScale(g.stats.histogram, percent / 100.0, g.target, shift);
            QVERIFY(expected.has_value());
            QVERIFY2(cell(NumericsTableModel::SuggestedScale)
                         .startsWith(QString::fromStdString(formatScale(expected->suggested))),
                     qPrintable(cell(NumericsTableModel::SuggestedScale)));
        }
        QVERIFY(suggestions.size() > 1);
        view->percentileSpin()->setValue(1.0);

        // An fp32 run quantises no GEMM input: the block-format page is disabled.
        QVERIFY(record.gemmInputs.empty());
        QVERIFY(!view->tableTabs()->isTabEnabled(1));
        QCOMPARE(view->gemmInputPanel()->model()->rowCount(), 0);

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

    void aRecipeRunShowsItsGemmInputs()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        Workbench bench;
        QVERIFY(bench.setDatabasePath(dir.filePath("runs.sqlite")));
        NumericsView* view = bench.numerics();
        GemmInputPanel* panel = view->gemmInputPanel();
        QAbstractItemModelTester tester(panel->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        bench.loadPreset("mlp");
        RunConfig c = quickConfig(bench.document()->config(), 10);
        c.precision = PrecisionMode::Mxfp4; // the first and last layers stay bf16: 1.linear is quantised
        c.numerics.every = 5;
        bench.document()->apply(c, "mxfp4 run");
        QSignalSpy ended(bench.controller(), &RunController::sequenceEnded);
        QVERIFY(bench.startRun());
        QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1, 120000);
        const qint64 id = bench.runBrowser()->runModel()->runId(0);
        QVERIFY(bench.openStoredRun(id));
        QCOMPARE(view->steps(), (QList<qint64>{5, 10}));

        view->selectStep(5);
        const NumericsRecord record = bench.store()->numerics(id, 5);
        QCOMPARE(record.gemmInputs.size(), std::size_t(6)); // fprop, dgrad, wgrad x two operands
        QVERIFY(view->tableTabs()->isTabEnabled(1));
        GemmInputTableModel* model = panel->model();
        QCOMPARE(model->rowCount(), 6);
        QCOMPARE(model->columnCount(), static_cast<int>(GemmInputTableModel::ColumnCount));
        const auto cell = [&](int row, int column) { return model->data(model->index(row, column)).toString(); };
        for (int row = 0; row < 6; ++row) {
            const GemmInputNumerics& g = record.gemmInputs[static_cast<std::size_t>(row)];
            QCOMPARE(cell(row, GemmInputTableModel::Layer), QStringLiteral("2.linear"));
            QCOMPARE(cell(row, GemmInputTableModel::Format), QString::fromStdString(g.format));
            QCOMPARE(cell(row, GemmInputTableModel::Blocks), QString::number(g.stats.blocks));
            QCOMPARE(cell(row, GemmInputTableModel::Clipped),
                     QString::number(100.0 * g.stats.clippedBlockFraction(), 'f', 2));
            QCOMPARE(cell(row, GemmInputTableModel::Flushed),
                     QString::number(100.0 * g.stats.flushedFraction(), 'f', 2));
            QCOMPARE(cell(row, GemmInputTableModel::Sqnr), QString::number(g.stats.sqnrDb(), 'f', 1));
        }
        QCOMPARE(cell(0, GemmInputTableModel::Gemm), QStringLiteral("fprop"));
        QCOMPARE(cell(0, GemmInputTableModel::Operand), QStringLiteral("activation"));
        QCOMPARE(cell(5, GemmInputTableModel::Gemm), QStringLiteral("wgrad"));
        QCOMPARE(cell(0, GemmInputTableModel::Format), QStringLiteral("e2m1 mx/32 floor"));

        // The histogram shows the selected row's block scale exponents, one bar per exponent.
        for (int row : {0, 3}) {
            panel->selectRow(row);
            QCOMPARE(panel->selectedRow(), row);
            const auto& exponents = record.gemmInputs[static_cast<std::size_t>(row)].stats.scaleExponents;
            QCOMPARE(panel->histogramBars()->data()->size(), static_cast<int>(exponents.size()));
            double total = 0;
            for (auto it = panel->histogramBars()->data()->constBegin();
                 it != panel->histogramBars()->data()->constEnd(); ++it) {
                QCOMPARE(it->value, double(exponents.at(static_cast<int>(it->key))));
                total += it->value;
            }
            // All-zero blocks have no scale to count (ReLU zeroes whole blocks of activations).
            QVERIFY(total > 0 && total <= double(record.gemmInputs[static_cast<std::size_t>(row)].stats.blocks));
        }
        // Another step keeps the selected row and shows its values there.
        view->selectStep(10);
        QCOMPARE(panel->selectedRow(), 3);
        QCOMPARE(cell(3, GemmInputTableModel::Blocks),
                 QString::number(bench.store()->numerics(id, 10).gemmInputs[3].stats.blocks));

        // The heatmap draws the limits of the type the tensors were measured against, bf16 under
        // a recipe (all off the histogram's scale), not fp16's, and no fp16 floor band; the
        // GEMM inputs' loss is on their page.
        const int gradients = view->kindCombo()->findData(static_cast<int>(TensorKind::WeightGrad));
        view->kindCombo()->setCurrentIndex(gradients);
        const QMap<QString, bool> lines = limitLines(view);
        QCOMPARE(lines.value(QStringLiteral("bf16 max 3.38953e+38 (2^128): off-scale"), true), false);
        QCOMPARE(lines.value(QStringLiteral("bf16 min normal 2^-126: off-scale"), true), false);
        QCOMPARE(lines.value(QStringLiteral("bf16 min subnormal 2^-133: off-scale"), true), false);
        QVERIFY(
            lines.contains(QStringLiteral("GEMM inputs: scaled per block; what they lose is on the GEMM inputs page")));
        for (const QString& name : lines.keys())
            QVERIFY2(!name.contains(QStringLiteral("fp16")), qPrintable(name));
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
