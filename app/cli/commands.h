#pragma once
// The subcommands of mantissa-cli, one file each. Every one takes the arguments with
// argv[0] first and the command word removed, and returns the process exit code
// (exit_codes.h).
#include <QStringList>

namespace mantissa::cli {

int runTrainCommand(const QStringList& arguments);       // train_command.cpp
int runForkCommand(const QStringList& arguments);        // fork_command.cpp
int runCompareCommand(const QStringList& arguments);     // compare_command.cpp
int runRunsCommand(const QStringList& arguments);        // runs_command.cpp
int runShowCommand(const QStringList& arguments);        // show_command.cpp
int runExportCommand(const QStringList& arguments);      // export_command.cpp
int runDeleteCommand(const QStringList& arguments);      // delete_command.cpp
int runNoteCommand(const QStringList& arguments);        // note_command.cpp
int runTagCommand(const QStringList& arguments);         // tag_command.cpp
int runNumericsCommand(const QStringList& arguments);    // numerics_command.cpp
int runReplayCommand(const QStringList& arguments);      // replay_command.cpp
int runSweepCommand(const QStringList& arguments);       // sweep_command.cpp
int runStudyCommand(const QStringList& arguments);       // study_command.cpp
int runSweepWorkerCommand(const QStringList& arguments); // sweep_worker_command.cpp (not listed in the usage)
int runImportCommand(const QStringList& arguments);      // import_command.cpp
int runFormatsCommand(const QStringList& arguments);     // formats_command.cpp
int runFieldsCommand(const QStringList& arguments);      // fields_command.cpp
int runQuantizeCommand(const QStringList& arguments);    // quantize_command.cpp
int runSampleCommand(const QStringList& arguments);      // sample_command.cpp
int runInspectCommand(const QStringList& arguments);     // inspect_command.cpp
int runDataCommand(const QStringList& arguments);        // data_command.cpp
int runExportModelCommand(const QStringList& arguments); // export_model_command.cpp
int runAdviseCommand(const QStringList& arguments);      // advise_command.cpp

// study_fork_worker_command.cpp, not listed in the usage: the fork tasks of `study --slurm` start it.
int runStudyForkWorkerCommand(const QStringList& arguments);

} // namespace mantissa::cli
