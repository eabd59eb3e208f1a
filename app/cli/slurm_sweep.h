#pragma once
// A sweep submitted to Slurm as a job array (slurm_job.h), for `sweep --slurm` and for a
// study's trained arms: started again on the same --out it submits only the runs without a
// result, keeping the sweep's uid. Says on stderr what it did.
#include "cli/slurm_job.h"

namespace mantissa::cli {

struct SlurmSweepSubmission {
    QString script; // empty when nothing was left to submit
    QString sweepUid;
    std::optional<SlurmSweepState> existing; // the state found in --out, when it held this sweep
    std::vector<int> tasks;                  // the run indices in the script
    QString jobId;                           // empty for a dry run or when nothing was submitted
    bool nothingToSubmit() const { return script.isEmpty(); }
};

// Writes DIR/sweep.json and DIR/sweep.sbatch and submits the script unless `dryRun`. Throws
// ConfigError (another sweep in DIR, a bad --out), IoError or Error (sbatch refused the job).
SlurmSweepSubmission submitSweepToSlurm(const SlurmOptions& options, const SweepSpec& spec, bool dryRun);

// "mantissa-cli import /abs/DIR": what to run once the jobs are done.
QString slurmImportHint(const SlurmOptions& options);

} // namespace mantissa::cli
