#include "cli/slurm_job.h"

#include "engine/util/check.h"
#include "storage/run_store.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>

namespace mantissa::cli {

namespace {

// A word the shell reads back unchanged.
QString shellQuoted(const QString& text)
{
    QString quoted = text;
    quoted.replace(u'\'', QStringLiteral("'\\''"));
    return u'\'' + quoted + u'\'';
}

void writeFile(const QString& path, const QByteArray& contents)
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) || file.write(contents) != contents.size())
        throw IoError(path.toStdString() + ": cannot write it (" + file.errorString().toStdString() + ")");
}

} // namespace

QString arrayRanges(const std::vector<int>& indices)
{
    QStringList ranges;
    for (std::size_t i = 0; i < indices.size();) {
        std::size_t j = i;
        while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1)
            ++j;
        ranges << (j == i ? QString::number(indices[i]) : QStringLiteral("%1-%2").arg(indices[i]).arg(indices[j]));
        i = j + 1;
    }
    return ranges.join(u',');
}

QString slurmScript(const SlurmOptions& options, const QString& sweepName, int runCount, const QString& sweepUid,
                    const QString& cliPath, const std::vector<int>& tasks)
{
    const QString dir = QDir(options.outDir).absolutePath();
    QString array = tasks.empty() ? QStringLiteral("0-%1").arg(runCount - 1) : arrayRanges(tasks);
    if (options.maxParallel > 0)
        array += QStringLiteral("%%1").arg(options.maxParallel);
    QStringList lines = {
        QStringLiteral("#!/bin/bash"),
        QStringLiteral("# mantissa-cli sweep --slurm: \"%1\", %2 runs (sweep %3).")
            .arg(sweepName)
            .arg(runCount)
            .arg(sweepUid),
        QStringLiteral("# Task i trains run i of sweep.json into runs/run-i.sqlite; when all are done:"),
        QStringLiteral("#   mantissa-cli import %1").arg(shellQuoted(dir)),
        QStringLiteral("#SBATCH --job-name=mantissa-sweep"),
        QStringLiteral("#SBATCH --array=%1").arg(array),
        QStringLiteral("#SBATCH --output=%1/logs/run-%a.out").arg(dir),
        QStringLiteral("#SBATCH --cpus-per-task=%1").arg(options.cpusPerTask),
    };
    if (!options.partition.isEmpty())
        lines << QStringLiteral("#SBATCH --partition=%1").arg(options.partition);
    if (!options.time.isEmpty())
        lines << QStringLiteral("#SBATCH --time=%1").arg(options.time);
    if (!options.mem.isEmpty())
        lines << QStringLiteral("#SBATCH --mem=%1").arg(options.mem);
    if (options.gpusPerTask > 0)
        lines << QStringLiteral("#SBATCH --gpus-per-task=%1").arg(options.gpusPerTask);
    lines << QStringLiteral("set -eu")
          << QStringLiteral("exec %1 sweep-worker --spec %2 --sweep-uid %3 --index \"$SLURM_ARRAY_TASK_ID\" \\")
                 .arg(shellQuoted(cliPath), shellQuoted(dir + QStringLiteral("/sweep.json")), sweepUid)
          << QStringLiteral("  --db %1\"/run-$SLURM_ARRAY_TASK_ID.sqlite\" --threads \"${SLURM_CPUS_PER_TASK:-1}\"")
                 .arg(shellQuoted(dir + QStringLiteral("/runs")));
    return lines.join(u'\n') + u'\n';
}

QString writeSlurmJob(const SlurmOptions& options, const SweepSpec& spec, const QString& sweepUid,
                      const QString& cliPath, const std::vector<int>& tasks)
{
    // #SBATCH lines take no quoting, so a path with white space would be cut there.
    if (options.outDir.isEmpty() || options.outDir.contains(QRegularExpression(QStringLiteral("\\s"))))
        throw ConfigError("--out must name a directory without white space (Slurm's #SBATCH lines cannot quote it), "
                          "got \"" +
                          options.outDir.toStdString() + "\"");
    const QDir dir(options.outDir);
    for (const QString& sub : {QStringLiteral("runs"), QStringLiteral("logs")})
        if (!dir.mkpath(sub))
            throw IoError(dir.filePath(sub).toStdString() + ": cannot create the directory");
    writeFile(dir.filePath(QStringLiteral("sweep.json")), QByteArray::fromStdString(sweepSpecToJson(spec, 2)) + "\n");
    const QString script = dir.absoluteFilePath(QStringLiteral("sweep.sbatch"));
    writeFile(script,
              slurmScript(options, QString::fromStdString(spec.name), int(spec.runCount()), sweepUid, cliPath, tasks)
                  .toUtf8());
    return script;
}

std::optional<SlurmSweepState> existingSlurmSweep(const QString& outDir, const SweepSpec& spec)
{
    const QDir dir(outDir);
    QFile specFile(dir.filePath(QStringLiteral("sweep.json")));
    QFile scriptFile(dir.filePath(QStringLiteral("sweep.sbatch")));
    if (!specFile.exists() || !scriptFile.exists())
        return std::nullopt;
    if (!specFile.open(QIODevice::ReadOnly) || !scriptFile.open(QIODevice::ReadOnly))
        throw IoError(outDir.toStdString() + ": cannot read its sweep.json and sweep.sbatch");
    if (specFile.readAll() != QByteArray::fromStdString(sweepSpecToJson(spec, 2)) + "\n")
        throw ConfigError(outDir.toStdString() +
                          " holds another sweep (its sweep.json differs from this one); choose another --out, or "
                          "remove that directory once its runs are imported");
    const QRegularExpressionMatch uid =
        QRegularExpression(QStringLiteral("--sweep-uid (\\S+)")).match(QString::fromUtf8(scriptFile.readAll()));
    if (!uid.hasMatch())
        throw ConfigError(scriptFile.fileName().toStdString() + ": no --sweep-uid in it; was it edited by hand?");
    SlurmSweepState state;
    state.sweepUid = uid.captured(1);
    for (int index = 0; index < int(spec.runCount()); ++index) {
        const QString path = dir.filePath(QStringLiteral("runs/run-%1.sqlite").arg(index));
        std::optional<storage::RunStatus> status;
        if (QFileInfo::exists(path)) {
            // Opening marks a run whose writer died as interrupted, so it is redone.
            // A task run again appends a run: any result wins, then a live one.
            const auto rank = [](storage::RunStatus s) {
                return s == storage::RunStatus::Finished || s == storage::RunStatus::Diverged ? 2
                       : s == storage::RunStatus::Running                                     ? 1
                                                                                              : 0;
            };
            for (const storage::RunInfo& run : storage::RunStore(path).listRuns())
                if (!status || rank(run.status) > rank(*status))
                    status = run.status;
        }
        if (status == storage::RunStatus::Finished || status == storage::RunStatus::Diverged)
            state.done.push_back(index);
        else if (status == storage::RunStatus::Running)
            state.running.push_back(index);
        else
            state.todo.push_back(index);
    }
    return state;
}

QString submitSlurmJob(const QString& scriptPath)
{
    QProcess sbatch;
    sbatch.start(QStringLiteral("sbatch"), {QStringLiteral("--parsable"), scriptPath});
    if (!sbatch.waitForStarted())
        throw Error("sbatch could not be started (" + sbatch.errorString().toStdString() +
                    "): is Slurm's client (slurm-client) installed and on PATH? The job script is " +
                    scriptPath.toStdString() + "; submit it with sbatch yourself");
    sbatch.waitForFinished(120000);
    const QString out = QString::fromUtf8(sbatch.readAllStandardOutput()).trimmed();
    const QString err = QString::fromUtf8(sbatch.readAllStandardError()).trimmed();
    if (sbatch.exitStatus() != QProcess::NormalExit || sbatch.exitCode() != 0 || out.isEmpty())
        throw Error("sbatch refused the job (exit code " + std::to_string(sbatch.exitCode()) + "): " +
                    (err.isEmpty() ? out : err).toStdString() + "; the job script is " + scriptPath.toStdString());
    // --parsable prints "jobid" or "jobid;cluster".
    return out.section(u';', 0, 0);
}

} // namespace mantissa::cli
