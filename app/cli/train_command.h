#pragma once
#include <QStringList>

namespace mantissa::cli {

// `mantissa-cli train ...`; returns the process exit code: 0 finished (or stopped by the
// user), 1 diverged or failed, 2 bad input.
int runTrainCommand(const QStringList& arguments);

} // namespace mantissa::cli
