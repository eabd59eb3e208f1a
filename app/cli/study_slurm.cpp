#include "cli/study_slurm.h"

#include "engine/util/check.h"
#include "storage/run_store.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace mantissa::cli {

namespace {

// The forks as the worker reads them: all it needs, so that the task does not depend on the
// study file (which may change or be elsewhere on the compute nodes).
QByteArray forksJson(const sweep::StudySpec& spec, const std::vector<sweep::PlannedFork>& forks,
                     const QString& sweepUid)
{
    nlohmann::json list = nlohmann::json::array();
    for (const sweep::PlannedFork& fork : forks) {
        nlohmann::json settings = nlohmann::json::array();
        for (const auto& setting : fork.arm->settings)
            settings.push_back(sweep::forkSettingText(setting));
        list.push_back({{"arm", fork.arm->name},
                        {"seed", fork.seed},
                        {"parent_arm", fork.arm->parent},
                        {"parent_index", fork.parentIndex},
                        {"step", fork.arm->step},
                        {"set", settings},
                        {"tag", sweep::studyForkTag(spec, fork.arm->name, fork.seed)}});
    }
    const nlohmann::json root = {
        {"study", spec.name}, {"study_hash", spec.hash}, {"sweep_uid", sweepUid.toStdString()}, {"forks", list}};
    return QByteArray::fromStdString(root.dump(2)) + "\n";
}

enum class ForkState { Done, Running, Todo };

// What fork task `index`'s database holds for `tag`: any result wins, then a live run.
ForkState forkState(const QString& outDir, int index, const QString& tag)
{
    const QString path = forkTaskDatabase(outDir, index);
    if (!QFileInfo::exists(path))
        return ForkState::Todo;
    storage::RunFilter filter;
    filter.tag = tag;
    ForkState state = ForkState::Todo;
    for (const storage::RunInfo& run : storage::RunStore(path).listRuns(filter)) {
        if (run.status == RunStatus::Finished || run.status == RunStatus::Diverged)
            return ForkState::Done;
        if (run.status == RunStatus::Running)
            state = ForkState::Running;
    }
    return state;
}

QString forkScript(const SlurmOptions& options, const sweep::StudySpec& spec, std::size_t forkCount,
                   const QString& sweepUid, const std::vector<int>& tasks)
{
    const QString dir = QDir(options.outDir).absolutePath();
    QStringList lines = {
        QStringLiteral("#!/bin/bash"),
        QStringLiteral("# mantissa-cli study --slurm: the fork arms of \"%1\", %2 forks (sweep %3).")
            .arg(QString::fromStdString(spec.name))
            .arg(forkCount)
            .arg(sweepUid),
        QStringLiteral("# Task k continues fork k of forks.json from its parent's saved state in runs/run-j.sqlite,"),
        QStringLiteral("# into forks/fork-k.sqlite. Submit it after the trained arms' array (sweep.sbatch):"),
        QStringLiteral("#   sbatch --dependency=afterany:JOBID forks.sbatch"),
        QStringLiteral("# When both are done: mantissa-cli import %1").arg(shellQuoted(dir)),
    };
    lines << sbatchLines(options, QStringLiteral("mantissa-study-forks"), arrayRanges(tasks),
                         QStringLiteral("fork-%a.out"))
          << QStringLiteral("set -eu")
          << QStringLiteral("exec %1 study-fork-worker --tasks %2 --index \"$SLURM_ARRAY_TASK_ID\" \\")
                 .arg(shellQuoted(QCoreApplication::applicationFilePath()),
                      shellQuoted(dir + QStringLiteral("/forks.json")))
          << QStringLiteral("  --threads \"${SLURM_CPUS_PER_TASK:-1}\"");
    return lines.join(u'\n') + u'\n';
}

} // namespace

QString forkTaskDatabase(const QString& outDir, int index)
{
    return QDir(outDir).filePath(QStringLiteral("forks/fork-%1.sqlite").arg(index));
}

StudyForkSubmission submitStudyForksToSlurm(const SlurmOptions& options, const sweep::StudySpec& spec,
                                            const SlurmSweepSubmission& trained, bool dryRun)
{
    checkSlurmOutDir(options.outDir);
    const QDir dir(options.outDir);
    const std::vector<sweep::PlannedFork> forks = sweep::plannedForks(spec);
    const QByteArray json = forksJson(spec, forks, trained.sweepUid);
    const QString jsonPath = dir.filePath(QStringLiteral("forks.json"));
    QFile existing(jsonPath);
    if (existing.exists()) {
        if (!existing.open(QIODevice::ReadOnly))
            throw IoError(jsonPath.toStdString() + ": cannot read it");
        if (existing.readAll() != json)
            throw ConfigError(options.outDir.toStdString() +
                              " holds another study's forks (its forks.json differs from this study's); choose "
                              "another --out, or remove that directory once its runs are imported");
    }

    StudyForkSubmission submission;
    submission.planned = forks.size();
    const auto contains = [](const std::vector<int>& list, int value) {
        return std::find(list.begin(), list.end(), value) != list.end();
    };
    std::size_t running = 0;
    for (std::size_t k = 0; k < forks.size(); ++k) {
        const sweep::PlannedFork& fork = forks[k];
        const ForkState state = forkState(options.outDir, int(k),
                                          QString::fromStdString(sweep::studyForkTag(spec, fork.arm->name, fork.seed)));
        if (state == ForkState::Done) {
            ++submission.done;
        } else if (state == ForkState::Running) {
            ++running;
        } else if (!trained.nothingToSubmit() && contains(trained.tasks, fork.parentIndex)) {
            submission.tasks.push_back(int(k)); // its parent trains in the array submitted now
        } else if (trained.existing && contains(trained.existing->running, fork.parentIndex)) {
            ++submission.waiting; // the job that trains its parent is not this command's
        } else {
            submission.tasks.push_back(int(k)); // its parent has a result, or its task's log says why not
        }
    }
    std::fprintf(
        stderr, "%s: %zu forks: %zu done, %zu running, %zu waiting for a parent still running, %zu to submit\n",
        spec.name.c_str(), forks.size(), submission.done, running, submission.waiting, submission.tasks.size());
    if (submission.waiting > 0)
        std::fprintf(stderr,
                     "run the study with --slurm again once the running trained runs end, for the %zu fork(s) "
                     "that wait for them\n",
                     submission.waiting);
    if (submission.tasks.empty())
        return submission;

    for (const QString& sub : {QStringLiteral("forks"), QStringLiteral("logs")})
        if (!dir.mkpath(sub))
            throw IoError(dir.filePath(sub).toStdString() + ": cannot create the directory");
    writeJobFile(jsonPath, json);
    submission.script = dir.absoluteFilePath(QStringLiteral("forks.sbatch"));
    writeJobFile(submission.script,
                 forkScript(options, spec, forks.size(), trained.sweepUid, submission.tasks).toUtf8());
    std::fprintf(stderr, "%s: fork job script %s\n", spec.name.c_str(), qPrintable(submission.script));
    if (!trained.jobId.isEmpty())
        submission.dependency = QStringLiteral("afterany:") + trained.jobId;
    if (dryRun) {
        std::fprintf(stderr, "dry run: not submitted; submit it with sbatch%s\n",
                     trained.nothingToSubmit() ? ""
                                               : " --dependency=afterany:JOBID, JOBID being the trained arms' job");
    } else {
        submission.jobId = submitSlurmJob(submission.script, submission.dependency);
        std::fprintf(stderr, "submitted the fork job array %s%s\n", qPrintable(submission.jobId),
                     submission.dependency.isEmpty()
                         ? ""
                         : qPrintable(QStringLiteral(", to start when job %1 has ended").arg(trained.jobId)));
    }
    return submission;
}

} // namespace mantissa::cli
