// mantissa-cli sweep and import on tiny synthetic runs: parallel workers and resuming, runs
// that diverge or fail recorded as such, a worker killed mid-run (interrupted, redone on the
// next start) and Ctrl-C, bad input (unknown key, zero seeds, a locked database), the Slurm
// script (dry run) and sbatch missing or refusing, and importing a directory with foreign and
// corrupt files.
#include "cli_test_support.h"
#include "storage/run_store.h"
#include "test_support.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>

using namespace mantissa;
using namespace mantissa::cli::test;

namespace {

QString writeFile(const QString& path, const QString& text)
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return {};
    file.write(text.toUtf8());
    return path;
}

// A spec over the tiny config in `dir`.
QString writeSpec(const QString& dir, const QString& body, const TinyConfig& tiny = {})
{
    const QString config = writeTinyConfig(dir, tiny);
    return writeFile(QDir(dir).filePath(QStringLiteral("sweep.json")),
                     QStringLiteral(R"({"base": {"file": "%1"}, %2})").arg(QFileInfo(config).fileName(), body));
}

QJsonArray configurations(const CliResult& result)
{
    return result.json().value(QStringLiteral("configurations")).toArray();
}

// Waits until the database holds a running run with sweep index `index` newer than `afterId`.
storage::RunInfo waitForRunning(const QString& db, int index, qint64 afterId)
{
    QDeadlineTimer deadline(60000);
    while (!deadline.hasExpired()) {
        if (QFile::exists(db)) {
            storage::RunStore store(db);
            for (const storage::RunInfo& run : store.listRuns())
                if (run.status == RunStatus::Running && run.sweepIndex == index && run.id > afterId &&
                    run.writerPid > 0)
                    return run;
        }
        QTest::qWait(50);
    }
    return {};
}

} // namespace

class CliSweepTest : public QObject {
    Q_OBJECT

private slots:
    void init()
    {
        m_dir = std::make_unique<QTemporaryDir>();
        QVERIFY(m_dir->isValid());
        m_db = m_dir->filePath(QStringLiteral("runs.sqlite"));
    }

    void runsInParallelThenResumesNothing()
    {
        const QString spec =
            writeSpec(m_dir->path(), QStringLiteral(R"("precisions": ["fp32", "mixed-fp16"], "seeds": 3)"));
        const CliResult first = runCli({QStringLiteral("sweep"), spec, QStringLiteral("--jobs"), QStringLiteral("2"),
                                        QStringLiteral("--db"), m_db});
        QVERIFY2(first.exitCode == 0, qPrintable(first.describe()));
        QVERIFY2(first.err.contains(QStringLiteral("6 to run, 2 at once, 1 thread(s) each")), qPrintable(first.err));
        QVERIFY2(first.err.contains(QStringLiteral("[6/6] run ")), qPrintable(first.err));
        QVERIFY2(first.out.contains(QStringLiteral("mixed-fp16 vs fp32: test accuracy ")), qPrintable(first.out));
        QVERIFY2(first.out.contains(QStringLiteral("Holm-corrected over the pairs")), qPrintable(first.out));
        // One verdict per metric for the one pair, each one of the four words, with its margin.
        const QJsonArray verdicts = first.json().value(QStringLiteral("verdicts")).toArray();
        QCOMPARE(verdicts.size(), 2);
        for (const QJsonValue& v : verdicts) {
            const QJsonObject verdict = v.toObject();
            QCOMPARE(verdict.value(QStringLiteral("baseline")).toString(), QStringLiteral("fp32"));
            QVERIFY(QStringList({"equivalent", "better", "worse", "inconclusive"})
                        .contains(verdict.value(QStringLiteral("verdict")).toString()));
        }
        QCOMPARE(verdicts[0].toObject().value(QStringLiteral("margin")).toDouble(), 0.005);
        QCOMPARE(verdicts[1].toObject().value(QStringLiteral("margin")).toDouble(), 0.01);
        const QJsonArray configs = configurations(first);
        QCOMPARE(configs.size(), 2);
        QCOMPARE(configs[0].toObject().value(QStringLiteral("configuration")).toString(), QStringLiteral("fp32"));
        for (const QJsonValue& config : configs) {
            QCOMPARE(config.toObject().value(QStringLiteral("finished")).toInt(), 3);
            const QJsonObject accuracy = config.toObject()
                                             .value(QStringLiteral("metrics"))
                                             .toObject()
                                             .value(QStringLiteral("final_test_accuracy"))
                                             .toObject();
            QCOMPARE(accuracy.value(QStringLiteral("n")).toInt(), 3);
            QVERIFY(accuracy.value(QStringLiteral("ci95")).toArray().size() == 2);
        }
        {
            storage::RunStore store(m_db);
            QCOMPARE(store.sweeps().size(), 1);
            const QList<storage::RunInfo> runs = store.sweepRuns(store.sweeps().front().id);
            QCOMPARE(runs.size(), 6);
            for (int i = 0; i < 6; ++i) {
                QCOMPARE(runs[i].sweepIndex, std::optional<int>(i));
                QCOMPARE(runs[i].precision, i < 3 ? QStringLiteral("fp32") : QStringLiteral("mixed-fp16"));
                QVERIFY2(runs[i].configJson.contains(QStringLiteral("\"seed\": %1").arg(i % 3)),
                         qPrintable(runs[i].configJson));
            }
        }
        // The same spec again: nothing to run, the same statistics.
        const CliResult again = runCli({QStringLiteral("sweep"), spec, QStringLiteral("--db"), m_db});
        QVERIFY2(again.exitCode == 0, qPrintable(again.describe()));
        QVERIFY2(again.err.contains(QStringLiteral("resumed, 6 done; 0 to run")), qPrintable(again.err));
        QCOMPARE(configurations(again), configs);
        QCOMPARE(storage::RunStore(m_db).listRuns().size(), 6);
    }

    void divergedAndFailedRunsAreRecordedAndTheSweepGoesOn()
    {
        // lr 1e30 makes the fp32 loss non-finite: diverged, a result. A dataset directory that
        // does not exist fails the worker before its run exists: recorded failed by the sweep.
        const QString spec =
            writeSpec(m_dir->path(), QStringLiteral(R"("axes": [{"key": "optimizer.lr", "values": [0.05, 1e30]},
                {"key": "data.dataset", "values": ["synthetic", "fashion-mnist"]}],
                "set": {"data.directory": "/nonexistent/mantissa-data"}, "seeds": 1)"));
        const CliResult result = runCli({QStringLiteral("sweep"), spec, QStringLiteral("--jobs"), QStringLiteral("2"),
                                         QStringLiteral("--db"), m_db});
        QVERIFY2(result.exitCode == 1, qPrintable(result.describe()));
        const QJsonArray configs = configurations(result);
        QCOMPARE(configs.size(), 4);
        QCOMPARE(configs[0].toObject().value(QStringLiteral("finished")).toInt(), 1);
        QCOMPARE(configs[1].toObject().value(QStringLiteral("failed")).toInt(), 1);
        QCOMPARE(configs[2].toObject().value(QStringLiteral("diverged")).toInt(), 1);
        QCOMPARE(configs[3].toObject().value(QStringLiteral("failed")).toInt(), 1);
        storage::RunStore store(m_db);
        const QList<storage::RunInfo> runs = store.sweepRuns(store.sweeps().front().id);
        QCOMPARE(runs.size(), 4);
        QCOMPARE(runs[1].status, RunStatus::Failed);
        QVERIFY2(runs[1].errorMessage.contains(QStringLiteral("/nonexistent/mantissa-data")),
                 qPrintable(runs[1].errorMessage));
        QCOMPARE(runs[2].status, RunStatus::Diverged);
    }

    void killedWorkerIsInterruptedAndRedoneOnRestart()
    {
        // Run 0 is far too long to finish; run 1 takes 8 steps.
        const QString spec =
            writeSpec(m_dir->path(), QStringLiteral(R"("axes": [{"key": "training.max_steps", "values": [0, 8]}],
                "set": {"training.epochs": 100000}, "seeds": 1)"));
        QProcess sweep;
        sweep.setProcessEnvironment(cliEnvironment());
        sweep.start(cliPath(), {QStringLiteral("sweep"), spec, QStringLiteral("--db"), m_db});
        const storage::RunInfo running = waitForRunning(m_db, 0, 0);
        QVERIFY(running.id > 0);
        QCOMPARE(::kill(pid_t(running.writerPid), SIGKILL), 0);
        QVERIFY(sweep.waitForFinished(60000));
        const QString err = QString::fromUtf8(sweep.readAllStandardError());
        QCOMPARE(sweep.exitCode(), 1);
        QVERIFY2(err.contains(QStringLiteral("interrupted, the worker crashed or was killed")), qPrintable(err));
        qint64 redoneAfter = 0;
        {
            storage::RunStore store(m_db);
            const QList<storage::RunInfo> runs = store.sweepRuns(store.sweeps().front().id);
            QCOMPARE(runs.size(), 2);
            QCOMPARE(runs[0].status, RunStatus::Interrupted);
            QCOMPARE(runs[1].status, RunStatus::Finished); // the sweep went on
            redoneAfter = runs[1].id;
        }
        // Started again, it redoes run 0 only; Ctrl-C then stops it at a step boundary.
        QProcess restarted;
        restarted.setProcessEnvironment(cliEnvironment());
        restarted.start(cliPath(), {QStringLiteral("sweep"), spec, QStringLiteral("--db"), m_db});
        const storage::RunInfo redone = waitForRunning(m_db, 0, redoneAfter);
        QVERIFY(redone.id > 0);
        QCOMPARE(::kill(pid_t(restarted.processId()), SIGINT), 0);
        QVERIFY(restarted.waitForFinished(60000));
        const QString err2 = QString::fromUtf8(restarted.readAllStandardError());
        QVERIFY2(err2.contains(QStringLiteral("resumed, 1 done; 1 to run")), qPrintable(err2));
        storage::RunStore store(m_db);
        const QList<storage::RunInfo> runs = store.sweepRuns(store.sweeps().front().id);
        QCOMPARE(runs.size(), 3);
        QCOMPARE(runs[1].id, redone.id);
        QCOMPARE(runs[1].sweepIndex, std::optional<int>(0));
        QCOMPARE(runs[1].status, RunStatus::Stopped);
    }

    void badInput_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QString>("message");
        QTest::newRow("unknown key") << QStringList{QStringLiteral("--preset"),     QStringLiteral("mlp"),
                                                    QStringLiteral("--seeds"),      QStringLiteral("2"),
                                                    QStringLiteral("--precisions"), QStringLiteral("fp32")}
                                     << QString();
        QTest::newRow("zero seeds") << QStringList{QStringLiteral("--preset"), QStringLiteral("mlp"),
                                                   QStringLiteral("--seeds"), QStringLiteral("0")}
                                    << QStringLiteral("seeds is 0; a sweep needs at least one seed");
        QTest::newRow("invalid value") << QStringList{QStringLiteral("--preset"), QStringLiteral("mlp"),
                                                      QStringLiteral("--precisions"), QStringLiteral("fp32,fp17")}
                                       << QStringLiteral("run 1 of 2 (precision.mode=fp17, seed=42)");
        QTest::newRow("margin of zero") << QStringList{QStringLiteral("--preset"), QStringLiteral("mlp"),
                                                       QStringLiteral("--margin-accuracy"), QStringLiteral("0")}
                                        << QStringLiteral("--margin-accuracy expects a positive number, got \"0\"");
        QTest::newRow("slurm without --out")
            << QStringList{QStringLiteral("--preset"), QStringLiteral("mlp"), QStringLiteral("--slurm")}
            << QStringLiteral("--slurm needs --out DIR");
    }
    void badInput()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QString, message);
        if (message.isEmpty()) { // the unknown key comes from a spec file
            arguments = {writeFile(m_dir->filePath(QStringLiteral("s.json")),
                                   QStringLiteral(R"({"base": "mlp", "axes": [{"key": "optimizer.lrr", "values":
                                   [0.1]}], "seeds": 2})"))};
            message = QStringLiteral("run 0 of 2 (optimizer.lrr=0.1, seed=0): optimizer.lrr is not a known field");
        }
        const CliResult result =
            runCli(QStringList{QStringLiteral("sweep")} + arguments + QStringList{QStringLiteral("--db"), m_db});
        QVERIFY2(result.exitCode == 2, qPrintable(result.describe()));
        QVERIFY2(result.err.contains(message), qPrintable(result.err));
        QVERIFY(!QFile::exists(m_db)); // refused before the database is touched
    }

    void lockedDatabaseWaitsThenFails()
    {
        {
            storage::RunStore store(m_db);
        }
        storage::test::RawDatabase holder(m_db);
        QVERIFY(holder.exec(QStringLiteral("BEGIN IMMEDIATE")));
        QVERIFY(holder.exec(QStringLiteral("INSERT INTO comparison_groups (name, created_at) VALUES ('x', 'y')")));
        const QString spec = writeSpec(m_dir->path(), QStringLiteral(R"("seeds": 1)"));
        QElapsedTimer clock;
        clock.start();
        const CliResult result = runCli({QStringLiteral("sweep"), spec, QStringLiteral("--db"), m_db});
        QVERIFY2(result.exitCode == 2, qPrintable(result.describe()));
        QVERIFY2(result.err.contains(QStringLiteral("stayed locked by another connection for more than 5000 ms")),
                 qPrintable(result.err));
        QVERIFY(clock.elapsed() >= 5000);
        holder.exec(QStringLiteral("ROLLBACK"));
    }

    void slurmDryRunWritesTheJobArray()
    {
        const QString spec =
            writeSpec(m_dir->path(), QStringLiteral(R"("precisions": ["fp32", "mixed-fp16"], "seeds": 2)"));
        const QString out = m_dir->filePath(QStringLiteral("slurm"));
        const CliResult result =
            runCli({QStringLiteral("sweep"), spec, QStringLiteral("--slurm"), QStringLiteral("--out"), out,
                    QStringLiteral("--partition"), QStringLiteral("gpu"), QStringLiteral("--time"),
                    QStringLiteral("0:20:00"), QStringLiteral("--mem"), QStringLiteral("4G"),
                    QStringLiteral("--gpus-per-task"), QStringLiteral("1"), QStringLiteral("--max-parallel"),
                    QStringLiteral("2"), QStringLiteral("--dry-run"), QStringLiteral("--db"), m_db});
        QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
        QFile script(QDir(out).filePath(QStringLiteral("sweep.sbatch")));
        QVERIFY(script.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(script.readAll());
        const QString uid = result.json().value(QStringLiteral("sweep_uid")).toString();
        QCOMPARE(uid.size(), 36);
        for (const QString& line :
             {QStringLiteral("#SBATCH --array=0-3%2\n"), QStringLiteral("#SBATCH --partition=gpu\n"),
              QStringLiteral("#SBATCH --time=0:20:00\n"), QStringLiteral("#SBATCH --mem=4G\n"),
              QStringLiteral("#SBATCH --gpus-per-task=1\n"), QStringLiteral("#SBATCH --cpus-per-task=1\n"),
              QStringLiteral("#SBATCH --output=%1/logs/run-%a.out\n").arg(out),
              QStringLiteral("exec '%1' sweep-worker --spec '%2/sweep.json' --sweep-uid %3 --index "
                             "\"$SLURM_ARRAY_TASK_ID\"")
                  .arg(cliPath(), out, uid),
              QStringLiteral("--db '%1/runs'\"/run-$SLURM_ARRAY_TASK_ID.sqlite\"").arg(out)})
            QVERIFY2(text.contains(line), qPrintable(line + QStringLiteral(" not in:\n") + text));
        QVERIFY(QFileInfo(QDir(out).filePath(QStringLiteral("runs"))).isDir());
        QVERIFY(!QFile::exists(m_db)); // nothing runs here
        // The spec it wrote is the sweep's, self-contained: a task can run from it alone.
        QFile written(QDir(out).filePath(QStringLiteral("sweep.json")));
        QVERIFY(written.open(QIODevice::ReadOnly));
        const QJsonObject json = QJsonDocument::fromJson(written.readAll()).object();
        QCOMPARE(json.value(QStringLiteral("seeds")).toArray().size(), 2);
        QVERIFY(json.value(QStringLiteral("base")).toObject().contains(QStringLiteral("config")));

        // Run task 3 as Slurm would, then import the directory with a foreign and a corrupt file.
        QProcessEnvironment environment = cliEnvironment();
        const CliResult task = runCli({QStringLiteral("sweep-worker"), QStringLiteral("--spec"),
                                       QDir(out).filePath(QStringLiteral("sweep.json")), QStringLiteral("--sweep-uid"),
                                       uid, QStringLiteral("--index"), QStringLiteral("3"), QStringLiteral("--db"),
                                       QDir(out).filePath(QStringLiteral("runs/run-3.sqlite"))});
        QVERIFY2(task.exitCode == 0, qPrintable(task.describe()));
        writeFile(QDir(out).filePath(QStringLiteral("runs/run-1.sqlite")), QStringLiteral("not a database\n"));
        {
            storage::test::RawDatabase foreign(QDir(out).filePath(QStringLiteral("runs/other.db")));
            QVERIFY(foreign.exec(QStringLiteral("CREATE TABLE customers (id INTEGER PRIMARY KEY)")));
        }
        const CliResult imported = runCli({QStringLiteral("import"), out, QStringLiteral("--db"), m_db});
        QVERIFY2(imported.exitCode == 1, qPrintable(imported.describe()));
        QVERIFY2(imported.err.contains(QStringLiteral("skipped %1/runs/run-1.sqlite: ").arg(out)),
                 qPrintable(imported.err));
        QVERIFY2(imported.err.contains(QStringLiteral("skipped %1/runs/other.db: ").arg(out)),
                 qPrintable(imported.err));
        QCOMPARE(imported.json().value(QStringLiteral("imported")).toInt(), 1);
        {
            storage::RunStore store(m_db);
            const std::optional<storage::SweepInfo> sweep = store.findSweep(uid);
            QVERIFY(sweep);
            const QList<storage::RunInfo> runs = store.sweepRuns(sweep->id);
            QCOMPARE(runs.size(), 1);
            QCOMPARE(runs[0].sweepIndex, std::optional<int>(3));
            QCOMPARE(runs[0].precision, QStringLiteral("mixed-fp16"));
            QCOMPARE(runs[0].status, RunStatus::Finished);
        }
        const CliResult again = runCli({QStringLiteral("import"), out, QStringLiteral("--db"), m_db});
        QCOMPARE(again.json().value(QStringLiteral("imported")).toInt(), 0);
        QCOMPARE(again.json().value(QStringLiteral("already_present")).toInt(), 1);
        QCOMPARE(storage::RunStore(m_db).listRuns().size(), 1);
    }

    void sbatchMissingOrRefusing()
    {
        const QString spec = writeSpec(m_dir->path(), QStringLiteral(R"("seeds": 2)"));
        const QStringList arguments = {QStringLiteral("sweep"), spec, QStringLiteral("--slurm"),
                                       QStringLiteral("--out"), m_dir->filePath(QStringLiteral("slurm"))};
        QProcessEnvironment environment = cliEnvironment();
        environment.insert(QStringLiteral("PATH"), m_dir->filePath(QStringLiteral("bin")));
        const CliResult missing = runCli(arguments, environment);
        QVERIFY2(missing.exitCode == 2, qPrintable(missing.describe()));
        QVERIFY2(missing.err.contains(QStringLiteral("sbatch could not be started")), qPrintable(missing.err));
        // An sbatch that refuses, as Slurm does for a partition it does not have.
        QDir(m_dir->path()).mkpath(QStringLiteral("bin"));
        const QString sbatch = writeFile(m_dir->filePath(QStringLiteral("bin/sbatch")),
                                         QStringLiteral("#!/bin/sh\necho 'sbatch: error: invalid partition specified: "
                                                        "nope' >&2\nexit 1\n"));
        QFile::setPermissions(sbatch, QFileDevice::ReadOwner | QFileDevice::ExeOwner);
        const CliResult refused = runCli(arguments, environment);
        QVERIFY2(refused.exitCode == 2, qPrintable(refused.describe()));
        QVERIFY2(refused.err.contains(QStringLiteral(
                     "sbatch refused the job (exit code 1): sbatch: error: invalid partition specified: nope")),
                 qPrintable(refused.err));
    }

private:
    std::unique_ptr<QTemporaryDir> m_dir;
    QString m_db;
};

QTEST_GUILESS_MAIN(CliSweepTest)
#include "cli_sweep_test.moc"
