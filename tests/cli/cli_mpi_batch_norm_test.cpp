// Batch norm under mpirun (label mpi): the cnn preset (two batch-norm layers) on 2 ranks with
// half the batch each, against 1 rank with the whole batch. Synchronised batch norm follows the
// 1-rank loss curve within fp32 rounding and keeps the ranks' running statistics identical;
// per-rank batch norm measurably does neither. Skipped, with the reason, where this build has
// no MPI, mpirun is missing or Fashion-MNIST is not installed.
#include "cli_test_support.h"
#include "mpi_launch.h"
#include "storage/run_store.h"

#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

using namespace mantissa;
using namespace mantissa::cli::test;

namespace {

constexpr int kSteps = 20;

// The cnn preset cut to kSteps steps of batch 64 on 1 CPU thread per rank.
QStringList cnnArguments(const QString& db)
{
    return {QStringLiteral("train"),
            QStringLiteral("--preset"),
            QStringLiteral("cnn"),
            QStringLiteral("--db"),
            db,
            QStringLiteral("--batch-size"),
            QStringLiteral("64"),
            QStringLiteral("--max-steps"),
            QString::number(kSteps),
            QStringLiteral("--epochs"),
            QStringLiteral("1"),
            QStringLiteral("--limit-train"),
            QStringLiteral("2048"),
            QStringLiteral("--limit-test"),
            QStringLiteral("256"),
            QStringLiteral("--threads"),
            QStringLiteral("1")};
}

struct Curve {
    storage::StepSeries steps;
    QString finished; // the finished event's message
};

Curve onlyRun(const QString& db)
{
    const storage::RunStore store(db);
    const QList<storage::RunInfo> runs = store.listRuns();
    if (runs.size() != 1 || runs.first().status != RunStatus::Finished)
        return {};
    Curve curve{store.steps(runs.first().id), {}};
    for (const EventRecord& e : store.events(runs.first().id))
        if (e.kind == EventKind::Finished)
            curve.finished = QString::fromStdString(e.message);
    return curve;
}

double largestRelativeDifference(const storage::StepSeries& a, const storage::StepSeries& b)
{
    double worst = 0;
    for (qsizetype i = 0; i < std::min(a.size(), b.size()); ++i)
        worst = std::max(worst, std::fabs(a.loss[i] - b.loss[i]) / std::fabs(a.loss[i]));
    return worst;
}

} // namespace

class CliMpiBatchNormTest : public QObject {
    Q_OBJECT

private slots:
    void init()
    {
#ifndef MANTISSA_HAVE_MPI
        QSKIP("this build has no MPI (install libopenmpi-dev and reconfigure; scripts/setup does)");
#endif
        if (mpirun().isEmpty())
            QSKIP("mpirun is not on PATH (Debian: openmpi-bin)");
        if (!QFileInfo::exists(QStringLiteral("/usr/share/datasets/fashion-mnist")))
            QSKIP("the cnn preset trains on Fashion-MNIST, which is not installed (Debian: dataset-fashion-mnist)");
        QVERIFY(m_dir.isValid());
    }

    // One rank with batch 64 against two with 32 each, synchronised and per rank. Tolerance,
    // calibrated on this machine (3 runs, the same figures each time): synchronised, the 20
    // losses differ by at most 1.95e-6 relative (the statistics' partial sums cross the ranks
    // rounded to fp32 and the gradients are summed in another order, each ~1e-7, compounding
    // over the steps); 1e-4 leaves 50 times that for other CPUs. Per-rank statistics (each
    // half-batch normalised by its own mean and variance) move the curve by 1.94e-2, which the
    // 1e-3 bound below catches with a factor 19 to spare.
    void synchronisedFollowsOneRankAndPerRankDoesNot()
    {
        const QString one = m_dir.filePath(QStringLiteral("one.db"));
        const CliResult single = runCli(cnnArguments(one));
        QVERIFY2(single.exitCode == 0, qPrintable(single.describe()));
        const Curve reference = onlyRun(one);
        QCOMPARE(reference.steps.size(), kSteps);

        Curve curves[2];
        const QString settings[2] = {QStringLiteral("synchronised"), QStringLiteral("per-rank")};
        for (int i = 0; i < 2; ++i) {
            const QString db = m_dir.filePath(settings[i] + QStringLiteral(".db"));
            const CliResult pair =
                runProgram(mpirun(), onRanks(2, cnnArguments(db) << QStringLiteral("--batch-norm") << settings[i]));
            QVERIFY2(pair.exitCode == 0, qPrintable(pair.describe()));
            curves[i] = onlyRun(db);
            QCOMPARE(curves[i].steps.size(), kSteps);
        }
        const double synchronised = largestRelativeDifference(reference.steps, curves[0].steps);
        const double perRank = largestRelativeDifference(reference.steps, curves[1].steps);
        qInfo("largest relative loss difference from 1 rank: synchronised %.3g, per-rank %.3g", synchronised, perRank);
        QVERIFY2(synchronised < 1e-4, qPrintable(QStringLiteral("synchronised: %1").arg(synchronised)));
        QVERIFY2(perRank > 1e-3, qPrintable(QStringLiteral("per-rank: %1").arg(perRank)));

        // The ranks' running statistics, compared across ranks at the end of the run.
        QVERIFY2(curves[0].finished.contains(QStringLiteral("batch-norm running statistics identical on every rank")),
                 qPrintable(curves[0].finished));
        QVERIFY2(curves[1].finished.contains(QStringLiteral("batch-norm running statistics differ across ranks")),
                 qPrintable(curves[1].finished));

        // The setting is recorded with the run and named where the all-reduce settings are.
        const storage::RunStore store(m_dir.filePath(QStringLiteral("synchronised.db")));
        const qint64 id = store.listRuns().first().id;
        QVERIFY(store.run(id).configJson.contains(QStringLiteral("\"batch_norm\": \"synchronised\"")));
        const CliResult show = runCli({QStringLiteral("show"), QString::number(id), QStringLiteral("--db"),
                                       m_dir.filePath(QStringLiteral("synchronised.db"))});
        QCOMPARE(showField(show.out, QStringLiteral("distributed")),
                 QStringLiteral("2 ranks, all-reduce in fp32, sum-then-divide, batch norm synchronised"));
    }

    // A value that is not one names itself and the legal ones, before anything starts.
    void aWrongSettingIsRefused()
    {
        const QString db = m_dir.filePath(QStringLiteral("wrong.db"));
        const CliResult result = runProgram(
            mpirun(), onRanks(2, cnnArguments(db) << QStringLiteral("--batch-norm") << QStringLiteral("sync")));
        QVERIFY(result.exitCode != 0);
        QVERIFY2(result.err.contains(QStringLiteral("--batch-norm is \"sync\"; expected per-rank or synchronised")),
                 qPrintable(result.describe()));
        QCOMPARE(storage::RunStore(db).listRuns().size(), 0);
    }

private:
    QTemporaryDir m_dir;
};

QTEST_GUILESS_MAIN(CliMpiBatchNormTest)
#include "cli_mpi_batch_norm_test.moc"
