// mantissa-cli study on a tiny study over the mlp preset (a few steps on a slice of the data):
// trained arms and a fork arm run, a second start runs only what is missing, results from an
// older build are flagged in the report, and bad input (an unknown field, an arm that cannot
// run) is refused before anything runs.
#include "cli_test_support.h"
#include "storage/run_store.h"
#include "test_support.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

using namespace mantissa;
using namespace mantissa::cli::test;

namespace {

QString writeStudy(const QString& dir, const QString& arms, const QString& extra = {})
{
    const QString path = QDir(dir).filePath(QStringLiteral("tiny-study.json"));
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return {};
    file.write(QStringLiteral(R"({"name": "tiny-study", "claim": {"text": "bf16 trains as fp32 does",
        "citation": "A. Author 2020"},
      "base": "mlp", "set": {"training.max_steps": 4, "data.limit_train": 512, "data.limit_test": 128},
      "arms": %1, "seeds": 2, "metrics": ["final_train_loss"], "margins": {"final_train_loss": 0.5},
      "expect": [{"arm": "bf16", "against": "fp32", "metric": "final_train_loss", "verdict": "equivalent"}]%2})")
                   .arg(arms, extra)
                   .toUtf8());
    return path;
}

const QString kArms = QStringLiteral(R"([{"name": "fp32", "set": {"precision.mode": "fp32"}},
    {"name": "bf16", "set": {"precision.mode": "mixed-bf16"}},
    {"name": "late fp32", "fork": {"arm": "bf16", "at": 0.5, "set": {"precision.mode": "fp32"}}}])");

// "N of M runs to train, K fork(s) to run" from the study's first line.
QString plannedWork(const CliResult& result)
{
    const QRegularExpressionMatch m =
        QRegularExpression(QStringLiteral("(\\d+ of \\d+ runs to train, \\d+ fork\\(s\\) to run)")).match(result.err);
    return m.hasMatch() ? m.captured(1) : QString();
}

} // namespace

class CliStudyTest : public QObject {
    Q_OBJECT

private slots:
    void init()
    {
        m_dir = std::make_unique<QTemporaryDir>();
        QVERIFY(m_dir->isValid());
        m_db = m_dir->filePath(QStringLiteral("runs.sqlite"));
    }

    void runsArmsAndForksThenOnlyWhatIsMissing()
    {
        const QString spec = writeStudy(m_dir->path(), kArms);
        CliResult first = runCli({QStringLiteral("study"), spec, QStringLiteral("--jobs"), QStringLiteral("2"),
                                  QStringLiteral("--db"), m_db});
        QVERIFY2(first.exitCode == 0, qPrintable(first.describe()));
        QCOMPARE(plannedWork(first), QStringLiteral("4 of 4 runs to train, 2 fork(s) to run"));
        QVERIFY2(first.out.contains(QStringLiteral("| late fp32 | 2 of 2 |")), qPrintable(first.out));
        QVERIFY2(first.out.contains(QStringLiteral("**Result: ")), qPrintable(first.out));

        storage::RunStore store(m_db);
        QList<storage::RunInfo> runs = store.listRuns();
        QCOMPARE(runs.size(), 6);
        int forks = 0;
        for (const storage::RunInfo& run : runs)
            if (run.parent) {
                ++forks;
                QCOMPARE(run.parent->step, qint64(2));
                QCOMPARE(run.precision, QStringLiteral("fp32"));
                QCOMPARE(run.tags.size(), 1);
                QVERIFY(run.tags.first().startsWith(QStringLiteral("study:tiny-study:")));
            }
        QCOMPARE(forks, 2);

        const CliResult again = runCli({QStringLiteral("study"), spec, QStringLiteral("--db"), m_db});
        QVERIFY2(again.exitCode == 0, qPrintable(again.describe()));
        QCOMPARE(plannedWork(again), QStringLiteral("0 of 4 runs to train, 0 fork(s) to run"));
        QCOMPARE(store.listRuns().size(), 6);

        // One trained run and one fork lost: exactly those two run again.
        qint64 trained = 0, fork = 0;
        for (const storage::RunInfo& run : store.listRuns()) {
            if (run.sweepIndex == 1)
                trained = run.id;
            if (run.parent && !fork)
                fork = run.id;
        }
        QVERIFY(trained && fork);
        for (const qint64 id : {trained, fork}) {
            const CliResult deleted =
                runCli({QStringLiteral("delete"), QString::number(id), QStringLiteral("--db"), m_db});
            QVERIFY2(deleted.exitCode == 0, qPrintable(deleted.describe()));
        }
        const CliResult resumed = runCli({QStringLiteral("study"), spec, QStringLiteral("--db"), m_db});
        QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.describe()));
        QCOMPARE(plannedWork(resumed), QStringLiteral("1 of 4 runs to train, 1 fork(s) to run"));
        QCOMPARE(store.listRuns().size(), 6);
    }

    // Without a cluster: --dry-run writes both job arrays' scripts, with the same #SBATCH
    // options, the fork tasks described in forks.json with their parents' places in the sweep.
    void slurmDryRunWritesBothArrays()
    {
        const QString spec = writeStudy(m_dir->path(), kArms);
        const QString out = m_dir->filePath(QStringLiteral("out"));
        const CliResult dry = runCli(
            {QStringLiteral("study"), spec, QStringLiteral("--slurm"), QStringLiteral("--out"), out,
             QStringLiteral("--partition"), QStringLiteral("gpu"), QStringLiteral("--time"), QStringLiteral("0:10:00"),
             QStringLiteral("--max-parallel"), QStringLiteral("3"), QStringLiteral("--dry-run")});
        QVERIFY2(dry.exitCode == 0, qPrintable(dry.describe()));
        QCOMPARE(dry.json().value(QStringLiteral("submitted")).toInt(), 4);
        QCOMPARE(dry.json().value(QStringLiteral("forks_submitted")).toInt(), 2);
        QVERIFY(!dry.json().contains(QStringLiteral("job_id")));
        const auto read = [&](const QString& name) {
            QFile file(QDir(out).filePath(name));
            return file.open(QIODevice::ReadOnly) ? QString::fromUtf8(file.readAll()) : QString();
        };
        const QString trained = read(QStringLiteral("sweep.sbatch")), forks = read(QStringLiteral("forks.sbatch"));
        for (const QString& line :
             {QStringLiteral("#SBATCH --partition=gpu\n"), QStringLiteral("#SBATCH --time=0:10:00\n"),
              QStringLiteral("#SBATCH --cpus-per-task=1\n")}) {
            QVERIFY2(trained.contains(line), qPrintable(trained));
            QVERIFY2(forks.contains(line), qPrintable(forks));
        }
        QVERIFY2(trained.contains(QStringLiteral("#SBATCH --array=0-3%3\n")), qPrintable(trained));
        QVERIFY2(forks.contains(QStringLiteral("#SBATCH --array=0-1%3\n")) &&
                     forks.contains(QStringLiteral("/logs/fork-%a.out\n")) &&
                     forks.contains(QStringLiteral(" study-fork-worker --tasks ")),
                 qPrintable(forks));
        // The fork arm continues "bf16", the sweep's second arm: runs 2 and 3 (seeds 0 and 1).
        const QJsonObject json = QJsonDocument::fromJson(read(QStringLiteral("forks.json")).toUtf8()).object();
        const QJsonArray list = json.value(QStringLiteral("forks")).toArray();
        QCOMPARE(list.size(), 2);
        for (int k = 0; k < 2; ++k) {
            const QJsonObject fork = list[k].toObject();
            QCOMPARE(fork.value(QStringLiteral("arm")).toString(), QStringLiteral("late fp32"));
            QCOMPARE(fork.value(QStringLiteral("parent_arm")).toString(), QStringLiteral("bf16"));
            QCOMPARE(fork.value(QStringLiteral("seed")).toInt(), k);
            QCOMPARE(fork.value(QStringLiteral("parent_index")).toInt(), 2 + k);
            QCOMPARE(fork.value(QStringLiteral("step")).toInt(), 2);
        }
        QCOMPARE(json.value(QStringLiteral("sweep_uid")).toString(),
                 dry.json().value(QStringLiteral("sweep_uid")).toString());
    }

    void resultsOfAnOlderBuildAreFlagged()
    {
        const QString spec = writeStudy(m_dir->path(), kArms);
        const CliResult ran = runCli({QStringLiteral("study"), spec, QStringLiteral("--jobs"), QStringLiteral("2"),
                                      QStringLiteral("--db"), m_db});
        QVERIFY2(ran.exitCode == 0, qPrintable(ran.describe()));
        QVERIFY2(ran.out.contains(QStringLiteral("Every run was recorded by Mantissa")), qPrintable(ran.out));
        {
            storage::test::RawDatabase raw(m_db);
            QVERIFY(raw.exec(QStringLiteral("UPDATE runs SET engine_version = '0.0.1' WHERE id = 1")));
        }
        const QString report = m_dir->filePath(QStringLiteral("report.md"));
        const CliResult reported = runCli({QStringLiteral("study"), spec, QStringLiteral("--no-run"),
                                           QStringLiteral("--report"), report, QStringLiteral("--db"), m_db});
        QVERIFY2(reported.exitCode == 0, qPrintable(reported.describe()));
        QVERIFY2(reported.out.contains(QStringLiteral("the results mix builds")), qPrintable(reported.out));
        QVERIFY2(reported.out.contains(QStringLiteral("0.0.1 (1 runs)")), qPrintable(reported.out));
        QFile file(report);
        QVERIFY(file.open(QIODevice::ReadOnly));
        QCOMPARE(QString::fromUtf8(file.readAll()), reported.out);
    }

    void armsThatCannotRunAreNamedBeforeAnythingRuns()
    {
        const QString spec = writeStudy(m_dir->path(), QStringLiteral(R"([
            {"name": "fp32", "set": {"precision.mode": "fp32"}},
            {"name": "bf16", "set": {"precision.mode": "nvfp4", "model.layers[1].units": 1000}},
            {"name": "late fp32", "fork": {"arm": "fp32", "at": 0.5, "set": {"optimizer.nope": 1}}}])"));
        const CliResult result = runCli({QStringLiteral("study"), spec, QStringLiteral("--db"), m_db});
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(QStringLiteral("2 arm(s) cannot run; nothing was run")), qPrintable(result.err));
        QVERIFY2(result.err.contains(QStringLiteral("arm bf16: ")), qPrintable(result.err));
        QVERIFY2(result.err.contains(QStringLiteral("multiple of 16")) ||
                     result.err.contains(QStringLiteral("16 along K")),
                 qPrintable(result.err));
        QVERIFY2(result.err.contains(QStringLiteral("arm late fp32: ")), qPrintable(result.err));
        QVERIFY2(result.err.contains(QStringLiteral("optimizer.nope")), qPrintable(result.err));
        QVERIFY(!QFile::exists(m_db));
    }

    void unknownFieldNamesTheFieldAndTheFile()
    {
        const QString spec = writeStudy(m_dir->path(), kArms, QStringLiteral(R"(, "seed": 3)"));
        const CliResult result = runCli({QStringLiteral("study"), spec, QStringLiteral("--db"), m_db});
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(spec + QStringLiteral(": seed is not a known field of a study spec")),
                 qPrintable(result.err));
        const CliResult unknown = runCli({QStringLiteral("study"), QStringLiteral("no-such-study")});
        QCOMPARE(unknown.exitCode, 2);
        QVERIFY2(unknown.err.contains(QStringLiteral("no study \"no-such-study\"")), qPrintable(unknown.err));
    }

private:
    std::unique_ptr<QTemporaryDir> m_dir;
    QString m_db;
};

QTEST_GUILESS_MAIN(CliStudyTest)
#include "cli_study_test.moc"
