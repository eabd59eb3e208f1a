// File > Import model… in the workbench, offscreen: the MLP fixture becomes the run's model (one
// undo step), the Model tab lists its nodes in order with shapes, parameters, FLOPs and the
// precision each runs in under the current mode, the run trains it, and a file that is not a
// model, or holds a node Mantissa cannot train, is refused with the reason and leaves the config
// as it was.
#include "engine/onnx/onnx_model.h"
#include "quick_config.h"
#include "storage/run_store.h"
#include "ui/config_document.h"
#include "ui/fork_dialog.h"
#include "ui/model_editor.h"
#include "ui/model_file_view.h"
#include "ui/run_controller.h"
#include "ui/workbench.h"

#include <QApplication>
#include <QComboBox>
#include <QFile>
#include <QLineEdit>
#include <QSignalSpy>
#include <QStackedWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

using namespace mantissa;
using namespace mantissa::ui;

namespace {

const QString kModels = QStringLiteral(MANTISSA_ONNX_MODELS);

QString cellText(const QTableWidget* table, int row, int column) { return table->item(row, column)->text(); }

int rowOf(const QTableWidget* table, const QString& node)
{
    for (int row = 0; row < table->rowCount(); ++row)
        if (cellText(table, row, ModelFileView::Node) == node)
            return row;
    return -1;
}

} // namespace

class ModelImportTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { onnx_import::installOnnxModelSupport(); }

    void importListsTheNodesAndTrains()
    {
        Workbench bench;
        bench.loadPreset("mlp");
        bench.document()->apply(test::quickConfig(bench.document()->config(), 20), "quick run");
        QString error;
        QVERIFY2(bench.importModel(kModels + "/torch/mlp.onnx", &error), qPrintable(error));
        const RunConfig& config = bench.document()->config();
        QVERIFY(config.model.onnx.ends_with("/torch/mlp.onnx"));
        QCOMPARE(config.model.input, (std::vector<std::int64_t>{3, 8, 8}));
        QCOMPARE(config.model.classes, std::int64_t(10));
        QCOMPARE(config.name, std::string("mlp"));
        QCOMPARE(config.data.syntheticShape, config.model.input); // the synthetic data follows the model
        auto* stack = qobject_cast<QStackedWidget*>(bench.modelFileView()->parentWidget());
        QVERIFY(stack);
        QCOMPARE(stack->currentWidget(), bench.modelFileView());

        // Six nodes, in the order they run, as `inspect` lists them.
        const QTableWidget* table = bench.modelFileView()->table();
        QCOMPARE(table->rowCount(), 6);
        QCOMPARE(cellText(table, 0, ModelFileView::Op), QStringLiteral("Flatten"));
        QCOMPARE(cellText(table, 0, ModelFileView::OutputShape), QStringLiteral("192"));
        const int fc1 = rowOf(table, "/fc1/Gemm");
        QCOMPARE(fc1, 1);
        QCOMPARE(cellText(table, fc1, ModelFileView::Op), QStringLiteral("Gemm"));
        QCOMPARE(cellText(table, fc1, ModelFileView::OutputShape), QStringLiteral("64"));
        QCOMPARE(cellText(table, fc1, ModelFileView::Parameters), QStringLiteral("12352")); // 192 x 64 + 64
        QCOMPARE(cellText(table, fc1, ModelFileView::Flops), QStringLiteral("24.576 k"));   // 2 x 192 x 64
        for (int row = 0; row < table->rowCount(); ++row) {
            QCOMPARE(cellText(table, row, ModelFileView::Trains), QStringLiteral("yes"));
            QCOMPARE(cellText(table, row, ModelFileView::Precision), QStringLiteral("fp32"));
        }
        QVERIFY2(bench.modelFileView()->summaryText().contains("14762 parameters"),
                 qPrintable(bench.modelFileView()->summaryText()));
        QVERIFY(bench.modelFileView()->problemText().isEmpty());

        // The precision column follows the mode: MXFP4 quantises the middle GEMM and keeps the
        // first and last in bf16.
        RunConfig mx = config;
        mx.precision = PrecisionMode::Mxfp4;
        bench.document()->apply(mx, "mxfp4");
        QCOMPARE(cellText(table, rowOf(table, "/fc2/Gemm"), ModelFileView::Precision), QStringLiteral("mxfp4 GEMM"));
        QVERIFY2(cellText(table, fc1, ModelFileView::Precision).startsWith("bf16, keep_first_last"),
                 qPrintable(cellText(table, fc1, ModelFileView::Precision)));
        QCOMPARE(cellText(table, rowOf(table, "/Relu"), ModelFileView::Precision), QStringLiteral("bf16"));

        // It trains as any config does.
        QVERIFY2(bench.document()->runBlocker().isEmpty(), qPrintable(bench.document()->runBlocker()));
        QSignalSpy finished(&bench, &Workbench::runFinished);
        QVERIFY(bench.startRun());
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 120000);
        QCOMPARE(bench.sessionRuns().size(), 1);
        const std::shared_ptr<const RunRecording> recording = bench.sessionRuns().first();
        QVERIFY(recording->summary);
        QCOMPARE(recording->summary->status, RunStatus::Finished);
        QCOMPARE(recording->summary->steps, std::int64_t(20));

        // Undo twice: the preset's layer list and its editor again.
        bench.document()->undoStack()->undo();
        bench.document()->undoStack()->undo();
        QVERIFY(bench.document()->config().model.onnx.empty());
        QCOMPARE(stack->currentWidget(), bench.modelEditor());
    }

    // A recorded run of an imported model whose file has since gone: opening it shows its config
    // with the database's copy of the model (the Model tab lists the nodes again), and a fork from
    // its curve, to fp32, continues it from that copy with the shadow error track, now exact.
    void aStoredImportedRunOpensAndForksFromTheStoredCopy()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString model = dir.filePath("mlp.onnx");
        QVERIFY(QFile::copy(kModels + "/torch/mlp.onnx", model));
        Workbench bench;
        QVERIFY(bench.setDatabasePath(dir.filePath("runs.sqlite")));
        bench.loadPreset("mlp");
        QString error;
        QVERIFY2(bench.importModel(model, &error), qPrintable(error));
        RunConfig config = test::quickConfig(bench.document()->config(), 24);
        config.precision = PrecisionMode::MixedBf16;
        config.training.saveStateEvery = 8;
        config.numerics.shadowEvery = 4;
        bench.document()->apply(config, "quick shadowed run");
        QSignalSpy ended(bench.controller(), &RunController::sequenceEnded);
        QVERIFY(bench.startRun());
        QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1, 120000);
        const storage::RunInfo parent = bench.store()->listRuns().first();
        QCOMPARE(bench.store()->shadowRecords(parent.id).size(), std::size_t(6));
        QVERIFY(QFile::remove(model));

        bench.loadPreset("mlp");
        QVERIFY(bench.openStoredRun(parent.id));
        const QString copy = bench.store()->modelFilePath(parent);
        QCOMPARE(QString::fromStdString(bench.document()->config().model.onnx), copy);
        QCOMPARE(bench.document()->config().precision, PrecisionMode::MixedBf16);
        auto* stack = qobject_cast<QStackedWidget*>(bench.modelFileView()->parentWidget());
        QCOMPARE(stack->currentWidget(), bench.modelFileView());
        QCOMPARE(bench.modelFileView()->table()->rowCount(), 6);

        QTimer::singleShot(0, this, [] {
            auto* dialog = qobject_cast<ForkDialog*>(QApplication::activeModalWidget());
            QVERIFY(dialog);
            QVERIFY2(dialog->problem().isEmpty(), qPrintable(dialog->problem()));
            dialog->precisionBox()->setCurrentIndex(dialog->precisionBox()->findData("fp32"));
            dialog->nameEdit()->setText("fp32-from-16");
            dialog->accept();
        });
        QVERIFY(bench.forkStoredRun(parent.id, 16));
        QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 2, 120000);
        const storage::RunInfo fork = bench.store()->findRun("fp32-from-16");
        QCOMPARE(fork.status, RunStatus::Finished);
        QCOMPARE(fork.parent->runId, std::optional<qint64>(parent.id));
        QCOMPARE(fork.parent->step, qint64(16));
        const std::vector<ShadowRecord> track = bench.store()->shadowRecords(fork.id);
        QCOMPARE(track.size(), std::size_t(2)); // steps 20 and 24
        QCOMPARE(track.front().step, std::int64_t(20));
        for (const ShadowRecord& record : track)
            for (const ShadowError& e : record.errors)
                QCOMPARE(e.energies.error, 0.0);
    }

    void badFilesAreRefusedWithTheReason_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("reason");
        QTest::newRow("not ONNX") << "small/not_onnx.onnx"
                                  << "not an ONNX model";
        QTest::newRow("NaN weights") << "small/nan.onnx"
                                     << "holds NaN";
        QTest::newRow("unsupported node") << "small/unsupported.onnx"
                                          << "node 'selu_node': Selu";
        QTest::newRow("missing") << "small/absent.onnx"
                                 << "absent.onnx";
    }
    void badFilesAreRefusedWithTheReason()
    {
        QFETCH(QString, file);
        QFETCH(QString, reason);
        Workbench bench;
        bench.loadPreset("cnn");
        const std::string before = runConfigToJson(bench.document()->config());
        QString error;
        QVERIFY(!bench.importModel(kModels + "/" + file, &error));
        QVERIFY2(error.contains(reason), qPrintable(error));
        QCOMPARE(runConfigToJson(bench.document()->config()), before);
        QCOMPARE(qobject_cast<QStackedWidget*>(bench.modelEditor()->parentWidget())->currentWidget(),
                 bench.modelEditor());
    }
};

QTEST_MAIN(ModelImportTest)
#include "model_import_test.moc"
