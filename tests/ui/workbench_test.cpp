// The Workbench as a user drives it: edits with undo, validation blocking Run, a short run
// filling the plots, pause and stop, and little UI-thread work per event while training.
#include "engine/backend/backend_factory.h"
#include "engine/model/tensor_core_alignment.h"
#include "tests/ui/quick_config.h"
#include "ui/comparison_table_model.h"
#include "ui/config_document.h"
#include "ui/enum_combo.h"
#include "ui/layer_table_model.h"
#include "ui/model_editor.h"
#include "ui/plot_widget.h"
#include "ui/run_controller.h"
#include "ui/run_monitor.h"
#include "ui/training_panel.h"
#include "ui/workbench.h"

#include <QAbstractItemModelTester>
#include <QAction>
#include <QComboBox>
#include <QLocale>
#include <QMenu>
#include <QMetaEnum>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QTableView>
#include <QThread>
#include <QToolButton>
#include <QTreeView>
#include <QUndoStack>
#include <QtTest>

#include <ctime>

using namespace mantissa;
using namespace mantissa::ui;
using mantissa::ui::test::quickConfig;

namespace {

// The most CPU time the UI thread may spend on one event while a run trains. Measured on the
// project's 2-core machine (shared with other builds, load average 7 to 10): the costliest event
// of the run below, the window's first Expose, took 5.4 to 5.9 ms, and 7.0 to 7.8 ms with two
// busy-looping processes added; the plots' redraws and the record batches take less. 25 ms is
// about three times that, and half of the 50 ms after which a user sees the UI lag.
constexpr double kMaxUiMillisecondsPerEvent = 25;

double threadCpuMilliseconds()
{
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

// Measures the UI thread's own CPU time for each event it delivers, around the outermost
// QApplication::notify: the work the UI does for one event, which is what keeps it from the
// next. Wall time would also count the time the thread waited for a core, which on a loaded
// machine (a parallel test, a build) says nothing about the UI's code.
class EventCostApplication : public QApplication {
public:
    using QApplication::QApplication;

    void startMeasuring()
    {
        m_measuring = true;
        m_events = 0;
        m_worstMs = 0;
        m_worstEvent.clear();
    }
    void stopMeasuring() { m_measuring = false; }
    qint64 events() const { return m_events; }
    double worstMs() const { return m_worstMs; }
    // "QEvent::Timer to QTimer": the costliest event's type and receiver.
    const QString& worstEvent() const { return m_worstEvent; }

    bool notify(QObject* receiver, QEvent* event) override
    {
        if (!m_measuring || m_depth > 0 || QThread::currentThread() != thread())
            return QApplication::notify(receiver, event);
        // Read before delivery: the event or its receiver may be gone after it.
        const QEvent::Type type = event->type();
        const char* receiverClass = receiver->metaObject()->className();
        ++m_depth;
        const double start = threadCpuMilliseconds();
        const bool result = QApplication::notify(receiver, event);
        const double spent = threadCpuMilliseconds() - start;
        --m_depth;
        ++m_events;
        if (spent > m_worstMs) {
            m_worstMs = spent;
            m_worstEvent = QStringLiteral("%1 to %2")
                               .arg(QString::fromLatin1(QMetaEnum::fromType<QEvent::Type>().valueToKey(type)),
                                    QString::fromLatin1(receiverClass));
        }
        return result;
    }

private:
    bool m_measuring = false;
    int m_depth = 0; // the UI thread's notify calls in progress: nested deliveries count in the outer one
    qint64 m_events = 0;
    double m_worstMs = 0;
    QString m_worstEvent;
};

// The combo box `name` lists exactly the engine's values of E, in the engine's order, each
// with its display name and description; choosing an item puts that value in the config.
template <typename E>
void checkComboListsTheEnginesValues(Workbench& bench, const char* name, E (*field)(const RunConfig&))
{
    auto* combo = bench.findChild<QComboBox*>(name);
    QVERIFY2(combo, name);
    const auto entries = enumEntries<E>();
    QCOMPARE(combo->count(), static_cast<int>(entries.size()));
    for (int i = 0; i < combo->count(); ++i) {
        const EnumEntry<E>& entry = entries[static_cast<std::size_t>(i)];
        QCOMPARE(combo->itemData(i).toString(), fromView(entry.key));
        QCOMPARE(combo->itemText(i), fromView(entry.displayName));
        QCOMPARE(combo->itemData(i, Qt::ToolTipRole).toString(), fromView(entry.description));
    }
    // Last to first, so that every item is a change from the one before.
    for (int i = combo->count() - 1; i >= 0; --i) {
        combo->setCurrentIndex(i);
        QCOMPARE(field(bench.document()->config()), entries[static_cast<std::size_t>(i)].value);
    }
}

} // namespace

class WorkbenchTest : public QObject {
    Q_OBJECT

private slots:
    void editingACellChangesTheSpecAndUndoRestoresIt()
    {
        Workbench bench;
        bench.loadPreset("mlp");
        LayerTableModel* model = bench.modelEditor()->tableModel();
        QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(bench.document()->config().model.layers[1].units, 1024);
        QVERIFY(model->setData(model->index(1, LayerTableModel::Params), "units=512, activation=relu"));
        QCOMPARE(bench.document()->config().model.layers[1].units, 512);
        QVERIFY(model->data(model->index(1, LayerTableModel::OutputShape)).toString().contains("512"));
        bench.document()->undoStack()->undo();
        QCOMPARE(bench.document()->config().model.layers[1].units, 1024);
        bench.document()->undoStack()->redo();
        QCOMPARE(bench.document()->config().model.layers[1].units, 512);
    }

    // A transformer block and a residual block are one row each that expands into their parts
    // (read-only: the block is edited as a whole); the parts' weights add up to the block's.
    void compositeBlocksExpandIntoTheirParts()
    {
        Workbench bench;
        bench.loadPreset("char-gpt");
        LayerTableModel* model = bench.modelEditor()->tableModel();
        QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        const auto& layers = bench.document()->config().model.layers;
        int block = -1;
        for (int i = 0; i < static_cast<int>(layers.size()) && block < 0; ++i)
            if (layers[static_cast<std::size_t>(i)].type == LayerKind::Transformer)
                block = i;
        QVERIFY(block >= 0);
        const QModelIndex row = model->index(block, 0);
        QCOMPARE(model->data(model->index(block, LayerTableModel::Index)).toInt(), block);
        QCOMPARE(model->rowCount(row), 4);
        QStringList types;
        qlonglong weights = 0;
        const QLocale locale;
        for (int part = 0; part < 4; ++part) {
            types << model->data(model->index(part, LayerTableModel::Type, row)).toString();
            weights += locale.toLongLong(model->data(model->index(part, LayerTableModel::ParamCount, row)).toString());
            QVERIFY(!(model->flags(model->index(part, LayerTableModel::Params, row)) & Qt::ItemIsEditable));
            QCOMPARE(LayerTableModel::layerRow(model->index(part, LayerTableModel::Type, row)), block);
        }
        QCOMPARE(types, QStringList({"layernorm", "attention", "layernorm", "mlp"}));
        QCOMPARE(model->data(model->index(1, LayerTableModel::Index, row)).toString(), QString("%1.1").arg(block));
        QCOMPARE(weights, locale.toLongLong(model->data(model->index(block, LayerTableModel::ParamCount)).toString()));
        QCOMPARE(model->rowCount(model->index(0, 0)), 0); // a token embedding has no parts

        // resnet-small: the projection block's parts are its five body layers and the shortcut.
        bench.loadPreset("resnet-small");
        QCOMPARE(model->rowCount(model->index(3, 0)), 5);
        const QModelIndex projected = model->index(5, 0);
        QCOMPARE(model->rowCount(projected), 6);
        QCOMPARE(model->data(model->index(0, LayerTableModel::Type, projected)).toString(), QString("conv2d"));
        QCOMPARE(model->data(model->index(5, LayerTableModel::Params, projected)).toString(),
                 QString("shortcut projection"));
        // Selecting a part selects its block for the editor's buttons: removing removes the block.
        bench.modelEditor()->tableView()->setCurrentIndex(model->index(2, LayerTableModel::Type, projected));
        const std::size_t before = bench.document()->config().model.layers.size();
        QToolButton* remove = nullptr;
        for (QToolButton* b : bench.modelEditor()->findChildren<QToolButton*>())
            if (b->text() == "Remove")
                remove = b;
        QVERIFY(remove && remove->isEnabled());
        remove->click();
        QCOMPARE(bench.document()->config().model.layers.size(), before - 1);
        QCOMPARE(bench.document()->config().model.layers[5].type, LayerKind::Relu);
    }

    void theDeviceListNamesEachGpuOrSaysWhyThereIsNone()
    {
        Workbench bench;
        auto* combo = bench.findChild<QComboBox*>("training.device");
        QVERIFY(combo);
        QCOMPARE(combo->itemData(0).toString(), QString("auto"));
        QCOMPARE(combo->itemData(1).toString(), QString("cpu"));
        const GpuInventory gpus = listGpus();
        auto* model = qobject_cast<QStandardItemModel*>(combo->model());
        QVERIFY(model);
        if (gpus.devices.empty()) {
            // One disabled GPU entry that carries the reason, so the user learns why.
            QCOMPARE(combo->count(), 3);
            QVERIFY(!model->item(2)->isEnabled());
            QVERIFY2(combo->itemText(2).contains(QString::fromStdString(gpus.whyNone)), qPrintable(combo->itemText(2)));
            QVERIFY(!gpus.whyNone.empty());
        } else {
            QCOMPARE(combo->count(), 2 + static_cast<int>(gpus.devices.size()));
            for (int i = 0; i < static_cast<int>(gpus.devices.size()); ++i) {
                QVERIFY(model->item(2 + i)->isEnabled());
                QVERIFY(combo->itemText(2 + i).contains(QString::fromStdString(gpus.devices[i].name)));
                QCOMPARE(combo->itemData(2 + i).toString(), QString("cuda:%1").arg(gpus.devices[i].index));
            }
        }
    }

    // Issue 16: the precision panel says which kernels the mode's compute type takes on this
    // CPU, and refuses in advance a forced native path the CPU lacks (fp16 has none anywhere).
    void precisionPanelSaysWhichKernelsTheModeTakes()
    {
        Workbench bench;
        bench.loadPreset("mlp");
        auto* note = bench.findChild<QLabel*>("precision.kernel_note");
        QVERIFY(note);
        RunConfig c = bench.document()->config();
        c.training.device = "cpu";
        c.precision = PrecisionMode::MixedFp16;
        bench.document()->apply(c, "mixed fp16");
        QVERIFY2(note->text().contains("fp16 runs emulated"), qPrintable(note->text()));
        c.training.cpuKernels = CpuKernels::Native;
        bench.document()->apply(c, "native kernels");
        QVERIFY2(note->text().contains("refuse"), qPrintable(note->text()));
        c.precision = PrecisionMode::Fp32;
        bench.document()->apply(c, "fp32");
        QVERIFY(note->text().isEmpty());
    }

    // Issue 15: the settings combos and the layer table's precision editor fill from the
    // engine's tables, so they cannot offer a value the config parser refuses or miss one.
    void choiceCombosListExactlyTheEnginesValues()
    {
        Workbench bench;
        bench.loadPreset("mlp");
        checkComboListsTheEnginesValues<PrecisionMode>(bench, "precision.mode",
                                                       [](const RunConfig& c) { return c.precision; });
        checkComboListsTheEnginesValues<LossScaleType>(bench, "precision.loss_scale.type",
                                                       [](const RunConfig& c) { return c.lossScale.type; });
        checkComboListsTheEnginesValues<OptimizerKind>(bench, "optimizer.type",
                                                       [](const RunConfig& c) { return c.optimizer.type; });
        checkComboListsTheEnginesValues<ScheduleKind>(bench, "schedule.type",
                                                      [](const RunConfig& c) { return c.schedule.type; });
        checkComboListsTheEnginesValues<DatasetKind>(bench, "data.dataset",
                                                     [](const RunConfig& c) { return c.data.dataset; });
        checkComboListsTheEnginesValues<CpuKernels>(bench, "training.cpu_kernels",
                                                    [](const RunConfig& c) { return c.training.cpuKernels; });

        QStringList keys;
        for (const auto& entry : enumEntries<LayerPrecision>())
            keys << fromView(entry.key);
        QCOMPARE(LayerTableModel::precisionNames(), keys);
        LayerTableModel* model = bench.modelEditor()->tableModel();
        for (const auto& entry : enumEntries<LayerPrecision>()) {
            QVERIFY(model->setData(model->index(1, LayerTableModel::Precision), fromView(entry.key)));
            QCOMPARE(bench.document()->config().model.layers[1].precision, entry.value);
            QCOMPARE(model->data(model->index(1, LayerTableModel::Precision)).toString(), fromView(entry.key));
        }
        QVERIFY(!model->setData(model->index(1, LayerTableModel::Precision), "fp8"));
    }

    // The layer types the editor offers (the Type cell's combo and the Add layer menu) are the
    // engine's LayerKind table: a kind the engine gains appears without a UI edit.
    void layerTypesComeFromTheEnginesTable()
    {
        Workbench bench;
        bench.loadPreset("mlp");
        ModelEditor* editor = bench.modelEditor();
        LayerTableModel* model = editor->tableModel();
        const QModelIndex typeCell = model->index(1, LayerTableModel::Type);
        QWidget* editorWidget = editor->tableView()
                                    ->itemDelegateForColumn(LayerTableModel::Type)
                                    ->createEditor(editor->tableView()->viewport(), QStyleOptionViewItem(), typeCell);
        auto* combo = qobject_cast<QComboBox*>(editorWidget);
        QVERIFY(combo);
        QStringList comboKeys;
        for (int i = 0; i < combo->count(); ++i)
            comboKeys << combo->itemText(i);
        delete editorWidget;
        QCOMPARE(comboKeys, enumKeys<LayerKind>());

        QMenu* addMenu = nullptr;
        for (auto* button : editor->findChildren<QToolButton*>())
            if (button->text() == "Add layer")
                addMenu = button->menu();
        QVERIFY(addMenu);
        const QList<QAction*> actions = addMenu->actions();
        const auto kinds = enumEntries<LayerKind>();
        QCOMPARE(actions.size(), static_cast<qsizetype>(kinds.size()));
        for (std::size_t i = 0; i < kinds.size(); ++i) {
            QCOMPARE(actions[static_cast<qsizetype>(i)]->text(), fromView(kinds[i].displayName));
            QCOMPARE(actions[static_cast<qsizetype>(i)]->toolTip(), fromView(kinds[i].description));
        }
        // Adding a kind inserts a layer of that kind after the selected row.
        editor->tableView()->setCurrentIndex(model->index(0, LayerTableModel::Type));
        const std::size_t before = bench.document()->config().model.layers.size();
        actions.back()->trigger();
        QCOMPARE(bench.document()->config().model.layers.size(), before + 1);
        QCOMPARE(bench.document()->config().model.layers[1].type, kinds.back().value);

        // Every key sets the kind; anything else is refused with the legal keys.
        for (const EnumEntry<LayerKind>& kind : kinds) {
            QVERIFY(model->setData(model->index(2, LayerTableModel::Type), fromView(kind.key)));
            QCOMPARE(bench.document()->config().model.layers[2].type, kind.value);
            QCOMPARE(model->data(model->index(2, LayerTableModel::Type)).toString(), fromView(kind.key));
        }
        QSignalSpy rejected(model, &LayerTableModel::editRejected);
        QVERIFY(!model->setData(model->index(2, LayerTableModel::Type), "lstm"));
        QCOMPARE(rejected.size(), 1);
        QVERIFY(rejected.first().first().toString().contains(enumKeys<LayerKind>().join(", ")));
    }

    // The layer table's "Tensor cores" column and the batch-size note show the engine's
    // alignment verdict for the layers' dtypes: advice in 16-bit modes, none in fp32.
    void tensorCoreAdviceFollowsThePrecisionMode()
    {
        Workbench bench;
        bench.loadPreset("mlp"); // 784-1024-1024-10
        LayerTableModel* model = bench.modelEditor()->tableModel();
        RunConfig config = bench.document()->config();
        config.precision = PrecisionMode::MixedFp16;
        config.training.batchSize = 100;
        bench.document()->apply(config, "mixed-fp16, batch 100");
        const auto cell = [model](int row, int role) {
            return model->data(model->index(row, LayerTableModel::TensorCores), role).toString();
        };
        QCOMPARE(cell(0, Qt::DisplayRole), QString()); // flatten: no GEMM
        QCOMPARE(cell(1, Qt::DisplayRole), QStringLiteral("yes"));
        QCOMPARE(cell(3, Qt::DisplayRole), QStringLiteral("no"));
        QVERIFY2(cell(3, Qt::ToolTipRole).startsWith("out features = 10 is not a multiple of 8"),
                 qPrintable(cell(3, Qt::ToolTipRole)));
        const TensorCoreAdvice advice = tensorCoreAdvice(config);
        for (int row = 0; row < model->rowCount(); ++row) {
            const LayerAlignment& layer = advice.layers[static_cast<std::size_t>(row)];
            QCOMPARE(cell(row, Qt::DisplayRole), QString::fromStdString(layer.verdictText()));
            QCOMPARE(cell(row, Qt::ToolTipRole), QString::fromStdString(layer.reason()));
        }
        const QString note = bench.trainingPanel()->batchNote();
        QVERIFY2(note.startsWith("Batch size 100 is not a multiple of 8") && note.contains("96 or 104"),
                 qPrintable(note));

        config.precision = PrecisionMode::Fp32;
        bench.document()->apply(config, "fp32");
        QCOMPARE(cell(3, Qt::DisplayRole), QStringLiteral("fp32"));
        QVERIFY(bench.trainingPanel()->batchNote().isEmpty());
        // An fp16 override puts that one layer back on tensor cores, and the batch matters again.
        config.model.layers[3].precision = LayerPrecision::Fp16;
        bench.document()->apply(config, "fp16 head");
        QCOMPARE(cell(3, Qt::DisplayRole), QStringLiteral("no"));
        QCOMPARE(cell(1, Qt::DisplayRole), QStringLiteral("fp32"));
        QVERIFY(bench.trainingPanel()->batchNote().startsWith("Batch size 100"));
    }

    void anInvalidLayerDisablesRunWithTheValidatorsMessage()
    {
        Workbench bench;
        bench.loadPreset("mlp");
        QVERIFY(bench.runAction()->isEnabled());
        LayerTableModel* model = bench.modelEditor()->tableModel();
        QVERIFY(model->setData(model->index(3, LayerTableModel::Params), "units=7"));
        QVERIFY(!bench.runAction()->isEnabled());
        const QString reason = bench.document()->runBlocker();
        QVERIFY2(reason.contains("layer 3 (linear)") && reason.contains("10 classes"), qPrintable(reason));
        bench.document()->undoStack()->undo();
        QVERIFY(bench.runAction()->isEnabled());
    }

    // A language model reads windows of data.context bytes: the transformer presets run, and a
    // context that no longer matches model.input blocks Run with both numbers named.
    void textPresetsRunAndAContextMismatchBlocksWithBothSizes()
    {
        Workbench bench;
        for (const char* preset : {"char-gpt", "vit-tiny"}) {
            bench.loadPreset(preset);
            QVERIFY2(bench.document()->runBlocker().isEmpty(), qPrintable(bench.document()->runBlocker()));
            QVERIFY(bench.runAction()->isEnabled());
        }
        bench.loadPreset("char-gpt");
        RunConfig config = bench.document()->config();
        config.data.context = 64;
        bench.document()->apply(config, "shorter context");
        const QString reason = bench.document()->runBlocker();
        QVERIFY2(reason.contains("data.context = 64") && reason.contains("[64]"), qPrintable(reason));
        QVERIFY(!bench.runAction()->isEnabled());
    }

    void aShortRunFillsThePlotsAndKeepsTheUiResponsive()
    {
        Workbench bench;
        bench.resize(1400, 900);
        bench.show();
        bench.loadPreset("mlp");
        bench.document()->apply(quickConfig(bench.document()->config(), 40, 4096), "quick run");
        QSignalSpy ended(bench.controller(), &RunController::sequenceEnded);

        // The UI thread's CPU time per event while the run trains on another thread: records
        // arrive batched by the controller's timer and the plots redraw at most at its rate, so
        // no event costs the UI thread more than a small part of a frame's worth of work.
        auto* app = static_cast<EventCostApplication*>(QCoreApplication::instance());
        app->startMeasuring();
        QVERIFY(bench.startRun());
        QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1, 120000);
        app->stopMeasuring();
        QVERIFY(ended.first().first().toBool());
        QTRY_VERIFY(bench.monitor()->lossPlot()->graphCount() > 0);
        int points = 0;
        for (int i = 0; i < bench.monitor()->lossPlot()->graphCount(); ++i)
            points = std::max(points, bench.monitor()->lossPlot()->graph(i)->dataCount());
        QCOMPARE(points, 40);
        QVERIFY(app->events() > 0);
        qInfo("%lld events; the costliest took %.1f ms of the UI thread's CPU time (%s)",
              static_cast<long long>(app->events()), app->worstMs(), qPrintable(app->worstEvent()));
        QVERIFY2(app->worstMs() < kMaxUiMillisecondsPerEvent,
                 qPrintable(QString("the UI thread spent %1 ms of CPU time on one event (%2)")
                                .arg(app->worstMs(), 0, 'f', 1)
                                .arg(app->worstEvent())));
    }

    void pauseHoldsTheRunAndStopEndsIt()
    {
        Workbench bench;
        bench.loadPreset("mlp");
        bench.document()->apply(quickConfig(bench.document()->config(), 100000, 4096), "long run");
        QSignalSpy ended(bench.controller(), &RunController::sequenceEnded);
        QVERIFY(bench.startRun());
        QTRY_VERIFY(bench.pauseAction()->isEnabled());
        bench.pauseAction()->trigger();
        QVERIFY(bench.controller()->isPaused());
        QCOMPARE(bench.pauseAction()->text(), QString("Resume"));
        bench.stopAction()->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1, 30000);
        QVERIFY2(!ended.first().first().toBool(), "a stopped sequence does not complete");
        QVERIFY(bench.runAction()->isEnabled());
    }
};

int main(int argc, char** argv)
{
    // QTEST_MAIN's setup, with the application that measures each event's cost.
    EventCostApplication app(argc, argv);
    app.setAttribute(Qt::AA_Use96Dpi, true);
    WorkbenchTest test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}
#include "workbench_test.moc"
