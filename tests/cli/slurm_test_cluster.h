#pragma once
// The one-node Slurm cluster that the CTest fixture slurm_cluster.sh starts for the Slurm tests
// (its folder is MANTISSA_SLURM_DIR, set per test target): how a test reaches it and why it
// may be missing, stated once for every test that submits jobs.
#include "cli_test_support.h"

#include <QFile>
#include <QProcessEnvironment>
#include <QString>

namespace mantissa::cli::test {

inline QString slurmClusterDir() { return QStringLiteral(MANTISSA_SLURM_DIR); }

// The CLI's test environment, with SLURM_CONF naming the cluster's configuration.
inline QProcessEnvironment slurmEnvironment()
{
    QProcessEnvironment environment = cliEnvironment();
    environment.insert(QStringLiteral("SLURM_CONF"), slurmClusterDir() + QStringLiteral("/slurm.conf"));
    return environment;
}

// Why `test` cannot use the cluster (the fixture's own reason, or that the fixture did not
// run); empty when it can.
inline QString slurmClusterMissing(const QString& test)
{
    QFile reason(slurmClusterDir() + QStringLiteral("/skip-reason"));
    if (reason.open(QIODevice::ReadOnly))
        return QStringLiteral("no Slurm cluster: ") + QString::fromUtf8(reason.readAll()).trimmed();
    if (!QFile::exists(slurmClusterDir() + QStringLiteral("/slurm.conf")))
        return QStringLiteral("no Slurm cluster: the fixture slurm_cluster_start did not run (ctest -R %1 runs it)")
            .arg(test);
    return {};
}

} // namespace mantissa::cli::test
