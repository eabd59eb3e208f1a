// The Studies window: the shipped studies listed from studies/, a study not run in the open
// database shown with the command that runs it, one run into it shown with its report and
// its sweep opened in the Comparison tab from the window.
#include "storage/run_store.h"
#include "ui/studies_dialog.h"
#include "ui/sweep_comparison_view.h"
#include "ui/workbench.h"

#include <QDir>
#include <QFileInfo>
#include <QListWidget>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace mantissa;

class StudiesUiTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { qputenv("MANTISSA_STUDIES_DIR", MANTISSA_STUDIES_DIR); }

    void listsTheShippedStudiesNotRunYet()
    {
        QTemporaryDir dir;
        storage::RunStore store(dir.filePath(QStringLiteral("runs.sqlite")));
        ui::StudiesDialog dialog(&store);
        const int shipped =
            int(QDir(QStringLiteral(MANTISSA_STUDIES_DIR)).entryList({QStringLiteral("*.json")}, QDir::Files).size());
        QCOMPARE(dialog.studyCount(), shipped);
        QVERIFY(dialog.selectStudy(QStringLiteral("micikevicius-2018-loss-scaling")));
        QVERIFY2(dialog.reportText().contains(QStringLiteral("mantissa-cli study micikevicius-2018-loss-scaling")),
                 qPrintable(dialog.reportText()));
        QVERIFY(dialog.reportText().contains(QStringLiteral("**Result: no verdict yet: 32 of 32 planned runs")));
        QVERIFY(!dialog.findChild<QPushButton*>(QStringLiteral("showStudySweep"))->isEnabled());
        QVERIFY(!dialog.selectStudy(QStringLiteral("no-such-study")));
    }

    void aStudyRunIntoTheDatabaseOpensItsSweep()
    {
        // A tiny study of its own, run by the CLI into a database the workbench then opens.
        QTemporaryDir dir;
        const QString studies = dir.filePath(QStringLiteral("studies"));
        QVERIFY(QDir().mkpath(studies));
        QFile spec(QDir(studies).filePath(QStringLiteral("tiny.json")));
        QVERIFY(spec.open(QIODevice::WriteOnly));
        spec.write(R"({"name": "tiny", "claim": {"text": "bf16 trains as fp32", "citation": "A. Author"},
            "base": "mlp", "set": {"training.max_steps": 3, "data.limit_train": 256, "data.limit_test": 128},
            "arms": [{"name": "fp32", "set": {"precision.mode": "fp32"}},
                     {"name": "bf16", "set": {"precision.mode": "mixed-bf16"}}],
            "seeds": 2, "metrics": ["final_train_loss"], "margins": {"final_train_loss": 1.0},
            "expect": [{"arm": "bf16", "against": "fp32", "metric": "final_train_loss", "verdict": "equivalent"}]})");
        spec.close();
        const QString db = dir.filePath(QStringLiteral("runs.sqlite"));
        QProcess cli;
        cli.start(QStringLiteral(MANTISSA_CLI), {QStringLiteral("study"), spec.fileName(), QStringLiteral("--db"), db});
        QVERIFY(cli.waitForFinished(120000));
        QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());

        qputenv("MANTISSA_STUDIES_DIR", studies.toUtf8());
        ui::Workbench workbench;
        QVERIFY(workbench.setDatabasePath(db));
        ui::StudiesDialog* dialog = workbench.openStudies(QStringLiteral("tiny"));
        QCOMPARE(dialog->studyCount(), 1);
        QVERIFY2(dialog->reportText().contains(QStringLiteral("| bf16 | 2 of 2 |")), qPrintable(dialog->reportText()));
        auto* show = dialog->findChild<QPushButton*>(QStringLiteral("showStudySweep"));
        QVERIFY(show->isEnabled());
        show->click();
        QCOMPARE(workbench.sweepComparison()->comparison().configurationCount(), 2);
        dialog->close();
        qputenv("MANTISSA_STUDIES_DIR", MANTISSA_STUDIES_DIR);
    }
};

QTEST_MAIN(StudiesUiTest)
#include "studies_ui_test.moc"
