// mantissa-cli compare: one run per precision in one comparison group, with the same
// seed, initial weights and data order, and a results table with a speed-up column.
#include "cli_test_support.h"
#include "storage/run_store.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTest>

using namespace mantissa;
using namespace mantissa::cli::test;

namespace {

QJsonObject trainingSection(const storage::RunInfo& run)
{
    return QJsonDocument::fromJson(run.configJson.toUtf8()).object().value(QStringLiteral("training")).toObject();
}

} // namespace

class CliCompareTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_config = writeTinyConfig(m_dir.path());
        QVERIFY(!m_config.isEmpty());
    }

    void runsEachPrecisionInOneGroup()
    {
        const QString db = m_dir.filePath(QStringLiteral("compare.sqlite"));
        const CliResult r = runCli({QStringLiteral("compare"), m_config, QStringLiteral("--precisions"),
                                    QStringLiteral("fp32,mixed-fp16"), QStringLiteral("--max-steps"),
                                    QStringLiteral("12"), QStringLiteral("--db"), db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));

        // The table: a header with every column, then one row per precision, baseline first.
        const QStringList lines = r.outLines();
        QVERIFY2(lines.size() == 4, qPrintable(r.describe()));
        for (const char* column :
             {"precision", "batch", "test acc", "time", "speedup", "skipped", "loss scale", "peak memory"}) {
            QVERIFY2(lines[0].contains(QLatin1String(column)), column);
        }
        QVERIFY(lines[1].startsWith(QStringLiteral("fp32 ")));
        QVERIFY(lines[1].contains(QStringLiteral("1.00x")));
        QVERIFY(lines[2].startsWith(QStringLiteral("mixed-fp16 ")));

        const QJsonObject json = r.json();
        const qint64 groupId = json.value(QStringLiteral("group_id")).toInteger();
        QVERIFY(groupId > 0);
        const QJsonArray results = json.value(QStringLiteral("runs")).toArray();
        QCOMPARE(results.size(), 2);
        QCOMPARE(results[0].toObject().value(QStringLiteral("precision")).toString(), QStringLiteral("fp32"));
        QCOMPARE(results[1].toObject().value(QStringLiteral("precision")).toString(), QStringLiteral("mixed-fp16"));
        QCOMPARE(results[0].toObject().value(QStringLiteral("speedup")).toDouble(), 1.0);
        QVERIFY(results[1].toObject().value(QStringLiteral("speedup")).toDouble() > 0);

        storage::RunStore store(db);
        const QList<storage::RunInfo> runs = store.groupRuns(groupId);
        QCOMPARE(runs.size(), 2);
        for (const storage::RunInfo& run : runs) {
            QCOMPARE(run.status, storage::RunStatus::Finished);
            QCOMPARE(run.groupId, std::optional<qint64>(groupId));
            QCOMPARE(trainingSection(run).value(QStringLiteral("seed")).toInteger(), 7);
            QCOMPARE(trainingSection(run).value(QStringLiteral("batch_size")).toInteger(), 32);
            QCOMPARE(store.steps(run.id).size(), 12);
        }
        QCOMPARE(QSet<QString>({runs[0].precision, runs[1].precision}), QSet<QString>({"fp32", "mixed-fp16"}));
        QCOMPARE(store.groups().first().name, QStringLiteral("tiny: fp32 vs mixed-fp16"));

        const CliResult group = runCli(
            {QStringLiteral("runs"), QStringLiteral("--group"), QString::number(groupId), QStringLiteral("--db"), db});
        QVERIFY2(group.exitCode == 0 && group.outLines().size() == 3, qPrintable(group.describe())); // header + 2
    }

    // Same precision twice: the same seed must give the same initial weights and data
    // order, so the loss curves are bit-identical (the engine is deterministic for a
    // fixed thread count, and the config pins one thread).
    void samePrecisionTwiceIsBitIdentical()
    {
        const QString db = m_dir.filePath(QStringLiteral("twice.sqlite"));
        const CliResult r =
            runCli({QStringLiteral("compare"), m_config, QStringLiteral("--precisions"), QStringLiteral("fp32,fp32"),
                    QStringLiteral("--max-steps"), QStringLiteral("10"), QStringLiteral("--db"), db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QJsonArray results = r.json().value(QStringLiteral("runs")).toArray();
        QCOMPARE(results.size(), 2);
        storage::RunStore store(db);
        const storage::StepSeries first =
            store.steps(results[0].toObject().value(QStringLiteral("run_id")).toInteger());
        const storage::StepSeries second =
            store.steps(results[1].toObject().value(QStringLiteral("run_id")).toInteger());
        QCOMPARE(first.size(), 10);
        QCOMPARE(second.loss, first.loss);
        QCOMPARE(second.gradNorm, first.gradNorm);
    }

    void rejectsBadPrecisionsBeforeTraining_data()
    {
        QTest::addColumn<QStringList>("options");
        QTest::addColumn<QString>("message");
        QTest::newRow("unknown") << QStringList{QStringLiteral("--precisions"), QStringLiteral("fp32,fp8")}
                                 << QStringLiteral("--precisions is \"fp8\"; expected fp32, fp16, mixed-fp16, "
                                                   "mixed-bf16, bf16, fp8-hybrid, fp8-e4m3, fp8-delayed, fp8-block, "
                                                   "mxfp8, mxfp6, mxfp4 or nvfp4");
        QTest::newRow("missing") << QStringList{} << QStringLiteral("--precisions is required");
        QTest::newRow("--precision") << QStringList{QStringLiteral("--precision"), QStringLiteral("fp16")}
                                     << QStringLiteral("not --precision");
    }
    void rejectsBadPrecisionsBeforeTraining()
    {
        QFETCH(QStringList, options);
        QFETCH(QString, message);
        const QString db = m_dir.filePath(QStringLiteral("rejected.sqlite"));
        const CliResult r =
            runCli(QStringList{QStringLiteral("compare"), m_config, QStringLiteral("--db"), db} + options);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(message), qPrintable(r.describe()));
        QVERIFY(!QFile::exists(db) || storage::RunStore(db).listRuns().isEmpty());
    }

private:
    QTemporaryDir m_dir;
    QString m_config;
};

QTEST_GUILESS_MAIN(CliCompareTest)
#include "cli_compare_test.moc"
