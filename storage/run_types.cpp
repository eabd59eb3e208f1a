#include "storage/run_types.h"

#include <array>

namespace mantissa::storage {

namespace {
constexpr std::array kStatuses{RunStatus::Running, RunStatus::Finished, RunStatus::Stopped,
                               RunStatus::Diverged, RunStatus::Failed, RunStatus::Interrupted};
}

QString runStatusName(RunStatus status)
{
    switch (status) {
    case RunStatus::Running: return QStringLiteral("running");
    case RunStatus::Finished: return QStringLiteral("finished");
    case RunStatus::Stopped: return QStringLiteral("stopped");
    case RunStatus::Diverged: return QStringLiteral("diverged");
    case RunStatus::Failed: return QStringLiteral("failed");
    case RunStatus::Interrupted: return QStringLiteral("interrupted");
    }
    return QStringLiteral("?");
}

std::optional<RunStatus> parseRunStatus(const QString& name)
{
    for (RunStatus status : kStatuses) {
        if (runStatusName(status) == name)
            return status;
    }
    return std::nullopt;
}

} // namespace mantissa::storage
