// CSV and JSON export of a run's rows: exact text, special values, errors.
#include "storage/run_export.h"
#include "storage/run_store.h"
#include "storage/run_writer.h"
#include "storage/storage_error.h"
#include "test_support.h"

#include <QBuffer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <limits>

using namespace mantissa;
using namespace mantissa::storage;
using namespace mantissa::storage::test;

namespace {

StepRecord step(qint64 n, int epoch, float loss, float lr, float scale, bool skipped, float gradNorm, float rate,
                double elapsed)
{
    return {n, epoch, loss, lr, scale, skipped, gradNorm, rate, elapsed};
}

} // namespace

class ExportTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_path = m_dir.filePath(QStringLiteral("runs.sqlite"));
        m_store = std::make_unique<RunStore>(m_path);
        NewRun run = sampleRun();
        run.name = QStringLiteral("export \"me\"");
        run.tags = {QStringLiteral("paper")};
        m_runId = m_store->createRun(run);
        RunWriter writer(m_path, m_runId);
        const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
        writer.onStep(step(1, 1, 0.5f, 0.05f, 65536, false, 1.25f, 1000, 0.125));
        writer.onStep(step(2, 1, inf, 0.05f, 32768, true, nan, 999.5f, 0.25));
        writer.onEpoch({1, 0.75f, 0.5f, 0.8f, 0.625f, 10.5});
        writer.onStep(step(3, 2, 0.1f, 0.025f, 32768, false, 2, 1000, 0.375));
        writer.onEpoch({2, 0.25f, 0.875f, 0.3f, 0.9f, 21, 0.35f, 0.85f}); // with a validation split
        writer.onEvent(makeOverflow(2));
        QVERIFY(writer.finish(finishedSummary()));
    }
    void cleanupTestCase() { m_store.reset(); }

    void csv_data()
    {
        QTest::addColumn<ExportTable>("table");
        QTest::addColumn<QByteArray>("expected");
        QTest::newRow("steps")
            << ExportTable::Steps
            << QByteArray(
                   "step,epoch,loss,learning_rate,loss_scale,skipped,grad_norm,samples_per_second,elapsed_seconds\n"
                   "1,1,0.5,0.05,65536,0,1.25,1000,0.125\n"
                   "2,1,inf,0.05,32768,1,,999.5,0.25\n"
                   "3,2,0.1,0.025,32768,0,2,1000,0.375\n");
        QTest::newRow("epochs") << ExportTable::Epochs
                                << QByteArray("epoch,train_loss,train_accuracy,test_loss,test_accuracy,wall_seconds,"
                                              "validation_loss,validation_accuracy\n"
                                              "1,0.75,0.5,0.8,0.625,10.5,,\n"
                                              "2,0.25,0.875,0.3,0.9,21,0.35,0.85\n");
    }
    void csv()
    {
        QFETCH(ExportTable, table);
        QFETCH(QByteArray, expected);
        QCOMPARE(exportCsv(*m_store, m_runId, table), expected);
    }

    void json()
    {
        const QByteArray text = exportJson(*m_store, m_runId);
        QJsonParseError error;
        const QJsonDocument document = QJsonDocument::fromJson(text, &error);
        QVERIFY2(error.error == QJsonParseError::NoError, qPrintable(error.errorString() + "\n" + text));
        const QJsonObject root = document.object();

        const QJsonObject run = root[QStringLiteral("run")].toObject();
        QCOMPARE(run[QStringLiteral("name")].toString(), QStringLiteral("export \"me\""));
        QCOMPARE(run[QStringLiteral("status")].toString(), QStringLiteral("finished"));
        QCOMPARE(run[QStringLiteral("precision")].toString(), QStringLiteral("mixed-fp16"));
        QCOMPARE(run[QStringLiteral("tags")].toArray(), QJsonArray{QStringLiteral("paper")});
        QCOMPARE(run[QStringLiteral("config")][QStringLiteral("training")][QStringLiteral("seed")].toInt(), 42);
        QCOMPARE(run[QStringLiteral("summary")][QStringLiteral("steps")].toInteger(), 3);
        QCOMPARE(run[QStringLiteral("summary")][QStringLiteral("best_test_accuracy")].toDouble(), double(0.9f));
        QCOMPARE(run[QStringLiteral("summary")][QStringLiteral("final_test_loss")].toDouble(), double(0.3f));
        QCOMPARE(run[QStringLiteral("summary")][QStringLiteral("best_test_loss")].toDouble(), double(0.3f));

        const QJsonArray steps = root[QStringLiteral("steps")].toArray();
        QCOMPARE(steps.size(), 3);
        QCOMPARE(steps[0][QStringLiteral("loss")].toDouble(), 0.5);
        QCOMPARE(steps[0][QStringLiteral("learning_rate")].toDouble(), 0.05); // the float's shortest form
        QVERIFY(steps[1][QStringLiteral("loss")].isNull());                   // inf
        QVERIFY(steps[1][QStringLiteral("grad_norm")].isNull());              // NaN
        QCOMPARE(steps[1][QStringLiteral("skipped")].toInt(), 1);
        QCOMPARE(steps[2][QStringLiteral("elapsed_seconds")].toDouble(), 0.375);

        const QJsonArray epochs = root[QStringLiteral("epochs")].toArray();
        QCOMPARE(epochs.size(), 2);
        QCOMPARE(epochs[1][QStringLiteral("test_accuracy")].toDouble(), 0.9);
        QCOMPARE(epochs[1][QStringLiteral("wall_seconds")].toDouble(), 21.0);
        QVERIFY(epochs[0][QStringLiteral("validation_loss")].isNull()); // no validation split: NaN
        QCOMPARE(epochs[1][QStringLiteral("validation_loss")].toDouble(), 0.35);
        QCOMPARE(epochs[1][QStringLiteral("validation_accuracy")].toDouble(), 0.85);

        const QJsonArray events = root[QStringLiteral("events")].toArray();
        QCOMPARE(events.size(), 1);
        QCOMPARE(events[0][QStringLiteral("kind")].toString(), QStringLiteral("overflow"));
        QCOMPARE(events[0][QStringLiteral("scale_after")].toDouble(), 32768.0);
    }

    void unknownRun()
    {
        QVERIFY_THROWS_EXCEPTION(StorageError, exportCsv(*m_store, 999, ExportTable::Steps));
        QVERIFY_THROWS_EXCEPTION(StorageError, exportJson(*m_store, 999));
    }

    void deviceThatRefusesWrites()
    {
        QByteArray bytes;
        QBuffer readOnly(&bytes);
        QVERIFY(readOnly.open(QIODevice::ReadOnly));
        QTest::ignoreMessage(QtWarningMsg, "QIODevice::write (QBuffer): ReadOnly device");
        try {
            writeCsv(*m_store, m_runId, ExportTable::Steps, readOnly);
            QFAIL("wrote to a read-only device");
        } catch (const StorageError& error) {
            QCOMPARE(error.kind(), StorageError::Kind::Io);
            QVERIFY2(error.message().contains(QStringLiteral("cannot write the export")), qPrintable(error.message()));
        }
    }

private:
    QTemporaryDir m_dir;
    QString m_path;
    std::unique_ptr<RunStore> m_store;
    qint64 m_runId = 0;
};

QTEST_GUILESS_MAIN(ExportTest)
#include "export_test.moc"
