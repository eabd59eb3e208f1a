// The public WorkbenchWidget over stored runs and a host's settings: compareStoredRuns opens the
// Comparison tab with the runs given, in their order, or says why it cannot; saveSettings and
// restoreSettings carry the config being edited and the layout through a QSettings of the
// host's (an INI file in a temporary directory here, never the user's settings).
#include "engine/config/presets.h"
#include "storage/run_store.h"
#include "storage/run_writer.h"
#include "ui/comparison_table_model.h"
#include "ui/comparison_view.h"
#include "ui/precision_set_menu.h"
#include "ui/workbench.h"
#include "ui/workbench_widget.h"

#include <QAction>
#include <QSettings>
#include <QSplitter>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace mantissa;

namespace {

// A finished run of `steps` steps written straight to the database; its training time, the
// last step's clock, is `trainSeconds`.
qint64 writeStoredRun(const QString& path, const QString& name, PrecisionMode precision, double trainSeconds)
{
    storage::RunStore store(path);
    RunConfig config = presetConfig("mlp");
    config.name = name.toStdString();
    config.precision = precision;
    storage::NewRun run;
    run.name = name;
    run.configJson = QString::fromStdString(runConfigToJson(config));
    run.preset = "mlp";
    run.precision = QString::fromStdString(precisionModeName(precision));
    const qint64 id = store.createRun(run);
    storage::RunWriter writer(path, id);
    constexpr int kSteps = 10;
    for (int n = 1; n <= kSteps; ++n) {
        StepRecord step;
        step.step = n;
        step.epoch = 1;
        step.loss = 2.0f / float(n);
        step.elapsedSeconds = trainSeconds * n / kSteps;
        writer.onStep(step);
    }
    RunSummary summary;
    summary.status = RunStatus::Finished;
    summary.steps = kSteps;
    summary.trainSeconds = trainSeconds;
    if (!writer.finish(summary))
        return 0;
    return id;
}

ui::Workbench* benchOf(WorkbenchWidget& widget) { return widget.findChild<ui::Workbench*>(); }

QTabWidget* tabs(WorkbenchWidget& widget, const char* name) { return widget.findChild<QTabWidget*>(name); }

} // namespace

class WorkbenchWidgetTest : public QObject {
    Q_OBJECT

private slots:
    void compareStoredRunsShowsTheGivenRunsInTheirOrder()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath("runs.sqlite");
        const qint64 slow = writeStoredRun(path, "mlp-slow", PrecisionMode::Fp32, 10.0);
        const qint64 fast = writeStoredRun(path, "mlp-fast", PrecisionMode::Fp32, 4.0);
        QVERIFY(slow > 0 && fast > 0);

        WorkbenchWidget widget;
        ui::Workbench* bench = benchOf(widget);
        QVERIFY(bench);
        QString error;
        // Without a database, and with fewer than two runs, it says why.
        QVERIFY(!widget.compareStoredRuns({slow, fast}, &error));
        QCOMPARE(error, QString("No run database is set (setDatabasePath)"));
        QVERIFY(widget.setDatabasePath(path, &error));
        QVERIFY(!widget.compareStoredRuns({slow}, &error));
        QCOMPARE(error, QString("A comparison needs two runs or more"));
        // An unknown run: the store's words, as the banner showed them.
        QVERIFY(!widget.compareStoredRuns({slow, 999}, &error));
        QVERIFY2(error.startsWith("Cannot compare these runs: ") && error.contains("999"), qPrintable(error));

        // The first run given is the baseline: the other trained 10 s / 4 s = 2.5 times as fast.
        QVERIFY2(widget.compareStoredRuns({slow, fast}, &error), qPrintable(error));
        QVERIFY(tabs(widget, "rightTabs")->currentWidget()->isAncestorOf(bench->comparison()));
        ui::ComparisonTableModel* results = bench->comparison()->resultsModel();
        QCOMPARE(results->rowCount(), 2);
        const auto cell = [&](int row, int column) { return results->data(results->index(row, column)).toString(); };
        QCOMPARE(cell(0, ui::ComparisonTableModel::Run), QString("mlp-slow"));
        QCOMPARE(cell(1, ui::ComparisonTableModel::Run), QString("mlp-fast"));
        QCOMPARE(cell(0, ui::ComparisonTableModel::Speedup), QString::fromUtf8("1.00x"));
        QCOMPARE(cell(1, ui::ComparisonTableModel::Speedup), QString::fromUtf8("2.50x"));
        // The other order: the other baseline.
        QVERIFY(widget.compareStoredRuns({fast, slow}, &error));
        QCOMPARE(cell(0, ui::ComparisonTableModel::Run), QString("mlp-fast"));
        QCOMPARE(cell(1, ui::ComparisonTableModel::Speedup), QString::fromUtf8("0.40x"));
    }

    void settingsCarryTheConfigAndTheLayoutToANewWidget()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString file = dir.filePath("host.ini");
        QString edited;
        QByteArray splitterState;
        QList<int> splitterSizes;
        QStringList compared;
        {
            WorkbenchWidget widget;
            widget.resize(1400, 900);
            widget.show();
            QVERIFY(widget.loadPreset("cnn"));
            QString json = widget.configJson();
            RunConfig config = parseRunConfig(json.toStdString(), "test");
            config.training.epochs = 7;
            config.training.seed = 1234;
            QVERIFY(widget.setConfigJson(QString::fromStdString(runConfigToJson(config))));
            edited = widget.configJson();
            auto* splitter = widget.findChild<QSplitter*>("workbenchSplitter");
            QVERIFY(splitter);
            splitter->setSizes({500, 900});
            splitterSizes = splitter->sizes();
            tabs(widget, "leftTabs")->setCurrentIndex(tabs(widget, "leftTabs")->count() - 1);
            tabs(widget, "rightTabs")->setCurrentIndex(tabs(widget, "rightTabs")->count() - 1);
            benchOf(widget)->comparisonPrecisions()->setCheckedKeys({"fp32", "mixed-bf16", "mxfp8"});
            compared = benchOf(widget)->comparisonPrecisions()->checkedKeys();
            QCOMPARE(compared.size(), 3);
            QSettings settings(file, QSettings::IniFormat);
            settings.beginGroup("workbench");
            widget.saveSettings(settings);
            settings.endGroup();
            settings.sync();
            QCOMPARE(settings.status(), QSettings::NoError);
        }
        QSettings settings(file, QSettings::IniFormat);
        settings.beginGroup("workbench");
        QCOMPARE(settings.childKeys(), (QStringList{"config", "layout"}));

        WorkbenchWidget restored;
        restored.resize(1400, 900);
        restored.show();
        restored.restoreSettings(settings);
        QCOMPARE(restored.configJson(), edited);
        QVERIFY(restored.configJson().contains("\"seed\": 1234"));
        // Restoring is not an edit the user can undo.
        QVERIFY(!restored.action(WorkbenchWidget::Action::Undo)->isEnabled());
        QCOMPARE(tabs(restored, "leftTabs")->currentIndex(), tabs(restored, "leftTabs")->count() - 1);
        QCOMPARE(tabs(restored, "rightTabs")->currentIndex(), tabs(restored, "rightTabs")->count() - 1);
        QCOMPARE(restored.findChild<QSplitter*>("workbenchSplitter")->sizes(), splitterSizes);
        QCOMPARE(benchOf(restored)->comparisonPrecisions()->checkedKeys(), compared);

        // A config that no longer parses is skipped; the layout still comes back.
        settings.setValue("config", "{\"model\": 3}");
        WorkbenchWidget fallback;
        const QString before = fallback.configJson();
        fallback.restoreSettings(settings);
        QCOMPARE(fallback.configJson(), before);
        QCOMPARE(tabs(fallback, "rightTabs")->currentIndex(), tabs(fallback, "rightTabs")->count() - 1);
    }
};

QTEST_MAIN(WorkbenchWidgetTest)
#include "workbench_widget_test.moc"
