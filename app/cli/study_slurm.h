#pragma once
// A study's fork arms on Slurm, after its trained arms (slurm_sweep.h): a second job array,
// DIR/forks.sbatch, submitted to start once the trained arms' array has ended
// (--dependency=afterany, so that one failed trained run does not hold back the forks of the
// others). Task k runs `mantissa-cli study-fork-worker` for fork k of DIR/forks.json (the
// study's plannedForks, self-contained): it takes its parent from the parent's task database
// DIR/runs/run-j.sqlite into its own, DIR/forks/fork-k.sqlite, and forks it there, tagged as
// a study tags its forks; a parent without a result fails the task with a message naming it.
// `mantissa-cli import DIR` then brings in both arrays' runs, the forks linked to their parents.
#include "cli/slurm_sweep.h"
#include "sweep/study_spec.h"

namespace mantissa::cli {

struct StudyForkSubmission {
    QString script;          // empty when no fork was submitted
    std::vector<int> tasks;  // the fork indices in the script
    std::size_t planned = 0; // forks the study plans
    std::size_t done = 0;    // with a result in their task database already
    std::size_t waiting = 0; // whose parent is still running from an earlier submission
    QString dependency;      // "afterany:JOB" when the trained arms' array was submitted now
    QString jobId;           // empty for a dry run or when nothing was submitted
};

// Writes DIR/forks.json and DIR/forks.sbatch for the forks without a result whose parent has
// a result or is in `trained`'s array, and submits the script (after `trained`'s job) unless
// `dryRun`. Throws ConfigError when DIR holds another study's forks, IoError, or Error (sbatch).
StudyForkSubmission submitStudyForksToSlurm(const SlurmOptions& options, const sweep::StudySpec& spec,
                                            const SlurmSweepSubmission& trained, bool dryRun);

// Fork task `index`'s database in `outDir`: forks/fork-INDEX.sqlite.
QString forkTaskDatabase(const QString& outDir, int index);

} // namespace mantissa::cli
