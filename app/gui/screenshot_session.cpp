#include "gui/screenshot_session.h"

#include "engine/precision/precision_policy.h"
#include "gui/main_window.h"
#include "ui/config_document.h"
#include "ui/gemm_input_panel.h"
#include "ui/gemm_input_table_model.h"
#include "ui/numerics_view.h"
#include "ui/recipe_panel.h"
#include "ui/run_browser.h"
#include "ui/run_controller.h"
#include "ui/run_monitor.h"
#include "ui/workbench.h"

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QPixmap>
#include <QScrollArea>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>

#include <algorithm>
#include <cstdio>

namespace mantissa::gui {

ScreenshotSession::ScreenshotSession(MainWindow* window, ScreenshotOptions options)
    : QObject(window), m_window(window), m_options(std::move(options))
{}

void ScreenshotSession::configure(const QString& preset)
{
    ui::Workbench* wb = m_window->workbench();
    wb->loadPreset(preset);
    RunConfig config = wb->document()->config();
    config.training.maxSteps = m_options.steps;
    config.data.limitTrain = m_options.limitTrain;
    config.data.limitTest = m_options.limitTest;
    wb->document()->apply(config, "screenshot settings");
}

void ScreenshotSession::startRecipeNumerics(PrecisionMode precision)
{
    ui::Workbench* wb = m_window->workbench();
    const QString name = QStringLiteral("numerics-%1.png").arg(QString::fromStdString(precisionModeName(precision)));
    connect(wb, &ui::Workbench::runFinished, this, [this, name] {
        QTimer::singleShot(300, this, [this, name] {
            ui::Workbench* wb = m_window->workbench();
            ui::NumericsView* view = wb->numerics();
            if (!view->steps().isEmpty())
                view->selectStep(view->steps().last());
            if (auto* tabs = wb->findChild<QTabWidget*>("rightTabs"))
                tabs->setCurrentWidget(view);
            // The block-format page, on the row of the most clipped blocks.
            if (view->tableTabs()->isTabEnabled(1)) {
                view->tableTabs()->setCurrentIndex(1);
                const auto& inputs = view->gemmInputPanel()->model()->inputs();
                const auto most = std::max_element(inputs.begin(), inputs.end(), [](const auto& a, const auto& b) {
                    return a.stats.clippedBlockFraction() < b.stats.clippedBlockFraction();
                });
                if (most != inputs.end())
                    view->gemmInputPanel()->selectRow(static_cast<int>(most - inputs.begin()));
            }
            QTimer::singleShot(300, this, [this, name, wb] {
                grab(name);
                // The Precision tab beside it: the recipe's formats and the range this run measured,
                // scrolled to that table (the tab is longer than the window).
                if (auto* tabs = wb->findChild<QTabWidget*>("leftTabs"))
                    tabs->setCurrentIndex(1);
                if (auto* recipe = wb->findChild<ui::RecipePanel*>())
                    for (QWidget* parent = recipe->parentWidget(); parent; parent = parent->parentWidget())
                        if (auto* area = qobject_cast<QScrollArea*>(parent)) {
                            area->ensureWidgetVisible(recipe->formatTable(), 0, 8);
                            break;
                        }
                QTimer::singleShot(300, this, [this, name] {
                    grab(QString(name).replace("numerics-", "precision-"));
                    QApplication::quit();
                });
            });
        });
    });
    startNumericsRun(precision);
}

void ScreenshotSession::startNumerics()
{
    if (m_options.numericsPrecision) {
        startRecipeNumerics(*m_options.numericsPrecision);
        return;
    }
    ui::Workbench* wb = m_window->workbench();
    // Mixed-fp16 first (numerics.png), then pure fp16 (numerics-fp16.png): the pair shows
    // the loss scale lifting the gradients that pure fp16 loses.
    connect(wb, &ui::Workbench::runFinished, this, [this] {
        QTimer::singleShot(300, this, [this] {
            ui::Workbench* wb = m_window->workbench();
            ui::NumericsView* view = wb->numerics();
            // Weight gradients of the first linear layer: the ones that fall furthest.
            view->kindCombo()->setCurrentIndex(view->kindCombo()->findData(static_cast<int>(TensorKind::WeightGrad)));
            if (!view->steps().isEmpty())
                view->selectStep(view->steps().last());
            if (auto* tabs = wb->findChild<QTabWidget*>("rightTabs"))
                tabs->setCurrentWidget(view);
            QTimer::singleShot(300, this, [this] {
                grab(m_phase == 0 ? "numerics.png" : "numerics-fp16.png");
                if (m_phase++ == 0)
                    startNumericsRun(PrecisionMode::Fp16);
                else
                    QApplication::quit();
            });
        });
    });
    // Halfway through the mixed-fp16 run, the tab as it fills live (numerics-live.png).
    connect(wb->controller(), &ui::RunController::tick, this, [this] {
        ui::Workbench* wb = m_window->workbench();
        const ui::RunRecording* r = wb->monitor()->recording();
        if (m_phase != 0 || m_grabbedRunning || !r || static_cast<int>(r->step.size()) < m_options.steps * 2 / 3)
            return;
        m_grabbedRunning = true;
        ui::NumericsView* view = wb->numerics();
        if (auto* tabs = wb->findChild<QTabWidget*>("rightTabs"))
            tabs->setCurrentWidget(view);
        view->kindCombo()->setCurrentIndex(view->kindCombo()->findData(static_cast<int>(TensorKind::WeightGrad)));
        // Showing the tab reads what the writer has committed so far at once.
        QTimer::singleShot(150, this, [this] { grab("numerics-live.png"); });
    });
    startNumericsRun(PrecisionMode::MixedFp16);
}

void ScreenshotSession::startNumericsRun(PrecisionMode precision)
{
    ui::Workbench* wb = m_window->workbench();
    configure(m_options.preset);
    RunConfig config = wb->document()->config();
    config.precision = precision;
    config.numerics.every = std::max(1, m_options.steps / 40);
    // One epoch long enough for all the steps, so the heatmap spans the whole run.
    config.training.epochs = 1;
    config.data.limitTrain = m_options.steps * static_cast<int>(config.training.batchSize);
    wb->document()->apply(config, "numerics screenshot settings");
    if (!wb->startRun()) {
        std::fprintf(stderr, "mantissa --screenshot: the %s preset cannot run\n", qPrintable(m_options.preset));
        QApplication::exit(1);
    }
}

void ScreenshotSession::startRecipeComparison()
{
    ui::Workbench* wb = m_window->workbench();
    connect(wb, &ui::Workbench::comparisonFinished, this, [this] {
        QTimer::singleShot(300, this, [this] {
            grab("comparison-recipes.png");
            QApplication::quit();
        });
    });
    configure(m_options.preset);
    // The precisions as a user ticks them in the menu of Compare precisions.
    wb->comparisonPrecisions()->setCheckedKeys(m_options.compareModes);
    if (!wb->startComparison()) {
        std::fprintf(stderr, "mantissa --screenshot --compare: cannot compare %s on %s\n",
                     qPrintable(m_options.compareModes.join(",")), qPrintable(m_options.preset));
        QApplication::exit(1);
    }
}

void ScreenshotSession::startImportedModel()
{
    ui::Workbench* wb = m_window->workbench();
    connect(wb, &ui::Workbench::runFinished, this, [this] {
        QTimer::singleShot(300, this, [this] {
            grab("onnx-import.png");
            QApplication::quit();
        });
    });
    RunConfig config = wb->document()->config();
    config.data.dataset = DatasetKind::Synthetic; // takes the model's shape and classes on import
    config.precision = m_options.importPrecision;
    config.training.maxSteps = m_options.steps;
    wb->document()->apply(config, "screenshot settings");
    QString error;
    if (!wb->importModel(m_options.importModel, &error) || !wb->startRun()) {
        std::fprintf(stderr, "mantissa --screenshot --model: %s\n",
                     qPrintable(error.isEmpty() ? QStringLiteral("the imported model cannot run") : error));
        QApplication::exit(1);
    }
}

void ScreenshotSession::start()
{
    QDir().mkpath(m_options.directory);
    ui::Workbench* wb = m_window->workbench();
    wb->setDatabasePath(m_options.database.isEmpty() ? m_scratch.filePath("runs.sqlite") : m_options.database);
    if (!m_options.compareModes.isEmpty()) {
        startRecipeComparison();
        return;
    }
    if (!m_options.importModel.isEmpty()) {
        startImportedModel();
        return;
    }
    if (m_options.numericsOnly) {
        startNumerics();
        return;
    }
    connect(wb->controller(), &ui::RunController::tick, this, &ScreenshotSession::onTick);
    connect(wb, &ui::Workbench::runFinished, this, [this] {
        if (m_phase != 0)
            return;
        m_phase = 1;
        // Let the final replot land before grabbing.
        QTimer::singleShot(300, this, [this] {
            grab("workbench-finished.png");
            configure(m_options.comparePreset);
            // Mixed fp16 with a short growth interval, so the loss-scale plot shows the
            // dynamic scaler growing (and backing off on overflow) within a short run.
            RunConfig config = m_window->workbench()->document()->config();
            config.precision = PrecisionMode::MixedFp16;
            config.lossScale.type = LossScaleType::Dynamic;
            config.lossScale.growthInterval = 10;
            m_window->workbench()->document()->apply(config, "screenshot comparison settings");
            m_window->workbench()->startComparison();
        });
    });
    connect(wb, &ui::Workbench::comparisonFinished, this, [this] {
        QTimer::singleShot(300, this, [this] {
            grab("comparison.png");
            ui::Workbench* wb = m_window->workbench();
            wb->showRunBrowser();
            QList<qint64> pair; // the comparison's two runs, as a user would select them
            for (const auto& run : wb->sessionRuns().mid(1))
                pair << run->runId;
            wb->runBrowser()->selectRuns(pair);
            QTimer::singleShot(300, this, [this] {
                grab("runs.png");
                QApplication::quit();
            });
        });
    });
    configure(m_options.preset);
    if (!wb->startRun()) {
        std::fprintf(stderr, "mantissa --screenshot: the %s preset cannot run\n", qPrintable(m_options.preset));
        QApplication::exit(1);
    }
}

void ScreenshotSession::onTick()
{
    const ui::RunRecording* r = m_window->workbench()->monitor()->recording();
    if (m_phase == 0 && !m_grabbedRunning && r && r->step.size() >= m_options.steps / 2 && r->epoch.size() >= 1) {
        m_grabbedRunning = true;
        // The plots replot on the next event-loop pass (queued replot); grab after it.
        QTimer::singleShot(100, this, [this] { grab("workbench-running.png"); });
    }
}

void ScreenshotSession::grab(const QString& name)
{
    const QString path = QDir(m_options.directory).filePath(name);
    if (m_window->grab().save(path))
        std::fprintf(stderr, "wrote %s\n", qPrintable(path));
    else
        std::fprintf(stderr, "could not write %s\n", qPrintable(path));
}

} // namespace mantissa::gui
