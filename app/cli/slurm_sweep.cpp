#include "cli/slurm_sweep.h"

#include "storage/db_values.h"

#include <QCoreApplication>
#include <QFileInfo>

#include <cstdio>
#include <numeric>

namespace mantissa::cli {

QString slurmImportHint(const SlurmOptions& options)
{
    return QStringLiteral("mantissa-cli import ") + QFileInfo(options.outDir).absoluteFilePath();
}

SlurmSweepSubmission submitSweepToSlurm(const SlurmOptions& options, const SweepSpec& spec, bool dryRun)
{
    SlurmSweepSubmission submission;
    submission.existing = existingSlurmSweep(options.outDir, spec);
    const std::optional<SlurmSweepState>& existing = submission.existing;
    submission.sweepUid = existing ? existing->sweepUid : storage::newUid();
    if (existing) {
        std::fprintf(stderr, "%s: resuming in %s: %zu of %zu runs done, %zu running, %zu to submit\n",
                     spec.name.c_str(), qPrintable(options.outDir), existing->done.size(), spec.runCount(),
                     existing->running.size(), existing->todo.size());
        if (existing->todo.empty()) {
            std::fprintf(stderr, "nothing to submit%s; %s\n",
                         existing->running.empty() ? "" : " (wait for the running ones)",
                         qPrintable(slurmImportHint(options)));
            return submission;
        }
        submission.tasks = existing->todo;
    } else {
        submission.tasks.resize(spec.runCount());
        std::iota(submission.tasks.begin(), submission.tasks.end(), 0);
    }
    submission.script = writeSlurmJob(options, spec, submission.sweepUid, QCoreApplication::applicationFilePath(),
                                      existing ? submission.tasks : std::vector<int>{});
    std::fprintf(stderr, "%s: %zu runs; job script %s\n", spec.name.c_str(), spec.runCount(),
                 qPrintable(submission.script));
    if (dryRun) {
        std::fputs("dry run: not submitted; submit it with sbatch\n", stderr);
    } else {
        submission.jobId = submitSlurmJob(submission.script);
        std::fprintf(stderr, "submitted job array %s\n", qPrintable(submission.jobId));
    }
    return submission;
}

} // namespace mantissa::cli
