// mantissa-lab: an example host of the Mantissa workbench (docs/embedding.md).
//   mantissa-lab [--db FILE] [--screenshot FILE]
#include "lab_window.h"
#include "ui/workbench_widget.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    // The lab's own settings scope and data directory, not Mantissa's.
    QApplication::setOrganizationName("ExampleLab");
    QApplication::setApplicationName("mantissa-lab");

    QCommandLineParser parser;
    parser.setApplicationDescription("An example application embedding the Mantissa workbench.");
    parser.addHelpOption();
    QCommandLineOption database("db", "Record runs in this SQLite file (default: the lab's experiments.sqlite).",
                                "FILE");
    QCommandLineOption screenshot("screenshot", "Train the lab's preset, save a grab of the window to FILE, quit.",
                                  "FILE");
    parser.addOptions({database, screenshot});
    parser.process(app);

    const QString path = parser.isSet(database) ? parser.value(database) : LabWindow::defaultDatabasePath();
    LabWindow window(path);
    if (!parser.isSet(screenshot)) {
        window.restoreSettings();
        window.show();
        return QApplication::exec();
    }
    window.resize(1600, 1000);
    window.show();
    const QString file = parser.value(screenshot);
    QObject::connect(window.workbench(), &mantissa::WorkbenchWidget::runsFinished, &window, [&window, file] {
        // Let the plots take the last steps (they redraw on a timer) before grabbing.
        QTimer::singleShot(500, &window, [&window, file] {
            const bool saved = window.grab().save(file);
            QApplication::exit(saved ? 0 : 1);
        });
    });
    QString error;
    if (!window.workbench()->startRun(&error)) {
        qWarning("%s", qPrintable(error));
        return 1;
    }
    return QApplication::exec();
}
