#include "cli/slurm_job.h"

#include "cli/command_line.h"
#include "engine/util/check.h"
#include "storage/run_store.h"

#include <QCommandLineParser>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>

namespace mantissa::cli {

QString shellQuoted(const QString& text)
{
    QString quoted = text;
    quoted.replace(u'\'', QStringLiteral("'\\''"));
    return u'\'' + quoted + u'\'';
}

void writeJobFile(const QString& path, const QByteArray& contents)
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) || file.write(contents) != contents.size())
        throw IoError(path.toStdString() + ": cannot write it (" + file.errorString().toStdString() + ")");
}

void addSlurmOptions(QCommandLineParser& parser, const QString& what)
{
    parser.addOptions({
        {"slurm", "Write a Slurm job array for " + what + " (with --out) and submit it with sbatch."},
        {"out", "Slurm: the directory for the job scripts and the per-task databases.", "dir"},
        {"partition", "Slurm: partition.", "name"},
        {"time", "Slurm: time limit per run (e.g. 0:30:00).", "time"},
        {"mem", "Slurm: memory per run (e.g. 4G).", "size"},
        {"gpus-per-task", "Slurm: GPUs per run.", "n"},
        {"cpus-per-task", "Slurm: CPU cores per run (default 1; the run uses that many threads).", "n"},
        {"max-parallel", "Slurm: at most K runs at once (--array=...%K).", "k"},
        {"dry-run", "Slurm: write the job scripts but do not submit them."},
    });
}

SlurmOptions slurmOptionsFrom(const QCommandLineParser& parser)
{
    SlurmOptions options;
    if (!parser.isSet("out"))
        throw ConfigError("--slurm needs --out DIR, a directory the compute nodes share");
    options.outDir = parser.value("out");
    options.partition = parser.value("partition");
    options.time = parser.value("time");
    options.mem = parser.value("mem");
    options.gpusPerTask = parser.isSet("gpus-per-task") ? positiveOption(parser, "gpus-per-task", 0) : 0;
    options.cpusPerTask = positiveOption(parser, "cpus-per-task", 1);
    options.maxParallel = parser.isSet("max-parallel") ? positiveOption(parser, "max-parallel", 0) : 0;
    return options;
}

void checkSlurmOutDir(const QString& outDir)
{
    // #SBATCH lines take no quoting, so a path with white space would be cut there.
    if (outDir.isEmpty() || outDir.contains(QRegularExpression(QStringLiteral("\\s"))))
        throw ConfigError("--out must name a directory without white space (Slurm's #SBATCH lines cannot quote it), "
                          "got \"" +
                          outDir.toStdString() + "\"");
}

QStringList sbatchLines(const SlurmOptions& options, const QString& jobName, const QString& array, const QString& log)
{
    const QString dir = QDir(options.outDir).absolutePath();
    QStringList lines = {
        QStringLiteral("#SBATCH --job-name=%1").arg(jobName),
        QStringLiteral("#SBATCH --array=%1").arg(array) +
            (options.maxParallel > 0 ? QStringLiteral("%%1").arg(options.maxParallel) : QString()),
        QStringLiteral("#SBATCH --output=%1/logs/%2").arg(dir, log),
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
    return lines;
}

QString sweepTaskDatabase(const QString& outDir, int index)
{
    return QDir(outDir).filePath(QStringLiteral("runs/run-%1.sqlite").arg(index));
}

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
    const QString array = tasks.empty() ? QStringLiteral("0-%1").arg(runCount - 1) : arrayRanges(tasks);
    QStringList lines = {
        QStringLiteral("#!/bin/bash"),
        QStringLiteral("# mantissa-cli sweep --slurm: \"%1\", %2 runs (sweep %3).")
            .arg(sweepName)
            .arg(runCount)
            .arg(sweepUid),
        QStringLiteral("# Task i trains run i of sweep.json into runs/run-i.sqlite; when all are done:"),
        QStringLiteral("#   mantissa-cli import %1").arg(shellQuoted(dir)),
    };
    lines << sbatchLines(options, QStringLiteral("mantissa-sweep"), array, QStringLiteral("run-%a.out"));
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
    checkSlurmOutDir(options.outDir);
    const QDir dir(options.outDir);
    for (const QString& sub : {QStringLiteral("runs"), QStringLiteral("logs")})
        if (!dir.mkpath(sub))
            throw IoError(dir.filePath(sub).toStdString() + ": cannot create the directory");
    writeJobFile(dir.filePath(QStringLiteral("sweep.json")),
                 QByteArray::fromStdString(sweepSpecToJson(spec, 2)) + "\n");
    const QString script = dir.absoluteFilePath(QStringLiteral("sweep.sbatch"));
    writeJobFile(script,
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
        const QString path = sweepTaskDatabase(outDir, index);
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

QString submitSlurmJob(const QString& scriptPath, const QString& dependency)
{
    QStringList arguments{QStringLiteral("--parsable")};
    if (!dependency.isEmpty())
        arguments << QStringLiteral("--dependency=") + dependency;
    QProcess sbatch;
    sbatch.start(QStringLiteral("sbatch"), arguments << scriptPath);
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
