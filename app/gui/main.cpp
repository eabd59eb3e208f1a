// mantissa: the GUI. Thin on purpose: the window is the Workbench widget from Mantissa::ui.
#include "engine/backend/cpu/openmp_wait_policy.h"
#include "engine/onnx/onnx_model.h"
#include "engine/util/build_identity.h"
#include "engine/util/enum_table.h"
#include "gui/main_window.h"
#include "gui/screenshot_session.h"
#include "ui/workbench.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>

#include <cstdio>

int main(int argc, char** argv)
{
    // The GUI thread shares the cores with training and must keep up with the live plots.
    mantissa::cpu::adoptOpenMpWaitPolicy(argv, mantissa::cpu::WaitPolicyChoice::Passive);
    mantissa::onnx_import::installOnnxModelSupport(); // File > Import model…, runs of model.onnx
    QApplication app(argc, argv);
    QApplication::setOrganizationName("Mantissa");
    QApplication::setApplicationName("mantissa");
    QApplication::setApplicationVersion(QString::fromStdString(mantissa::buildIdentity()));
    // Lets Wayland compositors and docks match the window to its desktop entry and icon.
    QGuiApplication::setDesktopFileName(QStringLiteral("io.mantissa.Mantissa"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/io.mantissa.Mantissa.png")));

    QCommandLineParser parser;
    parser.setApplicationDescription("Mixed-precision training workbench.");
    parser.addHelpOption();
    parser.addVersionOption();
    QCommandLineOption config("config", "Open this run config JSON.", "FILE");
    QCommandLineOption database("db", "Record runs in this SQLite file (default: $MANTISSA_DB or the per-user one).",
                                "FILE");
    QCommandLineOption screenshot("screenshot", "Train a short run and a comparison, save grabs to DIR, quit.", "DIR");
    QCommandLineOption preset("preset", "Preset for --screenshot (default mlp).", "NAME", "mlp");
    QCommandLineOption steps("steps", "Steps per run for --screenshot (default 120).", "N", "120");
    QCommandLineOption numerics("numerics", "With --screenshot: only the Numerics tab of the preset in mixed-fp16.");
    QCommandLineOption precision("precision",
                                 "With --screenshot --numerics: this precision mode instead (mxfp4, nvfp4, ...), "
                                 "grabbed as numerics-MODE.png.",
                                 "MODE");
    QCommandLineOption compare("compare",
                               "With --screenshot: only Compare precisions over these modes (comma-separated, "
                               "e.g. fp32,bf16,fp8-hybrid,mxfp4,nvfp4), grabbed as comparison-recipes.png.",
                               "MODES");
    QCommandLineOption run("run", "Open this run of the run database (with --numerics: on its Numerics tab).", "ID");
    QCommandLineOption sweep("sweep", "Show this sweep of the run database in the Comparison tab.", "ID");
    QCommandLineOption study("study", "Open the Studies window on this study (studies/NAME.json).", "NAME");
    QCommandLineOption runs("runs", "Show these runs of the run database side by side in the Comparison tab.",
                            "ID,ID...");
    QCommandLineOption model("model",
                             "Import this ONNX model (File > Import model…). With --screenshot: train it on synthetic "
                             "data in mxfp8 (or --precision MODE) and grab onnx-import.png.",
                             "FILE.onnx");
    parser.addOptions(
        {config, database, screenshot, preset, steps, numerics, precision, compare, run, sweep, study, runs, model});
    parser.process(app);

    mantissa::gui::MainWindow window;
    if (parser.isSet(screenshot)) {
        mantissa::gui::ScreenshotOptions options;
        options.directory = parser.value(screenshot);
        options.preset = parser.value(preset);
        options.steps = std::max(10, parser.value(steps).toInt());
        options.numericsOnly = parser.isSet(numerics);
        options.importModel = parser.value(model);
        if (parser.isSet(precision)) {
            const auto mode = mantissa::parseEnum<mantissa::PrecisionMode>(parser.value(precision).toStdString());
            if (!mode || (!options.numericsOnly && options.importModel.isEmpty())) {
                std::fprintf(stderr,
                             "mantissa: --precision needs --screenshot with --numerics or --model, and one of %s\n",
                             mantissa::enumKeyList<mantissa::PrecisionMode>().c_str());
                return 2;
            }
            options.numericsPrecision = mode;
            options.importPrecision = *mode;
        }
        for (const QString& key : parser.value(compare).split(',', Qt::SkipEmptyParts)) {
            if (!mantissa::parseEnum<mantissa::PrecisionMode>(key.trimmed().toStdString())) {
                std::fprintf(stderr, "mantissa: --compare: %s is not a precision mode (one of %s)\n", qPrintable(key),
                             mantissa::enumKeyList<mantissa::PrecisionMode>().c_str());
                return 2;
            }
            options.compareModes << key.trimmed();
        }
        // Screenshots record into their own database unless told otherwise, so the run
        // browser shows exactly the runs they made.
        options.database = parser.value(database);
        window.resize(1600, 1000);
        window.show();
        auto* session = new mantissa::gui::ScreenshotSession(&window, options);
        session->start();
        return QApplication::exec();
    }
    window.restoreSettings();
    window.openDatabase(parser.value(database));
    if (parser.isSet(config)) {
        QString error;
        if (!window.workbench()->openConfig(parser.value(config), &error))
            qWarning("%s", qPrintable(error));
    }
    if (parser.isSet(model)) {
        QString error;
        if (!window.workbench()->importModel(parser.value(model), &error))
            qWarning("%s", qPrintable(error));
    }
    if (parser.isSet(sweep))
        window.workbench()->showSweep(parser.value(sweep).toLongLong());
    if (parser.isSet(study))
        window.workbench()->openStudies(parser.value(study));
    if (parser.isSet(runs)) {
        QList<qint64> ids;
        for (const QString& id : parser.value(runs).split(',', Qt::SkipEmptyParts))
            ids << id.trimmed().toLongLong();
        window.workbench()->compareStoredRuns(ids); // a bad id is said in the banner
    }
    if (parser.isSet(run)) {
        const qint64 id = parser.value(run).toLongLong();
        if (parser.isSet(numerics))
            window.workbench()->openStoredRunNumerics(id);
        else
            window.workbench()->openStoredRun(id);
    }
    window.show();
    return QApplication::exec();
}
