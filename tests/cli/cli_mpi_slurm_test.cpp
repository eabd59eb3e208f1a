// Data-parallel training launched by srun under the one-node Slurm cluster of the fixture
// slurm_cluster_start (tests/cli/slurm_cluster.sh): srun --mpi=pmix starts 2 ranks of
// mantissa-cli, which find each other through Slurm's PMIx and record one 2-rank run.
// Skips, with the reason, where the build has no MPI, the cluster could not start, or this
// Slurm has no PMIx plugin (Debian's Open MPI needs it: --mpi=pmi2 and none fail in MPI_Init).
#include "cli_test_support.h"
#include "slurm_test_cluster.h"
#include "storage/run_store.h"

#include <QFile>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

using namespace mantissa;
using namespace mantissa::cli::test;

namespace {

QProcessEnvironment mpiSlurmEnvironment()
{
    QProcessEnvironment environment = slurmEnvironment();
    // Open MPI refuses root (the test containers) unless told; srun has no option for it.
    environment.insert(QStringLiteral("OMPI_ALLOW_RUN_AS_ROOT"), QStringLiteral("1"));
    environment.insert(QStringLiteral("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"), QStringLiteral("1"));
    return environment;
}

} // namespace

class CliMpiSlurmTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
#ifndef MANTISSA_HAVE_MPI
        QSKIP("this build has no MPI (install libopenmpi-dev and reconfigure; scripts/setup does)");
#endif
        if (const QString why = slurmClusterMissing(QStringLiteral("cli_mpi_slurm_test")); !why.isEmpty())
            QSKIP(qPrintable(why));
        const CliResult plugins = runProgram(QStandardPaths::findExecutable(QStringLiteral("srun")),
                                             {QStringLiteral("--mpi=list")}, mpiSlurmEnvironment(), 30000);
        if (!(plugins.out + plugins.err).contains(QStringLiteral("pmix")))
            QSKIP(qPrintable(QStringLiteral("this Slurm has no PMIx plugin, which Debian's Open MPI needs under "
                                            "srun (srun --mpi=list: %1)")
                                 .arg((plugins.out + plugins.err).simplified())));
    }

    // srun -n 2 --mpi=pmix: one run of world size 2 with both ranks' throughput, recorded by rank 0.
    void srunStartsTwoRanksOfOneRun()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString config = writeTinyConfig(dir.path());
        const QString db = dir.filePath(QStringLiteral("runs.sqlite"));
        const CliResult result = runProgram(QStandardPaths::findExecutable(QStringLiteral("srun")),
                                            {QStringLiteral("--mpi=pmix"), QStringLiteral("-n"), QStringLiteral("2"),
                                             QStringLiteral("--overcommit"), cliPath(), QStringLiteral("train"), config,
                                             QStringLiteral("--db"), db},
                                            mpiSlurmEnvironment(), 180000);
        QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
        QVERIFY2(result.err.contains(QStringLiteral("rank 1 of 2 is pid")), qPrintable(result.describe()));
        const storage::RunStore store(db);
        const QList<storage::RunInfo> runs = store.listRuns();
        QCOMPARE(runs.size(), 1);
        QCOMPARE(runs.first().status, RunStatus::Finished);
        QCOMPARE(runs.first().worldSize, 2);
        QCOMPARE(store.rankThroughput(runs.first().id).size(), 2);
        QCOMPARE(store.steps(runs.first().id).size(), 16);
    }
};

QTEST_GUILESS_MAIN(CliMpiSlurmTest)
#include "cli_mpi_slurm_test.moc"
