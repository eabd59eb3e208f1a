// Data-parallel training under mpirun (label mpi): 2 ranks on this machine against 1 rank,
// mixed fp16 across ranks, a rank that dies, and the launches that must be refused.
// Skipped, with the reason, where this build has no MPI or mpirun is missing.
#include "cli_test_support.h"
#include "mpi_launch.h"
#include "storage/run_store.h"

#include <QDeadlineTimer>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <memory>

using namespace mantissa;
using namespace mantissa::cli::test;

namespace {

QString onlyRunStatus(const QString& db, qint64* id = nullptr)
{
    const QList<storage::RunInfo> runs = storage::RunStore(db).listRuns();
    if (runs.size() != 1)
        return QStringLiteral("%1 runs").arg(runs.size());
    if (id)
        *id = runs.first().id;
    return QString::fromLatin1(runStatusName(runs.first().status));
}

} // namespace

class CliMpiTest : public QObject {
    Q_OBJECT

private slots:
    void init()
    {
        if (const QString reason = mpiSkipReason(); !reason.isEmpty())
            QSKIP(qPrintable(reason));
        QVERIFY(m_dir.isValid());
        m_config = writeTinyConfig(m_dir.path());
    }

    // 2 ranks with batch 16 each see exactly the samples of 1 rank with batch 32: the loss
    // curves agree to fp32 rounding (the sum of two half-batch means, halved, against one
    // mean), and only rank 0 wrote to the database.
    void twoRanksFollowOneRank()
    {
        const QString one = m_dir.filePath(QStringLiteral("one.db")), two = m_dir.filePath(QStringLiteral("two.db"));
        const CliResult single = runCli({QStringLiteral("train"), m_config, QStringLiteral("--db"), one});
        QVERIFY2(single.exitCode == 0, qPrintable(single.describe()));
        const CliResult pair =
            runProgram(mpirun(), onRanks(2, {QStringLiteral("train"), m_config, QStringLiteral("--db"), two}));
        QVERIFY2(pair.exitCode == 0, qPrintable(pair.describe()));
        QCOMPARE(pair.outLines().size(), 1); // one JSON line: rank 0's
        qint64 oneId = 0, twoId = 0;
        QCOMPARE(onlyRunStatus(one, &oneId), QStringLiteral("finished"));
        QCOMPARE(onlyRunStatus(two, &twoId), QStringLiteral("finished"));
        const storage::StepSeries a = storage::RunStore(one).steps(oneId), b = storage::RunStore(two).steps(twoId);
        QCOMPARE(b.size(), a.size());
        QCOMPARE(a.size(), 16);
        double worst = 0;
        for (qsizetype i = 0; i < a.size(); ++i)
            worst = std::max(worst, std::fabs(a.loss[i] - b.loss[i]) / std::fabs(a.loss[i]));
        // Calibrated: 16 steps of SGD with momentum differ by about 1e-7 relative (measured
        // 1.2e-7); 1e-5 leaves room for other CPUs and still fails on a wrong slice or average.
        QVERIFY2(worst < 1e-5, qPrintable(QStringLiteral("largest relative loss difference %1").arg(worst)));
        QVERIFY(worst > 0 || a.loss == b.loss);
        // The record says how it was trained.
        const CliResult show = runCli({QStringLiteral("show"), QString::number(twoId), QStringLiteral("--db"), two});
        QVERIFY2(showField(show.out, QStringLiteral("device")).contains(QStringLiteral("x 2 ranks")),
                 qPrintable(show.out));
        QVERIFY2(showField(show.out, QStringLiteral("distributed")).startsWith(QStringLiteral("2 ranks")),
                 qPrintable(show.out));
        QVERIFY2(show.out.contains(QStringLiteral("rank 1:")), qPrintable(show.out)); // per-rank throughput
        QVERIFY2(showField(show.out, QStringLiteral("ranks")).startsWith(QStringLiteral("rank 0: ")),
                 qPrintable(show.out));
        // ... as facts of the run, not only as text: its world size and each rank's throughput.
        const storage::RunStore twoStore(two), oneStore(one);
        QCOMPARE(twoStore.run(twoId).worldSize, 2);
        QCOMPARE(oneStore.run(oneId).worldSize, 1);
        QVERIFY(oneStore.rankThroughput(oneId).isEmpty());
        const QList<RankThroughput> ranks = twoStore.rankThroughput(twoId);
        QCOMPARE(ranks.size(), 2);
        for (const RankThroughput& r : ranks) {
            QVERIFY(r.samplesPerSecond > 0 && r.trainSeconds > 0);
            QVERIFY(r.allReduceSeconds > 0 && r.allReduceSeconds < r.trainSeconds);
        }
    }

    // Mixed fp16 with a loss scale that grows every step keeps hitting overflow: every rank
    // skips the same steps (each step asserts the ranks' loss scales are equal, so a drift
    // would fail the run), and at the edge of overflow one rank's slice often overflows while
    // the other's does not; those steps are skipped on both and say which rank overflowed.
    void mixedFp16RanksSkipTogether_data()
    {
        QTest::addColumn<QString>("allreduce");
        QTest::newRow("fp32 all-reduce") << QStringLiteral("fp32");
        QTest::newRow("fp16 all-reduce") << QStringLiteral("compute");
    }
    void mixedFp16RanksSkipTogether()
    {
        QFETCH(QString, allreduce);
        TinyConfig tiny;
        tiny.name = QStringLiteral("growing");
        tiny.epochs = 4;
        tiny.extraJson = QStringLiteral(R"("precision": {"mode": "mixed-fp16", "loss_scale": )"
                                        R"({"type": "dynamic", "initial": 4096, "growth_interval": 1}})");
        const QString config = writeTinyConfig(m_dir.path(), tiny);
        const QString db = m_dir.filePath(allreduce + QStringLiteral(".db"));
        const CliResult pair = runProgram(mpirun(), onRanks(2, {QStringLiteral("train"), config, QStringLiteral("--db"),
                                                                db, QStringLiteral("--allreduce-dtype"), allreduce}));
        QVERIFY2(pair.exitCode == 0, qPrintable(pair.describe()));
        qint64 id = 0;
        QCOMPARE(onlyRunStatus(db, &id), QStringLiteral("finished"));
        const QList<EventRecord> events = storage::RunStore(db).events(id);
        int overflows = 0, aloneOnOneRank = 0;
        const QRegularExpression alone(QStringLiteral("^rank ([01]) of 2 had non-finite values before the all-reduce"));
        for (const EventRecord& e : events) {
            if (e.kind != EventKind::Overflow)
                continue;
            ++overflows;
            const QString message = QString::fromStdString(e.message);
            // The rank it started on, as a column: the one the message names, none when the sum did it.
            if (const auto match = alone.match(message); match.hasMatch()) {
                ++aloneOnOneRank;
                QCOMPARE(e.firstRank, match.captured(1).toInt());
            } else if (message.startsWith(QStringLiteral("no rank"))) {
                QCOMPARE(e.firstRank, -1);
            } else {
                QVERIFY2(message.startsWith(QStringLiteral("ranks 0, 1 of 2")), qPrintable(message));
                QCOMPARE(e.firstRank, 0);
            }
        }
        QVERIFY2(overflows >= 5, qPrintable(QStringLiteral("%1 overflows").arg(overflows)));
        QVERIFY2(aloneOnOneRank >= 1, qPrintable(pair.err));
        QVERIFY2(QString::fromStdString(events.last().message).contains(QStringLiteral("steps skipped on every rank")),
                 events.last().message.c_str());
    }

    // The fp16 all-reduce dividing before the sum, under a loss scale that starts at 2^-10 and
    // doubles every step: while it is small the division flushes the smallest gradients to
    // zero, and once it is large the sum overflows where neither rank did. Each step records its
    // own counts, and they add up to the totals the finished event states; a 1-rank run
    // records none.
    void allReduceCountsAreRecordedPerStep()
    {
        TinyConfig tiny;
        tiny.name = QStringLiteral("counted");
        tiny.epochs = 4;
        tiny.extraJson = QStringLiteral(R"("precision": {"mode": "mixed-fp16", "loss_scale": )"
                                        R"({"type": "dynamic", "initial": 0.0009765625, "growth_interval": 1}})");
        const QString config = writeTinyConfig(m_dir.path(), tiny);
        const QString db = m_dir.filePath(QStringLiteral("counted.db"));
        const CliResult pair =
            runProgram(mpirun(), onRanks(2, {QStringLiteral("train"), config, QStringLiteral("--db"), db,
                                             QStringLiteral("--allreduce-dtype"), QStringLiteral("compute"),
                                             QStringLiteral("--reduction"), QStringLiteral("divide-then-sum")}));
        QVERIFY2(pair.exitCode == 0, qPrintable(pair.describe()));
        qint64 id = 0;
        QCOMPARE(onlyRunStatus(db, &id), QStringLiteral("finished"));
        const storage::RunStore store(db);
        const storage::StepSeries steps = store.steps(id);
        QVERIFY(steps.size() > 0);
        qint64 flushed = 0, overflowed = 0;
        for (qsizetype i = 0; i < steps.size(); ++i) {
            QVERIFY2(!std::isnan(steps.allReduceFlushed[i]) && !std::isnan(steps.allReduceOverflowed[i]),
                     qPrintable(QStringLiteral("step %1 has no all-reduce counts").arg(steps.step[i])));
            flushed += static_cast<qint64>(steps.allReduceFlushed[i]);
            overflowed += static_cast<qint64>(steps.allReduceOverflowed[i]);
        }
        const QString finished = QString::fromStdString(store.events(id).last().message);
        static const QRegularExpression totals(
            QStringLiteral("16-bit all-reduce: (\\d+) values flushed to zero by the division before the sum, "
                           "(\\d+) overflowed in the sum"));
        const QRegularExpressionMatch match = totals.match(finished);
        QVERIFY2(match.hasMatch(), qPrintable(finished));
        qInfo("%lld values flushed and %lld overflowed over %lld steps", static_cast<long long>(flushed),
              static_cast<long long>(overflowed), static_cast<long long>(steps.size()));
        QCOMPARE(flushed, match.captured(1).toLongLong());
        QCOMPARE(overflowed, match.captured(2).toLongLong());
        QVERIFY2(flushed > 0, qPrintable(finished));
        QVERIFY2(overflowed > 0, qPrintable(finished));

        const QString single = m_dir.filePath(QStringLiteral("single.db"));
        const CliResult one = runCli({QStringLiteral("train"), config, QStringLiteral("--db"), single});
        QVERIFY2(one.exitCode == 0, qPrintable(one.describe()));
        qint64 singleId = 0;
        QCOMPARE(onlyRunStatus(single, &singleId), QStringLiteral("finished"));
        const storage::StepSeries alone = storage::RunStore(single).steps(singleId);
        QVERIFY(std::all_of(alone.allReduceFlushed.begin(), alone.allReduceFlushed.end(),
                            [](double v) { return std::isnan(v); }));
    }

    // One rank killed mid-run: the job ends (the launcher ends the other rank), rank 0 records
    // the run as failed saying why, and every step it had recorded is still there.
    void aRankThatDiesFailsTheRun()
    {
        const QString db = m_dir.filePath(QStringLiteral("dies.db"));
        QProcess job;
        QString err;
        qint64 pid = 0, id = 0;
        startLongTwoRankJob(job, db, err, pid, id);
        QVERIFY2(pid > 0 && id > 0, qPrintable(err));
        const qsizetype before = storage::RunStore(db).steps(id).size();
        QCOMPARE(::kill(static_cast<pid_t>(pid), SIGKILL), 0);
        QVERIFY2(job.waitForFinished(30000), "mpirun did not end after a rank died");
        err += QString::fromUtf8(job.readAllStandardError());
        QVERIFY2(job.exitCode() != 0, qPrintable(err));
        const storage::RunInfo run = storage::RunStore(db).run(id);
        QVERIFY2(run.status == RunStatus::Failed,
                 qPrintable(err + QStringLiteral("\nstatus ") + QString::fromLatin1(runStatusName(run.status))));
        QVERIFY2(run.errorMessage.contains(QStringLiteral("another rank failed or was killed")),
                 qPrintable(run.errorMessage));
        QVERIFY(storage::RunStore(db).steps(id).size() >= before);
    }

    // Ctrl-C at one rank (SIGINT to its pid): the stop travels in the next step's agreement, so
    // every rank stops after the same step and the job ends normally; rank 0 records the run as
    // stopped with every step it trained (Ctrl-C at mpirun is mpirun's: it ends the job with
    // SIGTERM, which aRankThatDiesFailsTheRun covers).
    void aStopOnOneRankStopsEveryRank()
    {
        const QString db = m_dir.filePath(QStringLiteral("stop.db"));
        QProcess job;
        QString err;
        qint64 pid = 0, id = 0;
        startLongTwoRankJob(job, db, err, pid, id);
        QVERIFY2(pid > 0 && id > 0, qPrintable(err));
        QCOMPARE(::kill(static_cast<pid_t>(pid), SIGINT), 0);
        QVERIFY2(job.waitForFinished(30000), "mpirun did not end after a stop on rank 1");
        err += QString::fromUtf8(job.readAllStandardError());
        QVERIFY2(job.exitStatus() == QProcess::NormalExit && job.exitCode() == 0,
                 qPrintable(QStringLiteral("exit code %1: %2").arg(job.exitCode()).arg(err.right(800))));
        const storage::RunStore store(db);
        const storage::RunInfo run = store.run(id);
        QVERIFY2(run.status == RunStatus::Stopped,
                 qPrintable(err + QStringLiteral("\nstatus ") + QString::fromLatin1(runStatusName(run.status))));
        // Nothing lost: every step the summary counts is a row, and the ranks' throughput is there.
        QCOMPARE(store.steps(id).size(), run.summary.steps.value_or(-1));
        QCOMPARE(store.rankThroughput(id).size(), 2);
    }

    // Ranks that would train different things are refused at start, naming the field, before
    // any run is created.
    void ranksWithDifferentConfigsAreRefused()
    {
        const QString db = m_dir.filePath(QStringLiteral("mismatch.db"));
        QStringList arguments = launchOptions();
        arguments << QStringLiteral("-np") << QStringLiteral("1") << cliPath() << QStringLiteral("train") << m_config
                  << QStringLiteral("--db") << db << QStringLiteral("--seed") << QStringLiteral("1")
                  << QStringLiteral(":") << QStringLiteral("-np") << QStringLiteral("1") << cliPath()
                  << QStringLiteral("train") << m_config << QStringLiteral("--db") << db << QStringLiteral("--seed")
                  << QStringLiteral("2");
        const CliResult result = runProgram(mpirun(), arguments);
        QVERIFY2(result.exitCode != 0, qPrintable(result.describe()));
        QVERIFY2(result.err.contains(QStringLiteral("rank 1's config differs from rank 0's at training.seed: 2 on "
                                                    "rank 1, 1 on rank 0")),
                 qPrintable(result.describe()));
        QCOMPARE(storage::RunStore(db).listRuns().size(), 0);
    }

    void aBatchThatDoesNotSplitIsRefused()
    {
        const QString db = m_dir.filePath(QStringLiteral("split.db"));
        const CliResult result =
            runProgram(mpirun(), onRanks(2, {QStringLiteral("train"), m_config, QStringLiteral("--db"), db,
                                             QStringLiteral("--batch-size"), QStringLiteral("33")}));
        QVERIFY2(result.exitCode != 0, qPrintable(result.describe()));
        QVERIFY2(result.err.contains(QStringLiteral("training.batch_size 33 is not divisible by the world size 2")),
                 qPrintable(result.describe()));
        QCOMPARE(storage::RunStore(db).listRuns().size(), 0);
    }

    // A GPU run with fewer GPUs on the node than ranks (none, on a machine without a GPU) ends
    // every rank with the reason, at start, through the ranks' agreement: no rank is left
    // waiting, none aborts the job, and no run is created.
    void aGpuRunWithoutAGpuPerRankIsRefusedOnEveryRank()
    {
        const QString db = m_dir.filePath(QStringLiteral("gpus.db"));
        const CliResult result =
            runProgram(mpirun(), onRanks(2, {QStringLiteral("train"), m_config, QStringLiteral("--db"), db,
                                             QStringLiteral("--device"), QStringLiteral("cuda")}));
        if (result.exitCode == 0)
            QSKIP("this machine has a GPU for each of 2 ranks: the refusal cannot be provoked here");
        QVERIFY2(result.exitCode == 2, qPrintable(result.describe()));
        static const QRegularExpression refusal(
            QStringLiteral("mantissa-cli train: (cannot train on cuda on [^:]+: .+|\\d+ ranks on .+ ask for a GPU each "
                           "\\(training.device cuda, one rank per GPU\\), but .+ has \\d+ GPUs? .+)"));
        QCOMPARE(result.err.count(refusal), 2); // each rank says it
        QVERIFY2(!result.err.contains(QStringLiteral("MPI_ABORT")), qPrintable(result.describe()));
        QCOMPARE(storage::RunStore(db).listRuns().size(), 0);
    }

private:
    // A 2-rank training run that would go on for ages, once rank 1 has printed its pid (each rank
    // prints its own) and rank 0 has committed 20 steps; `err` holds what the job printed so far.
    void startLongTwoRankJob(QProcess& job, const QString& db, QString& err, qint64& rank1Pid, qint64& runId)
    {
        TinyConfig tiny;
        tiny.name = QStringLiteral("long");
        tiny.epochs = 100000;
        const QString config = writeTinyConfig(m_dir.path(), tiny);
        job.setProcessEnvironment(cliEnvironment());
        job.start(mpirun(), onRanks(2, {QStringLiteral("train"), config, QStringLiteral("--db"), db}));
        if (!job.waitForStarted())
            return;
        const QRegularExpression rank1(QStringLiteral("rank 1 of 2 is pid (\\d+)"));
        QDeadlineTimer deadline(60000);
        while (!deadline.hasExpired() && job.state() == QProcess::Running) {
            job.waitForReadyRead(100);
            err += QString::fromUtf8(job.readAllStandardError());
            if (const auto match = rank1.match(err); match.hasMatch())
                rank1Pid = match.captured(1).toLongLong();
            runId = runIdFromStderr(err);
            if (rank1Pid && runId && storage::RunStore(db).steps(runId).size() >= 20)
                break;
        }
    }

    QTemporaryDir m_dir;
    QString m_config;
};

QTEST_GUILESS_MAIN(CliMpiTest)
#include "cli_mpi_test.moc"
