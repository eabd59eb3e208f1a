// Round trips through mantissa-cli on a tiny synthetic config: train records a run and
// prints its id, runs lists it, show prints its config, summary and events, export writes
// every stored step, note/tag/delete change it, and an unknown run is exit code 2.
#include "cli_test_support.h"
#include "storage/run_store.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTest>

using namespace mantissa;
using namespace mantissa::cli::test;

namespace {

// Dynamic loss scaling from 2^24, the bound: the first gradients overflow fp16 and the
// scaler backs off step by step, so the run has overflow events to show.
const QString kOverflowingMixedFp16 =
    QStringLiteral(R"("precision": {"mode": "mixed-fp16", "loss_scale": {"type": "dynamic", "initial": 16777216}})");

qsizetype countLines(const QByteArray& text) { return text.split('\n').size() - (text.endsWith('\n') ? 1 : 0); }

QByteArray readFile(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

} // namespace

class CliRunsTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(QStringLiteral("runs.sqlite"));
        m_config = writeTinyConfig(m_dir.path());
        m_overflowConfig =
            writeTinyConfig(m_dir.path(), {QStringLiteral("overflow"), 1, 512, 256, kOverflowingMixedFp16});
        QVERIFY(!m_config.isEmpty() && !m_overflowConfig.isEmpty());
    }

    void trainRecordsTheRunAndPrintsItsId()
    {
        const CliResult r = runCli({QStringLiteral("train"), m_config, QStringLiteral("--max-steps"),
                                    QStringLiteral("12"), QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QJsonObject line = r.json();
        for (const char* key : {"status", "train_loss", "test_accuracy", "steps", "skipped_steps", "final_loss_scale",
                                "samples_per_s", "wall_s", "run_id"}) {
            QVERIFY2(line.contains(QLatin1String(key)), key);
        }
        const qint64 id = line.value(QStringLiteral("run_id")).toInteger();
        QVERIFY(id > 0);
        QCOMPARE(runIdFromStderr(r.err), id);
        QCOMPARE(line.value(QStringLiteral("status")).toString(), QStringLiteral("finished"));
        QCOMPARE(line.value(QStringLiteral("steps")).toInteger(), 12);

        storage::RunStore store(m_db);
        const storage::RunInfo run = store.run(id);
        QCOMPARE(run.status, storage::RunStatus::Finished);
        QCOMPARE(run.name, QStringLiteral("tiny-fp32-1"));
        QCOMPARE(run.preset, QStringLiteral("tiny"));
        QCOMPARE(run.precision, QStringLiteral("fp32"));
        QCOMPARE(run.engineVersion, QString::fromStdString(mantissa::buildIdentity()));
        QVERIFY2(run.device.startsWith(QStringLiteral("cpu")), qPrintable(run.device));
        QVERIFY(run.peakMemoryBytes.value_or(0) > 0);
        QVERIFY(run.wallSeconds.value_or(0) > 0);
        QCOMPARE(run.summary.steps, std::optional<qint64>(12));
        QCOMPARE(store.steps(id).size(), 12);
        QCOMPARE(store.epochs(id).size(), 1);
        const QJsonObject config = QJsonDocument::fromJson(run.configJson.toUtf8()).object();
        QCOMPARE(config.value(QStringLiteral("training")).toObject().value(QStringLiteral("max_steps")).toInt(), 12);

        const CliResult runs = runCli({QStringLiteral("runs"), QStringLiteral("--db"), m_db});
        QVERIFY2(runs.exitCode == 0, qPrintable(runs.describe()));
        QVERIFY2(runs.out.contains(QStringLiteral("tiny-fp32-1")), qPrintable(runs.describe()));
    }

    void trainTakesTheDatabaseFromMantissaDb()
    {
        const QString path = m_dir.filePath(QStringLiteral("from-env/runs.sqlite"));
        QProcessEnvironment environment = cliEnvironment();
        environment.insert(QStringLiteral("MANTISSA_DB"), path);
        const CliResult r = runCli(
            {QStringLiteral("train"), m_config, QStringLiteral("--max-steps"), QStringLiteral("2")}, environment);
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(r.err.contains(path), qPrintable(r.describe()));
        storage::RunStore store(path);
        QCOMPARE(store.listRuns().size(), 1);
    }

    // libgomp only reads its wait policy when it loads, so the CLI re-executes itself with
    // OMP_WAIT_POLICY=passive when the machine is busy as it starts (else libgomp spins), unless
    // the user chose a policy; the run records which one held.
    void trainRecordsItsOpenMpWaitPolicyAndKeepsTheUsersChoice()
    {
        const QString db = m_dir.filePath(QStringLiteral("wait-policy.sqlite"));
        const auto waitsOfRunTrainedWith = [&](const QString& variable, const QString& value) {
            QProcessEnvironment environment = cliEnvironment();
            environment.remove(QStringLiteral("OMP_WAIT_POLICY"));
            environment.remove(QStringLiteral("GOMP_SPINCOUNT"));
            if (!variable.isEmpty())
                environment.insert(variable, value);
            const CliResult r = runCli({QStringLiteral("train"), m_config, QStringLiteral("--max-steps"),
                                        QStringLiteral("2"), QStringLiteral("--db"), db},
                                       environment);
            if (r.exitCode != 0)
                return r.describe();
            return storage::RunStore(db)
                .run(runIdFromStderr(r.err))
                .kernels.section(QStringLiteral("OpenMP waits: "), 1)
                .section(u'\n', 0, 0);
        };
        const QString chosen = waitsOfRunTrainedWith({}, {});
        QVERIFY2(chosen == QStringLiteral("passive") || chosen == QStringLiteral("spinning (libgomp's default)"),
                 qPrintable(chosen));
        QCOMPARE(waitsOfRunTrainedWith(QStringLiteral("OMP_WAIT_POLICY"), QStringLiteral("ACTIVE")),
                 QStringLiteral("active"));
        QCOMPARE(waitsOfRunTrainedWith(QStringLiteral("GOMP_SPINCOUNT"), QStringLiteral("1000")),
                 QStringLiteral("spin count 1000"));
    }

    void runsFiltersAndLimits()
    {
        const QString db = m_dir.filePath(QStringLiteral("filters.sqlite"));
        for (const char* precision : {"fp32", "bf16", "bf16"}) {
            const CliResult r =
                runCli({QStringLiteral("train"), m_config, QStringLiteral("--precision"), QLatin1String(precision),
                        QStringLiteral("--max-steps"), QStringLiteral("2"), QStringLiteral("--db"), db});
            QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        }
        auto names = [&](const QStringList& filter) {
            const CliResult r = runCli(QStringList{QStringLiteral("runs"), QStringLiteral("--db"), db} + filter);
            QStringList found;
            for (const QString& line : r.outLines().mid(1)) // after the header
                found << line.simplified().section(u' ', 1, 1);
            return found;
        };
        QCOMPARE(names({}), (QStringList{"tiny-bf16-2", "tiny-bf16-1", "tiny-fp32-1"}));
        QCOMPARE(names({QStringLiteral("--precision"), QStringLiteral("fp32")}), QStringList{"tiny-fp32-1"});
        QCOMPARE(names({QStringLiteral("--limit"), QStringLiteral("1")}), QStringList{"tiny-bf16-2"});
        QCOMPARE(names({QStringLiteral("--status"), QStringLiteral("diverged")}), QStringList{});
        QCOMPARE(names({QStringLiteral("--preset"), QStringLiteral("tiny"), QStringLiteral("--status"),
                        QStringLiteral("finished")})
                     .size(),
                 3);
        const CliResult bad = runCli(
            {QStringLiteral("runs"), QStringLiteral("--db"), db, QStringLiteral("--status"), QStringLiteral("done")});
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.contains(QStringLiteral("--status")), qPrintable(bad.describe()));
    }

    void showPrintsSummaryEpochsAndOverflowEvents()
    {
        const CliResult train = runCli({QStringLiteral("train"), m_overflowConfig, QStringLiteral("--db"), m_db});
        QVERIFY2(train.exitCode == 0, qPrintable(train.describe()));
        const qint64 id = train.json().value(QStringLiteral("run_id")).toInteger();
        storage::RunStore store(m_db);
        qsizetype overflows = 0;
        QString firstParameter;
        for (const EventRecord& e : store.events(id)) {
            if (e.kind == EventKind::Overflow && overflows++ == 0)
                firstParameter = QString::fromStdString(e.parameter);
        }
        QVERIFY2(overflows > 0, "a loss scale of 2^24 should overflow fp16 gradients");

        const CliResult show = runCli({QStringLiteral("show"), QString::number(id), QStringLiteral("--db"), m_db});
        QVERIFY2(show.exitCode == 0, qPrintable(show.describe()));
        for (const QString& expected :
             {QStringLiteral("run %1: overflow-mixed-fp16-1").arg(id),
              QStringLiteral("mixed-fp16, loss scaling dynamic"), QStringLiteral("epochs\n"),
              QStringLiteral("%1 overflow").arg(overflows), QStringLiteral("non-finite gradient in ") + firstParameter,
              QStringLiteral("finished")}) {
            QVERIFY2(show.out.contains(expected), qPrintable(expected + QStringLiteral(" missing from\n") + show.out));
        }
        QCOMPARE(showField(show.out, QStringLiteral("status")), QStringLiteral("finished"));
        // By name as well as by id; --config prints JSON that train accepts.
        const CliResult config = runCli({QStringLiteral("show"), QStringLiteral("overflow-mixed-fp16-1"),
                                         QStringLiteral("--config"), QStringLiteral("--db"), m_db});
        QVERIFY2(config.exitCode == 0, qPrintable(config.describe()));
        QVERIFY(QJsonDocument::fromJson(config.out.toUtf8()).isObject());
    }

    // A 16-bit run names its misaligned extents (the tiny model's 4 classes, a batch of 20) on
    // stderr and in `show`, while stdout's last line stays the JSON summary; fp32 gets no advice.
    void trainAndShowGiveTheTensorCoreAdviceOfSixteenBitRuns()
    {
        const QString db = m_dir.filePath(QStringLiteral("advice.sqlite"));
        const QString layerAdvice = QStringLiteral("layer 1 (linear), fp16: out features = 4 is not a multiple of 8");
        const QString batchAdvice = QStringLiteral("batch size 20 is not a multiple of 8");
        const auto train = [&](const QString& precision) {
            return runCli({QStringLiteral("train"), m_config, QStringLiteral("--precision"), precision,
                           QStringLiteral("--batch-size"), QStringLiteral("20"), QStringLiteral("--max-steps"),
                           QStringLiteral("2"), QStringLiteral("--db"), db});
        };
        const auto show = [&](const CliResult& trained) {
            return runCli({QStringLiteral("show"),
                           QString::number(trained.json().value(QStringLiteral("run_id")).toInteger()),
                           QStringLiteral("--db"), db});
        };

        const CliResult mixed = train(QStringLiteral("mixed-fp16"));
        QVERIFY2(mixed.exitCode == 0, qPrintable(mixed.describe()));
        QVERIFY2(mixed.err.contains(QStringLiteral("tensor cores: ") + layerAdvice), qPrintable(mixed.describe()));
        QVERIFY2(mixed.err.contains(QStringLiteral("tensor cores: ") + batchAdvice) &&
                     mixed.err.contains(QStringLiteral("16 or 24 would use them fully")),
                 qPrintable(mixed.describe()));
        QVERIFY2(!mixed.out.contains(QStringLiteral("tensor cores")), qPrintable(mixed.describe()));
        QCOMPARE(mixed.json().value(QStringLiteral("status")).toString(), QStringLiteral("finished"));
        const CliResult mixedShow = show(mixed);
        QVERIFY2(mixedShow.exitCode == 0, qPrintable(mixedShow.describe()));
        QVERIFY2(mixedShow.out.contains(QStringLiteral("\ntensor cores\n  ") + layerAdvice) &&
                     mixedShow.out.contains(QStringLiteral("\n  ") + batchAdvice),
                 qPrintable(mixedShow.out));

        const CliResult fp32 = train(QStringLiteral("fp32"));
        QVERIFY2(fp32.exitCode == 0, qPrintable(fp32.describe()));
        QVERIFY2(!fp32.err.contains(QStringLiteral("tensor cores")), qPrintable(fp32.describe()));
        const CliResult fp32Show = show(fp32);
        QVERIFY2(fp32Show.exitCode == 0, qPrintable(fp32Show.describe()));
        QVERIFY2(!fp32Show.out.contains(QStringLiteral("tensor cores")), qPrintable(fp32Show.out));
    }

    void exportCsvHasOneRowPerStoredStep()
    {
        const CliResult train = runCli({QStringLiteral("train"), m_config, QStringLiteral("--epochs"),
                                        QStringLiteral("2"), QStringLiteral("--db"), m_db});
        QVERIFY2(train.exitCode == 0, qPrintable(train.describe()));
        const qint64 id = train.json().value(QStringLiteral("run_id")).toInteger();
        storage::RunStore store(m_db);
        const qsizetype steps = store.steps(id).size();
        QCOMPARE(steps, 32);

        const CliResult csv = runCli({QStringLiteral("export"), QString::number(id), QStringLiteral("--format"),
                                      QStringLiteral("csv"), QStringLiteral("--db"), m_db});
        QVERIFY2(csv.exitCode == 0, qPrintable(csv.describe()));
        QCOMPARE(countLines(csv.out.toUtf8()), 1 + steps);
        QVERIFY(csv.out.startsWith(QStringLiteral("step,epoch,loss,")));

        const QString file = m_dir.filePath(QStringLiteral("export/run.csv"));
        QDir().mkpath(QFileInfo(file).absolutePath());
        const CliResult files =
            runCli({QStringLiteral("export"), QString::number(id), QStringLiteral("--format"), QStringLiteral("csv"),
                    QStringLiteral("-o"), file, QStringLiteral("--db"), m_db});
        QVERIFY2(files.exitCode == 0, qPrintable(files.describe()));
        QCOMPARE(countLines(readFile(file)), 1 + steps);
        QCOMPARE(countLines(readFile(m_dir.filePath(QStringLiteral("export/run-epochs.csv")))), 1 + 2);
    }

    void exportJsonParses()
    {
        const qint64 id = storage::RunStore(m_db).listRuns().first().id;
        const qsizetype steps = storage::RunStore(m_db).steps(id).size();
        const QString file = m_dir.filePath(QStringLiteral("run.json"));
        const CliResult r = runCli({QStringLiteral("export"), QString::number(id), QStringLiteral("--format"),
                                    QStringLiteral("json"), QStringLiteral("-o"), file, QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QJsonParseError error;
        const QJsonDocument document = QJsonDocument::fromJson(readFile(file), &error);
        QVERIFY2(error.error == QJsonParseError::NoError, qPrintable(error.errorString()));
        QCOMPARE(document.object().value(QStringLiteral("steps")).toArray().size(), steps);
        QVERIFY(document.object().contains(QStringLiteral("epochs")));

        const CliResult stdoutJson = runCli({QStringLiteral("export"), QString::number(id), QStringLiteral("--format"),
                                             QStringLiteral("json"), QStringLiteral("--db"), m_db});
        QVERIFY2(stdoutJson.exitCode == 0, qPrintable(stdoutJson.describe()));
        QCOMPARE(
            QJsonDocument::fromJson(stdoutJson.out.toUtf8()).object().value(QStringLiteral("steps")).toArray().size(),
            steps);
    }

    void noteAndTagShowUp()
    {
        const QString name = storage::RunStore(m_db).listRuns().first().name;
        auto run = [&](const QStringList& arguments) {
            const CliResult r = runCli(arguments + QStringList{QStringLiteral("--db"), m_db});
            return r.exitCode == 0 ? r.out : QStringLiteral("FAILED: ") + r.describe();
        };
        QVERIFY(
            !run({QStringLiteral("note"), name, QStringLiteral("lr"), QStringLiteral("too"), QStringLiteral("high?")})
                 .startsWith(QStringLiteral("FAILED")));
        QVERIFY(!run({QStringLiteral("tag"), name, QStringLiteral("paper"), QStringLiteral("baseline")})
                     .startsWith(QStringLiteral("FAILED")));
        QVERIFY(!run({QStringLiteral("tag"), name, QStringLiteral("baseline"), QStringLiteral("--remove")})
                     .startsWith(QStringLiteral("FAILED")));
        const QString show = run({QStringLiteral("show"), name});
        QCOMPARE(showField(show, QStringLiteral("notes")), QStringLiteral("lr too high?"));
        QCOMPARE(showField(show, QStringLiteral("tags")), QStringLiteral("paper"));
        const QString tagged = run({QStringLiteral("runs"), QStringLiteral("--tag"), QStringLiteral("paper")});
        QVERIFY2(tagged.contains(name), qPrintable(tagged));
    }

    void deleteRemovesTheRun()
    {
        const CliResult train =
            runCli({QStringLiteral("train"), m_config, QStringLiteral("--max-steps"), QStringLiteral("2"),
                    QStringLiteral("--name"), QStringLiteral("doomed"), QStringLiteral("--db"), m_db});
        QVERIFY2(train.exitCode == 0, qPrintable(train.describe()));
        const CliResult deleted =
            runCli({QStringLiteral("delete"), QStringLiteral("doomed"), QStringLiteral("--db"), m_db});
        QVERIFY2(deleted.exitCode == 0, qPrintable(deleted.describe()));
        const CliResult runs = runCli({QStringLiteral("runs"), QStringLiteral("--db"), m_db});
        QVERIFY2(!runs.out.contains(QStringLiteral("doomed")), qPrintable(runs.describe()));
        const CliResult show = runCli({QStringLiteral("show"), QStringLiteral("doomed"), QStringLiteral("--db"), m_db});
        QCOMPARE(show.exitCode, 2);
    }

    void unknownRunIsExitCode2_data()
    {
        QTest::addColumn<QStringList>("arguments");
        for (const QString& run : {QStringLiteral("9999"), QStringLiteral("no-such-run")}) {
            QTest::addRow("show %s", qPrintable(run)) << QStringList{QStringLiteral("show"), run};
            QTest::addRow("export %s", qPrintable(run))
                << QStringList{QStringLiteral("export"), run, QStringLiteral("--format"), QStringLiteral("csv")};
            QTest::addRow("delete %s", qPrintable(run)) << QStringList{QStringLiteral("delete"), run};
            QTest::addRow("note %s", qPrintable(run))
                << QStringList{QStringLiteral("note"), run, QStringLiteral("text")};
            QTest::addRow("tag %s", qPrintable(run)) << QStringList{QStringLiteral("tag"), run, QStringLiteral("t")};
        }
    }
    void unknownRunIsExitCode2()
    {
        QFETCH(QStringList, arguments);
        const CliResult r = runCli(arguments + QStringList{QStringLiteral("--db"), m_db});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(QStringLiteral("no run \"%1\"").arg(arguments[1])), qPrintable(r.describe()));
        QVERIFY2(r.err.contains(m_db), qPrintable(r.describe()));
        QVERIFY(r.out.isEmpty());
    }

private:
    QTemporaryDir m_dir;
    QString m_db, m_config, m_overflowConfig;
};

QTEST_GUILESS_MAIN(CliRunsTest)
#include "cli_runs_test.moc"
