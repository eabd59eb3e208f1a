// A study on a real Slurm (the one-node cluster slurm_cluster.sh starts as a CTest fixture):
// `study --slurm` submits the trained arms as one job array and the fork arm as a second that
// waits for the first; each fork task forks its parent from the parent's task database;
// `import` brings in trained and forked runs with their lineage and `study --no-run` reports
// them all, with nothing left to run here. A fork whose parent's task failed fails with a
// message naming the parent, and the report says which runs have no result. Skips, with the
// fixture's reason, where the cluster could not start.
#include "cli_test_support.h"
#include "slurm_test_cluster.h"
#include "storage/run_store.h"

#include <QDateTime>
#include <QDeadlineTimer>
#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

using namespace mantissa;
using namespace mantissa::cli::test;

namespace {

// One trained arm and one fork arm continuing it from half-way in fp32, 2 seeds.
QString writeStudy(const QString& dir)
{
    const QString path = QDir(dir).filePath(QStringLiteral("slurm-study.json"));
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return {};
    file.write(R"({"name": "slurm-study", "claim": {"text": "switching to fp32 late changes nothing",
        "citation": "A. Author 2020"},
      "base": "mlp", "set": {"training.max_steps": 4, "data.limit_train": 512, "data.limit_test": 128},
      "arms": [{"name": "bf16", "set": {"precision.mode": "mixed-bf16"}},
               {"name": "late fp32", "fork": {"arm": "bf16", "at": 0.5, "set": {"precision.mode": "fp32"}}}],
      "seeds": 2, "metrics": ["final_train_loss"], "margins": {"final_train_loss": 0.5},
      "expect": [{"arm": "late fp32", "against": "bf16", "metric": "final_train_loss", "verdict": "equivalent"}]})");
    return path;
}

QString readFile(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? QString::fromUtf8(file.readAll())
                                          : QStringLiteral("(no file %1)").arg(path);
}

QString squeue(const QString& job, const QString& format)
{
    return runProgram(QStringLiteral("squeue"),
                      {QStringLiteral("-h"), QStringLiteral("-j"), job, QStringLiteral("-o"), format},
                      slurmEnvironment())
        .out.trimmed();
}

// sbatch --wait polls at 2, 8 and 32 s; squeue answers at once.
bool waitForJobs(const QStringList& jobs)
{
    QDeadlineTimer deadline(180000);
    for (const QString& job : jobs) {
        while (!squeue(job, QStringLiteral("%i")).isEmpty()) {
            if (deadline.hasExpired())
                return false;
            QTest::qWait(300);
        }
    }
    return true;
}

// Each array task's "Key=value" fields from `scontrol -o show job`, one line per task.
QList<QHash<QString, QString>> jobTasks(const QString& job)
{
    const QString out =
        runProgram(QStringLiteral("scontrol"),
                   {QStringLiteral("-o"), QStringLiteral("show"), QStringLiteral("job"), job}, slurmEnvironment())
            .out;
    QList<QHash<QString, QString>> tasks;
    for (const QString& line : out.split(u'\n', Qt::SkipEmptyParts)) {
        QHash<QString, QString> fields;
        for (const QString& word : line.split(u' ', Qt::SkipEmptyParts))
            if (const qsizetype eq = word.indexOf(u'='); eq > 0)
                fields.insert(word.left(eq), word.mid(eq + 1));
        tasks << fields;
    }
    return tasks;
}

QDateTime slurmTime(const QString& text) { return QDateTime::fromString(text, Qt::ISODate); }

} // namespace

class CliStudySlurmTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        if (const QString why = slurmClusterMissing(QStringLiteral("cli_study_slurm_test")); !why.isEmpty())
            QSKIP(qPrintable(why));
    }

    void forkArmsRunAsASecondArrayAfterTheTrainedOnes()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString spec = writeStudy(dir.path());
        const QString out = dir.filePath(QStringLiteral("out"));
        const QString db = dir.filePath(QStringLiteral("runs.sqlite"));

        // --dry-run writes both scripts and submits neither.
        const CliResult dry = runCli({QStringLiteral("study"), spec, QStringLiteral("--slurm"), QStringLiteral("--out"),
                                      out, QStringLiteral("--dry-run")},
                                     slurmEnvironment());
        QVERIFY2(dry.exitCode == 0, qPrintable(dry.describe()));
        QVERIFY(!dry.json().contains(QStringLiteral("job_id")) && !dry.json().contains(QStringLiteral("fork_job_id")));
        QCOMPARE(dry.json().value(QStringLiteral("forks_submitted")).toInt(), 2);
        QVERIFY2(readFile(QDir(out).filePath(QStringLiteral("sweep.sbatch"))).contains("#SBATCH --array=0-1\n"),
                 qPrintable(dry.describe()));
        const QString forkScript = readFile(QDir(out).filePath(QStringLiteral("forks.sbatch")));
        QVERIFY2(forkScript.contains("#SBATCH --array=0-1\n") && forkScript.contains(" study-fork-worker "),
                 qPrintable(forkScript));

        const CliResult submitted =
            runCli({QStringLiteral("study"), spec, QStringLiteral("--slurm"), QStringLiteral("--out"), out},
                   slurmEnvironment());
        QVERIFY2(submitted.exitCode == 0, qPrintable(submitted.describe()));
        const QString trainedJob = submitted.json().value(QStringLiteral("job_id")).toString();
        const QString forkJob = submitted.json().value(QStringLiteral("fork_job_id")).toString();
        QVERIFY2(!trainedJob.isEmpty() && !forkJob.isEmpty(), qPrintable(submitted.describe()));
        // Submitted to wait for the trained arms' array as a whole.
        const QString dependency = jobTasks(forkJob).value(0).value(QStringLiteral("Dependency"));
        QVERIFY2(dependency.startsWith(QStringLiteral("afterany:") + trainedJob) || dependency == u"(null)",
                 qPrintable(dependency));
        QVERIFY2(waitForJobs({trainedJob, forkJob}), "the jobs did not end in 180 s");

        // Slurm can report a job COMPLETED that never ran (the notes): check the tasks' files.
        for (int task = 0; task < 2; ++task) {
            QVERIFY2(QFile::exists(QDir(out).filePath(QStringLiteral("runs/run-%1.sqlite").arg(task))),
                     qPrintable(readFile(QDir(out).filePath(QStringLiteral("logs/run-%1.out").arg(task)))));
            QVERIFY2(QFile::exists(QDir(out).filePath(QStringLiteral("forks/fork-%1.sqlite").arg(task))),
                     qPrintable(readFile(QDir(out).filePath(QStringLiteral("logs/fork-%1.out").arg(task)))));
        }
        // Every fork task started after every trained task had ended.
        QDateTime trainedEnd;
        for (const auto& task : jobTasks(trainedJob)) {
            QCOMPARE(task.value(QStringLiteral("JobState")), QStringLiteral("COMPLETED"));
            trainedEnd = std::max(trainedEnd, slurmTime(task.value(QStringLiteral("EndTime"))));
        }
        const auto forkTasks = jobTasks(forkJob);
        QCOMPARE(forkTasks.size(), 2);
        for (const auto& task : forkTasks) {
            QCOMPARE(task.value(QStringLiteral("JobState")), QStringLiteral("COMPLETED"));
            QVERIFY2(slurmTime(task.value(QStringLiteral("StartTime"))) >= trainedEnd,
                     qPrintable(task.value(QStringLiteral("StartTime")) + QStringLiteral(" before ") +
                                trainedEnd.toString(Qt::ISODate)));
        }

        const CliResult imported = runCli({QStringLiteral("import"), out, QStringLiteral("--db"), db});
        QVERIFY2(imported.exitCode == 0, qPrintable(imported.describe()));
        QCOMPARE(imported.json().value(QStringLiteral("imported")).toInt(), 4);
        {
            storage::RunStore store(db);
            QHash<qint64, storage::RunInfo> byId;
            for (const storage::RunInfo& run : store.listRuns())
                byId.insert(run.id, run);
            QCOMPARE(byId.size(), 4);
            int forks = 0;
            for (const storage::RunInfo& run : byId) {
                if (!run.parent)
                    continue;
                ++forks;
                QVERIFY2(run.parent->runId && byId.contains(*run.parent->runId), qPrintable(run.name));
                const storage::RunInfo& parent = byId[*run.parent->runId];
                QCOMPARE(run.parent->step, qint64(2));
                QCOMPARE(run.status, RunStatus::Finished);
                QCOMPARE(run.precision, QStringLiteral("fp32"));
                QCOMPARE(parent.precision, QStringLiteral("mixed-bf16"));
                QVERIFY(parent.sweepIndex.has_value());
                // The fork continues the parent of its own seed: parent index = seed here.
                QVERIFY2(run.tags.size() == 1 &&
                             run.tags.first().endsWith(QStringLiteral(":late fp32:seed%1").arg(*parent.sweepIndex)),
                         qPrintable(run.tags.join(u',')));
            }
            QCOMPARE(forks, 2);
        }

        const CliResult report =
            runCli({QStringLiteral("study"), spec, QStringLiteral("--no-run"), QStringLiteral("--db"), db});
        QVERIFY2(report.exitCode == 0, qPrintable(report.describe()));
        QVERIFY2(report.out.contains(QStringLiteral("| bf16 | 2 of 2 |")) &&
                     report.out.contains(QStringLiteral("| late fp32 | 2 of 2 |")),
                 qPrintable(report.out));
        // Run here again, the study finds everything in: nothing runs twice.
        const CliResult again = runCli({QStringLiteral("study"), spec, QStringLiteral("--db"), db});
        QVERIFY2(again.exitCode == 0, qPrintable(again.describe()));
        QVERIFY2(again.err.contains(QStringLiteral("0 of 2 runs to train, 0 fork(s) to run")), qPrintable(again.err));
        QCOMPARE(storage::RunStore(db).listRuns().size(), 4);

        // Started again on the same --out, nothing is left to submit.
        const CliResult resumed =
            runCli({QStringLiteral("study"), spec, QStringLiteral("--slurm"), QStringLiteral("--out"), out},
                   slurmEnvironment());
        QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.describe()));
        QCOMPARE(resumed.json().value(QStringLiteral("submitted")).toInt(), 0);
        QCOMPARE(resumed.json().value(QStringLiteral("forks_done")).toInt(), 2);
        QCOMPARE(resumed.json().value(QStringLiteral("forks_submitted")).toInt(), 0);
    }

    void aForkWhoseParentFailedSaysSo()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString spec = writeStudy(dir.path());
        const QString out = dir.filePath(QStringLiteral("out"));
        const QString db = dir.filePath(QStringLiteral("runs.sqlite"));
        // Trained run 1's task database is in the way, not a database: its task fails.
        QVERIFY(QDir().mkpath(QDir(out).filePath(QStringLiteral("runs"))));
        {
            QFile blocker(QDir(out).filePath(QStringLiteral("runs/run-1.sqlite")));
            QVERIFY(blocker.open(QIODevice::WriteOnly));
            blocker.write("not a database\n");
        }
        const CliResult submitted =
            runCli({QStringLiteral("study"), spec, QStringLiteral("--slurm"), QStringLiteral("--out"), out},
                   slurmEnvironment());
        QVERIFY2(submitted.exitCode == 0, qPrintable(submitted.describe()));
        const QString trainedJob = submitted.json().value(QStringLiteral("job_id")).toString();
        const QString forkJob = submitted.json().value(QStringLiteral("fork_job_id")).toString();
        QVERIFY2(!trainedJob.isEmpty() && !forkJob.isEmpty(), qPrintable(submitted.describe()));
        QVERIFY2(waitForJobs({trainedJob, forkJob}), "the jobs did not end in 180 s");

        // Fork 0's parent trained; fork 1's did not, and its task says which parent and where to look.
        QHash<QString, QString> forkStates;
        for (const auto& task : jobTasks(forkJob))
            forkStates.insert(task.value(QStringLiteral("ArrayTaskId")), task.value(QStringLiteral("JobState")));
        QCOMPARE(forkStates.value(QStringLiteral("0")), QStringLiteral("COMPLETED"));
        QCOMPARE(forkStates.value(QStringLiteral("1")), QStringLiteral("FAILED"));
        const QString log = readFile(QDir(out).filePath(QStringLiteral("logs/fork-1.out")));
        QVERIFY2(log.contains(QStringLiteral("fork 1 (arm \"late fp32\", seed 1) cannot run: its parent, run 1 of "
                                             "the trained arms (arm \"bf16\", seed 1), has no result: ")) &&
                     log.contains(QStringLiteral("runs/run-1.sqlite: is not an SQLite database")) &&
                     log.contains(QStringLiteral("logs/run-1.out")),
                 qPrintable(log));
        QVERIFY(!QFile::exists(QDir(out).filePath(QStringLiteral("forks/fork-1.sqlite"))));

        const CliResult imported = runCli({QStringLiteral("import"), out, QStringLiteral("--db"), db});
        QCOMPARE(imported.exitCode, 1); // run-1.sqlite skipped, named
        QVERIFY2(imported.err.contains(QStringLiteral("run-1.sqlite")), qPrintable(imported.describe()));
        QCOMPARE(imported.json().value(QStringLiteral("imported")).toInt(), 2);

        const CliResult report =
            runCli({QStringLiteral("study"), spec, QStringLiteral("--no-run"), QStringLiteral("--db"), db});
        QCOMPARE(report.exitCode, 1); // a planned run has no result: no verdict yet
        QVERIFY2(report.out.contains(QStringLiteral("| bf16 | 1 of 2 |")) &&
                     report.out.contains(QStringLiteral("| late fp32 | 1 of 2 |")) &&
                     report.out.contains(QStringLiteral("- bf16: seed 1: no result yet (run 1 of sweep ")) &&
                     report.out.contains(
                         QStringLiteral("- late fp32: seed 1: no fork yet, its parent (bf16) has no result")),
                 qPrintable(report.out));
    }
};

QTEST_GUILESS_MAIN(CliStudySlurmTest)
#include "cli_study_slurm_test.moc"
