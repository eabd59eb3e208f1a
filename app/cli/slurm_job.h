#pragma once
// `mantissa-cli sweep ... --slurm --out DIR`: a Slurm job array for a sweep. DIR receives
// sweep.json (the self-contained spec), sweep.sbatch (--array=0-(N-1)%K; task i runs
// `mantissa-cli sweep-worker` for run i into runs/run-i.sqlite) and logs/. DIR must be on a
// file system the compute nodes share; `mantissa-cli import DIR` merges the runs afterwards.
#include "engine/sweep/sweep_spec.h"

#include <QString>
#include <QStringList>

#include <optional>
#include <vector>

class QCommandLineParser;

namespace mantissa::cli {

struct SlurmOptions {
    QString outDir;
    QString partition, time, mem; // empty: the cluster's defaults
    int gpusPerTask = 0;
    int cpusPerTask = 1;
    int maxParallel = 0; // 0: no limit
};

// The options every command that submits to Slurm takes (--slurm, --out, --partition, --time,
// --mem, --gpus-per-task, --cpus-per-task, --max-parallel, --dry-run), and what they say.
// `what` names the job ("the sweep", "the study"), for --slurm's help.
void addSlurmOptions(QCommandLineParser& parser, const QString& what);
// Throws ConfigError when --out is missing or a number is not positive.
SlurmOptions slurmOptionsFrom(const QCommandLineParser& parser);

// The #SBATCH lines of a job array: its name, its tasks (`array`, "0-3,7"; the --max-parallel
// limit is added here), where each task's output goes (`log`, relative to DIR/logs, with %a
// for the task) and the resources SlurmOptions ask for. Every job script takes them from here.
QStringList sbatchLines(const SlurmOptions& options, const QString& jobName, const QString& array, const QString& log);

// A word the shell reads back unchanged.
QString shellQuoted(const QString& text);

// Writes `contents` to `path`; throws IoError naming the file.
void writeJobFile(const QString& path, const QByteArray& contents);

// Refuses an --out that #SBATCH lines cannot carry (empty, or with white space). Throws ConfigError.
void checkSlurmOutDir(const QString& outDir);

// The batch script, for a sweep of `runCount` runs whose spec is DIR/sweep.json; `tasks`
// lists the run indices to submit (all of them when empty).
QString slurmScript(const SlurmOptions& options, const QString& sweepName, int runCount, const QString& sweepUid,
                    const QString& cliPath, const std::vector<int>& tasks = {});

// Writes DIR/sweep.json and DIR/sweep.sbatch (creating DIR, runs/ and logs/); returns the
// script's path. Throws IoError naming the file that could not be written.
QString writeSlurmJob(const SlurmOptions& options, const SweepSpec& spec, const QString& sweepUid,
                      const QString& cliPath, const std::vector<int>& tasks = {});

// A sweep already written to DIR: its uid, and what became of each run's task database.
struct SlurmSweepState {
    QString sweepUid;
    std::vector<int> done;    // finished or diverged: a result
    std::vector<int> running; // a live writer is training it now
    std::vector<int> todo;    // no database, no run in it, or the run failed or was interrupted
};
// nullopt when DIR holds no sweep yet. Throws ConfigError when DIR holds a different sweep
// (its sweep.json is not `spec`), so that two sweeps never share task databases.
std::optional<SlurmSweepState> existingSlurmSweep(const QString& outDir, const SweepSpec& spec);

// Run `index`'s task database in `outDir`: runs/run-INDEX.sqlite.
QString sweepTaskDatabase(const QString& outDir, int index);

// "0-3,7,9-10": the indices as an --array list.
QString arrayRanges(const std::vector<int>& indices);

// Runs `sbatch --parsable [--dependency=DEPENDENCY] SCRIPT` and returns the job id. Throws
// Error with sbatch's own message when it is missing or refuses the job.
QString submitSlurmJob(const QString& scriptPath, const QString& dependency = {});

} // namespace mantissa::cli
