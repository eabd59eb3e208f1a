#pragma once
// Starting the CLI under mpirun on this machine, for the tests with label mpi.
#include "cli_test_support.h"

#include <QStandardPaths>
#include <QStringList>

#include <unistd.h>

namespace mantissa::cli::test {

// Empty where Open MPI's launcher is not installed (Debian: openmpi-bin).
inline QString mpirun() { return QStandardPaths::findExecutable(QStringLiteral("mpirun")); }

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
