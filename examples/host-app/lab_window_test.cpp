// The lab, built against an installed Mantissa, drives the workbench through its public API
// offscreen: a short run of the lab's own preset whose signals reach the lab and whose row
// lands in the lab's database; pause and stop; a report; and the refusals a host can meet
// (an unusable database path, a broken preset) arriving as messages, not crashes.
#include "lab_window.h"
#include "storage/run_store.h"
#include "ui/workbench_widget.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QListWidget>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using mantissa::RunStatus;
using mantissa::WorkbenchRun;
using mantissa::WorkbenchRunResult;
using mantissa::WorkbenchWidget;

namespace {

constexpr int kRunTimeoutMs = 180000; // two busy cores, a debug build

bool journalMentions(const LabWindow& lab, const QString& text)
{
    for (int i = 0; i < lab.journal()->count(); ++i) {
        if (lab.journal()->item(i)->text().contains(text))
            return true;
    }
    return false;
}

} // namespace

class LabWindowTest : public QObject {
    Q_OBJECT

private slots:
    void theLabsPresetTrainsIntoTheLabsDatabase()
    {
        QTemporaryDir dir;
        const QString database = dir.filePath("lab.sqlite");
        LabWindow lab(database);
        WorkbenchWidget* bench = lab.workbench();
        QVERIFY2(lab.databaseError().isEmpty(), qPrintable(lab.databaseError()));
        QCOMPARE(bench->databasePath(), database);
        QVERIFY(bench->presetNames().contains("mlp"));
        QCOMPARE(bench->presetNames().last(), QString(LabWindow::kPreset));
        QVERIFY(bench->configJson().contains("quick-mlp"));

        QSignalSpy started(bench, &WorkbenchWidget::runStarted);
        QSignalSpy steps(bench, &WorkbenchWidget::stepsRecorded);
        QSignalSpy overflows(bench, &WorkbenchWidget::overflowed);
        QSignalSpy finished(bench, &WorkbenchWidget::runFinished);
        QSignalSpy failed(bench, &WorkbenchWidget::runFailed);
        QString error;
        QVERIFY2(bench->startRun(&error), qPrintable(error));
        QVERIFY(bench->isRunning());
        QVERIFY(!bench->startRun(&error)); // one at a time, and it says so
        QVERIFY(error.contains("in progress"));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count() + failed.count(), 1, kRunTimeoutMs);
        QCOMPARE(failed.count(), 0);

        QCOMPARE(started.count(), 1);
        const auto run = started.first().first().value<WorkbenchRun>();
        QVERIFY(run.runId > 0);
        QCOMPARE(run.precision, QString("mixed-fp16"));
        QVERIFY(!steps.isEmpty());
        QCOMPARE(steps.last().at(0).toLongLong(), run.runId);
        QCOMPARE(steps.last().at(1).toLongLong(), 40); // the preset's max_steps
        QCOMPARE(steps.last().at(2).toLongLong(), 40);
        // 2^24 overflows fp16 gradients: the scaler backs off until they fit.
        QVERIFY(!overflows.isEmpty());
        QCOMPARE(overflows.first().at(1).toLongLong(), 1);
        QVERIFY(overflows.first().at(3).toDouble() < overflows.first().at(2).toDouble());
        QVERIFY(!overflows.first().at(4).toString().isEmpty());

        const auto result = finished.first().first().value<WorkbenchRunResult>();
        QCOMPARE(result.run.runId, run.runId);
        QCOMPARE(result.status, RunStatus::Finished);
        QCOMPARE(result.steps, 40);
        QCOMPARE(result.skippedSteps, overflows.count());
        QCOMPARE(result.epochs, 1);
        QVERIFY(result.testAccuracy > 0.5); // synthetic classes separate within an epoch
        QTRY_VERIFY(!bench->isRunning());

        // The run is in the lab's database: through the workbench, and read independently
        // with Mantissa::storage.
        const QList<mantissa::StoredRunInfo> stored = bench->storedRuns(&error);
        QCOMPARE(stored.size(), 1);
        QCOMPARE(stored.first().runId, run.runId);
        QCOMPARE(stored.first().status, RunStatus::Finished);
        QCOMPARE(stored.first().precision, QString("mixed-fp16"));
        {
            mantissa::storage::RunStore store(database);
            const mantissa::storage::RunInfo info = store.run(run.runId);
            QCOMPARE(info.name, result.run.name);
            QCOMPARE(info.status, RunStatus::Finished);
            QCOMPARE(info.summary.steps.value_or(0), 40);
        }
        QVERIFY(journalMentions(lab, result.run.name + " finished"));
        QVERIFY(journalMentions(lab, "overflowed"));

        // Open it again, and a report of it.
        QVERIFY2(bench->openStoredRun(run.runId, &error), qPrintable(error));
        QVERIFY(!bench->openStoredRun(run.runId + 100, &error));
        QVERIFY2(error.contains(QString::number(run.runId + 100)), qPrintable(error));
        QSignalSpy exported(bench, &WorkbenchWidget::reportExported);
        QSignalSpy reportFailed(bench, &WorkbenchWidget::reportFailed);
        const QString report = dir.filePath("lab-report.md");
        QVERIFY2(bench->exportReport({run.runId}, report, &error), qPrintable(error));
        QTRY_COMPARE_WITH_TIMEOUT(exported.count() + reportFailed.count(), 1, 60000);
        QCOMPARE(exported.count(), 1);
        QVERIFY(QFileInfo(report).size() > 0);
        QVERIFY(!bench->exportReport({run.runId}, dir.filePath("lab-report.docx"), &error));
        QVERIFY2(error.contains("docx"), qPrintable(error));
    }

    void pauseAndStopReachTheRun()
    {
        QTemporaryDir dir;
        LabWindow lab(dir.filePath("lab.sqlite"));
        WorkbenchWidget* bench = lab.workbench();
        QJsonObject config = QJsonDocument::fromJson(bench->configJson().toUtf8()).object();
        QJsonObject training = config["training"].toObject();
        training["epochs"] = 100;
        training["max_steps"] = 0;
        config["training"] = training;
        QString error;
        QVERIFY2(bench->setConfigJson(QString::fromUtf8(QJsonDocument(config).toJson()), &error), qPrintable(error));

        QSignalSpy steps(bench, &WorkbenchWidget::stepsRecorded);
        QSignalSpy finished(bench, &WorkbenchWidget::runFinished);
        QVERIFY(!bench->setPaused(true)); // nothing to pause yet
        QVERIFY2(bench->startRun(&error), qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(!steps.isEmpty(), kRunTimeoutMs);
        QVERIFY(bench->setPaused(true));
        QVERIFY(bench->isPaused());
        QVERIFY(bench->setPaused(false));
        QVERIFY(!bench->isPaused());
        bench->stopRun();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
        QCOMPARE(finished.first().first().value<WorkbenchRunResult>().status, RunStatus::Stopped);
        QTRY_VERIFY(!bench->isRunning());
    }

    void anUnusableDatabaseIsReportedNotACrash_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("problem");
        QTest::newRow("missing directory") << "no/such/dir/lab.sqlite"
                                           << "does not exist";
        QTest::newRow("a directory") << "."
                                     << "is a directory";
        QTest::newRow("not a database") << "notes.txt"
                                        << "is not an SQLite database";
    }

    void anUnusableDatabaseIsReportedNotACrash()
    {
        QFETCH(QString, name);
        QFETCH(QString, problem);
        QTemporaryDir dir;
        QFile notes(dir.filePath("notes.txt"));
        QVERIFY(notes.open(QIODevice::WriteOnly));
        notes.write("the lab's notes, not a database\n");
        notes.close();
        const QString path = QDir::cleanPath(dir.filePath(name));

        LabWindow lab(path);
        QVERIFY2(lab.databaseError().contains(problem), qPrintable(lab.databaseError()));
        QVERIFY2(lab.databaseError().contains(path), qPrintable(lab.databaseError()));
        QVERIFY(journalMentions(lab, "Runs are not recorded"));

        WorkbenchWidget* bench = lab.workbench();
        QCOMPARE(bench->databasePath(), QString());
        QSignalSpy reported(bench, &WorkbenchWidget::errorReported);
        QString error;
        QVERIFY(!bench->setDatabasePath(path, &error));
        QCOMPARE(error, lab.databaseError());
        QCOMPARE(reported.count(), 1);
        QVERIFY(reported.first().at(1).toString().contains(problem));
        QVERIFY(bench->storedRuns(&error).isEmpty());
        QVERIFY(error.contains("setDatabasePath"));
        QVERIFY(!bench->exportReport({1}, dir.filePath("r.md"), &error));
        if (notes.exists())
            QCOMPARE(QFileInfo(notes).size(), qint64(32)); // left untouched
    }

    void aBrokenPresetIsRefusedWithItsReason()
    {
        WorkbenchWidget bench;
        QString error;
        QVERIFY(!bench.addPreset("lab-broken", R"({"training": {"batch_size": "many"}})", &error));
        QVERIFY2(error.contains("lab-broken") && error.contains("model is missing"), qPrintable(error));
        QVERIFY(!bench.addPreset("mlp", "{}", &error));
        QVERIFY2(error.contains("built-in"), qPrintable(error));
        QVERIFY(!bench.presetNames().contains("lab-broken"));
        QVERIFY(!bench.loadPreset("no-such-preset", &error));
        QVERIFY2(error.contains("no-such-preset"), qPrintable(error));
    }
};

QTEST_MAIN(LabWindowTest)
#include "lab_window_test.moc"
