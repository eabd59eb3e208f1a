// mantissa-cli study-fork-worker (not in the usage: the fork tasks of `study --slurm` start
// it): runs fork INDEX of DIR/forks.json (study_slurm.h). It takes the parent's task database
// DIR/runs/run-j.sqlite into the fork's own, DIR/forks/fork-INDEX.sqlite (RunStore::importRuns:
// the parent's runs with their saved states), forks the parent's latest result there as
// `mantissa-cli fork` does, and tags the fork as the study tags its forks, so that
// `mantissa-cli import DIR` brings in the fork linked to its parent and the study finds it.
// A parent without a result (its task failed, was cancelled, or diverged) fails the task with a
// message that names it.
//   study-fork-worker --tasks DIR/forks.json --index K [--threads T]
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/slurm_job.h"
#include "cli/study_slurm.h"
#include "engine/util/check.h"
#include "storage/run_store.h"
#include "storage/storage_error.h"

#include <QFile>
#include <QFileInfo>
#include <QSet>

#include <nlohmann/json.hpp>

#include <cstdio>

namespace mantissa::cli {

namespace {

constexpr const char* kCommand = "study-fork-worker";

struct ForkTaskFile {
    QString outDir, sweepUid;
    nlohmann::json fork; // one element of "forks"
};

ForkTaskFile readForkTask(const QString& path, const QString& indexText)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        throw ConfigError(path.toStdString() + ": cannot read it (" + file.errorString().toStdString() + ")");
    const nlohmann::json root = nlohmann::json::parse(file.readAll().toStdString(), nullptr, false);
    if (root.is_discarded() || !root.contains("forks") || !root["forks"].is_array() || !root.contains("sweep_uid"))
        throw ConfigError(path.toStdString() + ": not a study's forks.json (written by mantissa-cli study --slurm)");
    bool ok = false;
    const int index = indexText.toInt(&ok);
    if (!ok || index < 0 || index >= int(root["forks"].size()))
        throw ConfigError("--index must be 0 to " + std::to_string(int(root["forks"].size()) - 1) + ", got \"" +
                          indexText.toStdString() + "\"");
    return {QFileInfo(path).absolutePath(), QString::fromStdString(root["sweep_uid"].get<std::string>()),
            root["forks"][std::size_t(index)]};
}

bool isResult(const storage::RunInfo& run)
{
    return run.status == RunStatus::Finished || run.status == RunStatus::Diverged;
}

// The parent's latest result in its task database, as the study picks it (study_results.h).
// Throws Error naming the parent, its database and its task's log when it has none, or diverged.
storage::RunInfo parentRun(const QString& parentDb, const QString& sweepUid, int parentIndex, const QString& what)
{
    const QString log =
        QFileInfo(QFileInfo(parentDb).absolutePath() + QStringLiteral("/../logs/run-%1.out").arg(parentIndex))
            .absoluteFilePath();
    const auto noResult = [&](const QString& why) {
        return Error((what + QStringLiteral(" has no result: ") + why +
                      QStringLiteral("; its task failed, was cancelled or did not run (see its log, %1)").arg(log))
                         .toStdString());
    };
    if (!QFileInfo::exists(parentDb))
        throw noResult(QStringLiteral("there is no %1").arg(parentDb));
    std::optional<storage::RunInfo> parent;
    try {
        storage::RunStore store(parentDb);
        if (const std::optional<storage::SweepInfo> sweep = store.findSweep(sweepUid))
            for (const storage::RunInfo& run : store.sweepRuns(sweep->id)) // oldest attempt first
                if (run.sweepIndex == parentIndex && isResult(run))
                    parent = run;
    } catch (const storage::StorageError& error) {
        // "PATH: PROBLEM; advice": the advice is about choosing a database, not this one's.
        throw noResult(error.message().section(u';', 0, 0));
    }
    if (!parent)
        throw noResult(QStringLiteral("%1 holds none").arg(parentDb));
    if (parent->status == RunStatus::Diverged)
        throw Error((what + QStringLiteral(" diverged: it has no state to continue")).toStdString());
    return *parent;
}

QSet<qint64> forksOf(const storage::RunStore& store, qint64 parentId)
{
    storage::RunFilter filter;
    filter.parentRunId = parentId;
    QSet<qint64> ids;
    for (const storage::RunInfo& run : store.listRuns(filter))
        ids.insert(run.id);
    return ids;
}

} // namespace

int runStudyForkWorkerCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription("Run one fork of a study on Slurm (started by the tasks of study --slurm).");
    parser.addOptions({
        {"tasks", "The study's forks.json in its --out directory.", "file"},
        {"index", "The fork's index in it.", "n"},
        {"threads", "CPU threads for this run.", "n"},
    });
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    try {
        if (!parser.isSet("tasks") || !parser.isSet("index"))
            throw ConfigError("give --tasks DIR/forks.json and --index K");
        const ForkTaskFile task = readForkTask(parser.value("tasks"), parser.value("index"));
        const nlohmann::json& fork = task.fork;
        const int parentIndex = fork.at("parent_index").get<int>();
        const auto seed = fork.at("seed").get<std::uint64_t>();
        const QString what = QStringLiteral("fork %1 (arm \"%2\", seed %3) cannot run: its parent, run %4 of the "
                                            "trained arms (arm \"%5\", seed %3),")
                                 .arg(parser.value("index"), QString::fromStdString(fork.at("arm").get<std::string>()),
                                      QString::number(seed), QString::number(parentIndex),
                                      QString::fromStdString(fork.at("parent_arm").get<std::string>()));
        const QString parentDb = sweepTaskDatabase(task.outDir, parentIndex);
        const QString forkDb = forkTaskDatabase(task.outDir, parser.value("index").toInt());
        const storage::RunInfo parent = parentRun(parentDb, task.sweepUid, parentIndex, what);
        const int threads = parser.isSet("threads") ? positiveOption(parser, "threads", 1) : 1;

        std::optional<qint64> parentId;
        QSet<qint64> before;
        {
            storage::RunStore store(forkDb);
            store.importRuns(parentDb); // nothing new when the task runs again
            for (const storage::RunInfo& run : store.listRuns())
                if (run.uid == parent.uid)
                    parentId = run.id;
            if (!parentId)
                throw Error((what + QStringLiteral(" was not imported into %1").arg(forkDb)).toStdString());
            before = forksOf(store, *parentId);
        }
        const auto step = fork.at("step").get<std::int64_t>();
        std::fprintf(stderr, "%s: fork %s seed %llu from run %s (%s) at step %lld\n", kCommand,
                     fork.at("arm").get<std::string>().c_str(), static_cast<unsigned long long>(seed),
                     qPrintable(parent.name), qPrintable(parentDb), static_cast<long long>(step));
        std::fflush(stderr);
        QStringList forkArguments{arguments.first(),       QString::number(*parentId),
                                  QStringLiteral("--at"),  QString::number(step),
                                  QStringLiteral("--db"),  forkDb,
                                  QStringLiteral("--set"), QStringLiteral("training.threads=%1").arg(threads)};
        for (const nlohmann::json& setting : fork.at("set"))
            forkArguments << QStringLiteral("--set") << QString::fromStdString(setting.get<std::string>());
        const int exit = runForkCommand(forkArguments);

        storage::RunStore store(forkDb);
        const QSet<qint64> after = forksOf(store, *parentId);
        for (const qint64 id : after)
            if (!before.contains(id)) // the fork just run, whatever became of it: its status says
                store.addTag(id, QString::fromStdString(fork.at("tag").get<std::string>()));
        return exit;
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
