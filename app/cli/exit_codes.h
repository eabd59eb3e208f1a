#pragma once
// The exit codes of every mantissa-cli command, so that scripts can tell a run that went
// wrong from a command that was used wrongly.
namespace mantissa::cli {

enum ExitCode : int {
    kExitOk = 0,        // done; a training run finished or was stopped by the user
    kExitRunFailed = 1, // a training run diverged or failed (its status says which)
    kExitBadInput = 2,  // bad options or config, unknown run, unusable database
};

} // namespace mantissa::cli
