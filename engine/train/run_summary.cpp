#include "engine/train/run_summary.h"

#include <array>

namespace mantissa {

namespace {
constexpr std::array kStatuses{RunStatus::Running,  RunStatus::Finished, RunStatus::Stopped,
                               RunStatus::Diverged, RunStatus::Failed,   RunStatus::Interrupted};
}

const char* runStatusName(RunStatus status)
{
    switch (status) {
    case RunStatus::Running: return "running";
    case RunStatus::Finished: return "finished";
    case RunStatus::Stopped: return "stopped";
    case RunStatus::Diverged: return "diverged";
    case RunStatus::Failed: return "failed";
    case RunStatus::Interrupted: return "interrupted";
    }
    return "?";
}

std::optional<RunStatus> parseRunStatus(std::string_view name)
{
    for (RunStatus status : kStatuses) {
        if (name == runStatusName(status))
            return status;
    }
    return std::nullopt;
}

} // namespace mantissa
