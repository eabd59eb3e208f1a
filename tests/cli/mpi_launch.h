#pragma once
// Starting the CLI under mpirun on this machine, for the tests with label mpi.
#include "cli_test_support.h"

#include <QStandardPaths>
#include <QStringList>

#include <unistd.h>

namespace mantissa::cli::test {

// Empty where Open MPI's launcher is not installed (Debian: openmpi-bin).
inline QString mpirun() { return QStandardPaths::findExecutable(QStringLiteral("mpirun")); }

// Why the mpi tests cannot run here, or empty when they can: a build without MPI, or no mpirun.
inline QString mpiSkipReason()
{
#ifndef MANTISSA_HAVE_MPI
    return QStringLiteral("this build has no MPI (install libopenmpi-dev and reconfigure; scripts/setup does)");
#else
    if (mpirun().isEmpty())
        return QStringLiteral("mpirun is not on PATH (Debian: openmpi-bin)");
    return {};
#endif
}

// mpirun's own options: two ranks on two cores need --oversubscribe when other work holds
// a core, and Open MPI refuses root (CI containers) unless told.
inline QStringList launchOptions()
{
    QStringList options{QStringLiteral("--oversubscribe")};
    if (geteuid() == 0)
        options << QStringLiteral("--allow-run-as-root");
    return options;
}

// mpirun's arguments for `ranks` ranks of mantissa-cli with `cliArguments`.
inline QStringList onRanks(int ranks, const QStringList& cliArguments)
{
    return launchOptions() + QStringList{QStringLiteral("-np"), QString::number(ranks), cliPath()} + cliArguments;
}

} // namespace mantissa::cli::test
