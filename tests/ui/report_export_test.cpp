// "Export report..." from the run browser: a recorded GUI run becomes a report file while
// the UI keeps running (the runs are read on a worker thread).
#include "ui/config_document.h"
#include "ui/report_export.h"
#include "ui/run_browser.h"
#include "ui/run_controller.h"
#include "ui/workbench.h"

#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace mantissa;
using namespace mantissa::ui;

class ReportExportTest : public QObject {
    Q_OBJECT

private slots:
    void aRecordedRunExportsAsASelfContainedHtmlReport()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        Workbench bench;
        QVERIFY(bench.setDatabasePath(dir.filePath("runs.sqlite")));
        bench.loadPreset("softmax");
        RunConfig c = bench.document()->config();
        c.data.dataset = DatasetKind::Synthetic;
        c.data.syntheticTrain = 1024;
        c.data.syntheticTest = 256;
        c.training.maxSteps = 12;
        c.training.threads = 1;
        c.precision = PrecisionMode::MixedFp16;
        bench.document()->apply(c, "quick run");
        QSignalSpy ended(bench.controller(), &RunController::sequenceEnded);
        QVERIFY(bench.startRun());
        QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1, 60000);

        RunBrowser* browser = bench.runBrowser();
        browser->reload();
        browser->selectRuns({1});
        QCOMPARE(browser->selectedRunIds(), QList<qint64>{1});
        QSignalSpy finished(browser->reportExport(), &ReportExport::finished);
        QSignalSpy failed(browser->reportExport(), &ReportExport::failed);
        const QString path = dir.filePath("report.html");
        QVERIFY(browser->exportReport(path));
        QVERIFY(browser->reportExport()->isBusy());
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() + failed.count() == 1, 60000);
        QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().first().toString()));
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray html = file.readAll();
        QVERIFY(html.contains("data:image/png;base64,"));
        QVERIFY(html.contains("mixed-fp16"));
    }

    void anUnknownFormatIsRefusedWithTheReason()
    {
        ReportExport exporter;
        QString error;
        QVERIFY(!exporter.start("/tmp/none.sqlite", {1}, "/tmp/report.docx", &error));
        QVERIFY2(error.contains(".pdf"), qPrintable(error));
        QVERIFY(!exporter.isBusy());
    }
};

QTEST_MAIN(ReportExportTest)
#include "report_export_test.moc"
