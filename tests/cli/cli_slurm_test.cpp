// A sweep on a real Slurm (the one-node cluster slurm_cluster.sh starts as a CTest fixture):
// `sweep --slurm` submits a job array, every task writes its run into its own database under
// --out, and `import` merges them into one sweep, twice without duplicates. A job Slurm
// refuses (an unknown partition) shows sbatch's message. Skips, with the fixture's reason,
// where the cluster could not start.
#include "cli_test_support.h"
#include "slurm_test_cluster.h"
#include "storage/run_store.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QTemporaryDir>
#include <QTest>

using namespace mantissa;
using namespace mantissa::cli::test;

namespace {} // namespace

class CliSlurmTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        if (const QString why = slurmClusterMissing(QStringLiteral("cli_slurm_test")); !why.isEmpty())
            QSKIP(qPrintable(why));
    }

    void jobArrayRunsAndImports()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString config = writeTinyConfig(dir.path());
        const QString out = dir.filePath(QStringLiteral("out"));
        const QString db = dir.filePath(QStringLiteral("runs.sqlite"));
        const CliResult submitted =
            runCli({QStringLiteral("sweep"), config, QStringLiteral("--precisions"), QStringLiteral("fp32,mixed-fp16"),
                    QStringLiteral("--seeds"), QStringLiteral("2"), QStringLiteral("--slurm"), QStringLiteral("--out"),
                    out, QStringLiteral("--max-parallel"), QStringLiteral("2")},
                   slurmEnvironment());
        QVERIFY2(submitted.exitCode == 0, qPrintable(submitted.describe()));
        const QString job = submitted.json().value(QStringLiteral("job_id")).toString();
        QVERIFY2(!job.isEmpty(), qPrintable(submitted.describe()));

        // sbatch --wait polls at 2, 8 and 32 s; squeue answers at once.
        QDeadlineTimer deadline(120000);
        QString queue;
        do {
            QTest::qWait(300);
            queue = runProgram(QStringLiteral("squeue"), {QStringLiteral("-h"), QStringLiteral("-j"), job},
                               slurmEnvironment())
                        .out.trimmed();
        } while (!queue.isEmpty() && !deadline.hasExpired());
        QVERIFY2(queue.isEmpty(), qPrintable(QStringLiteral("still queued: ") + queue));
        // Slurm can report a job COMPLETED that never ran (the notes): check the tasks' files.
        for (int task = 0; task < 4; ++task) {
            const QString file = QDir(out).filePath(QStringLiteral("runs/run-%1.sqlite").arg(task));
            QFile log(QDir(out).filePath(QStringLiteral("logs/run-%1.out").arg(task)));
            QVERIFY2(QFile::exists(file), qPrintable(file + QStringLiteral(" missing; log: ") +
                                                     (log.open(QIODevice::ReadOnly) ? log.readAll() : QByteArray())));
        }

        const CliResult imported = runCli({QStringLiteral("import"), out, QStringLiteral("--db"), db});
        QVERIFY2(imported.exitCode == 0, qPrintable(imported.describe()));
        QCOMPARE(imported.json().value(QStringLiteral("imported")).toInt(), 4);
        const QJsonArray sweeps = imported.json().value(QStringLiteral("sweeps")).toArray();
        QCOMPARE(sweeps.size(), 1);
        const QJsonArray configurations = sweeps[0].toObject().value(QStringLiteral("configurations")).toArray();
        QCOMPARE(configurations.size(), 2);
        for (const QJsonValue& configuration : configurations)
            QCOMPARE(configuration.toObject().value(QStringLiteral("finished")).toInt(), 2);
        {
            storage::RunStore store(db);
            const QList<storage::RunInfo> runs = store.sweepRuns(store.sweeps().front().id);
            QCOMPARE(runs.size(), 4);
            for (int i = 0; i < 4; ++i)
                QCOMPARE(runs[i].sweepIndex, std::optional<int>(i));
        }
        const CliResult again = runCli({QStringLiteral("import"), out, QStringLiteral("--db"), db});
        QCOMPARE(again.json().value(QStringLiteral("imported")).toInt(), 0);
        QCOMPARE(again.json().value(QStringLiteral("already_present")).toInt(), 4);

        // Started again on the same --out, the sweep submits only what has no result.
        const QStringList sweep = {QStringLiteral("sweep"),
                                   config,
                                   QStringLiteral("--precisions"),
                                   QStringLiteral("fp32,mixed-fp16"),
                                   QStringLiteral("--seeds"),
                                   QStringLiteral("2"),
                                   QStringLiteral("--slurm"),
                                   QStringLiteral("--out"),
                                   out,
                                   QStringLiteral("--max-parallel"),
                                   QStringLiteral("2")};
        const CliResult complete = runCli(sweep + QStringList{QStringLiteral("--dry-run")}, slurmEnvironment());
        QVERIFY2(complete.exitCode == 0, qPrintable(complete.describe()));
        QCOMPARE(complete.json().value(QStringLiteral("submitted")).toInt(), 0);
        QCOMPARE(complete.json().value(QStringLiteral("done")).toInt(), 4);
        QVERIFY2(complete.err.contains(QStringLiteral("nothing to submit")), qPrintable(complete.describe()));

        QVERIFY(QFile::remove(QDir(out).filePath(QStringLiteral("runs/run-2.sqlite"))));
        const CliResult resumed = runCli(sweep + QStringList{QStringLiteral("--dry-run")}, slurmEnvironment());
        QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.describe()));
        QCOMPARE(resumed.json().value(QStringLiteral("submitted")).toInt(), 1);
        QCOMPARE(resumed.json().value(QStringLiteral("array")).toString(), QStringLiteral("2"));
        QCOMPARE(resumed.json().value(QStringLiteral("sweep_uid")).toString(),
                 submitted.json().value(QStringLiteral("sweep_uid")).toString());
        QFile script(QDir(out).filePath(QStringLiteral("sweep.sbatch")));
        QVERIFY(script.open(QIODevice::ReadOnly));
        QVERIFY2(script.readAll().contains("#SBATCH --array=2%2\n"), "the script submits only run 2");

        // Another sweep may not reuse the directory: their task databases would mix.
        const CliResult other =
            runCli({QStringLiteral("sweep"), config, QStringLiteral("--precisions"), QStringLiteral("fp32,bf16"),
                    QStringLiteral("--seeds"), QStringLiteral("2"), QStringLiteral("--slurm"), QStringLiteral("--out"),
                    out, QStringLiteral("--dry-run")},
                   slurmEnvironment());
        QCOMPARE(other.exitCode, 2);
        QVERIFY2(other.err.contains(QStringLiteral("holds another sweep")), qPrintable(other.describe()));
    }

    void refusedJobShowsSlurmsMessage()
    {
        QTemporaryDir dir;
        const QString config = writeTinyConfig(dir.path());
        const CliResult refused =
            runCli({QStringLiteral("sweep"), config, QStringLiteral("--seeds"), QStringLiteral("2"),
                    QStringLiteral("--slurm"), QStringLiteral("--out"), dir.filePath(QStringLiteral("out")),
                    QStringLiteral("--partition"), QStringLiteral("no-such-partition")},
                   slurmEnvironment());
        QVERIFY2(refused.exitCode == 2, qPrintable(refused.describe()));
        QVERIFY2(refused.err.contains(QStringLiteral("sbatch refused the job")) &&
                     refused.err.contains(QStringLiteral("invalid partition")),
                 qPrintable(refused.err));
    }
};

QTEST_GUILESS_MAIN(CliSlurmTest)
#include "cli_slurm_test.moc"
