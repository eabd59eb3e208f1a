// mantissa-cli sweep-worker (not in the usage: `sweep` and Slurm tasks start it): trains one
// run of a sweep and records it with its sweep and index. The run's config is expanded again
// from the sweep's self-contained spec, so the worker trains exactly what `sweep` validated.
//   local:  sweep-worker --db DB --sweep ID --index I [--threads T]
//   Slurm:  sweep-worker --db TASK.sqlite --spec DIR/sweep.json --sweep-uid UID --index I [--threads T]
// stdout's last line is train's JSON summary with "sweep_index" added.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/interrupt.h"
#include "cli/recorded_run.h"
#include "engine/sweep/sweep_spec.h"
#include "engine/train/training_backend.h"
#include "engine/util/check.h"
#include "storage/storage_error.h"

#include <QFile>

#include <cstdio>
#include <iostream>

namespace mantissa::cli {

namespace {

constexpr const char* kCommand = "sweep-worker";

// The sweep row for the spec file's sweep in a task's own database (created the first time).
storage::SweepInfo sweepFromFile(storage::RunStore& store, const QString& specPath, const QString& uid)
{
    if (uid.isEmpty())
        throw ConfigError("--spec needs --sweep-uid");
    if (const auto existing = store.findSweep(uid))
        return *existing;
    const SweepSpec spec = loadSweepSpecFile(specPath.toStdString());
    const QString specJson = QString::fromStdString(sweepSpecToJson(spec));
    storage::NewSweep sweep{uid, QString::fromStdString(spec.name), specJson, int(spec.runCount())};
    return store.sweep(store.createSweep(sweep));
}

// "<config>-<precision>-seed<seed>-<first 6 of the sweep's uid>": the same in every database,
// so a run keeps its name when imported; empty (the store generates one) when it is taken.
QString runName(const storage::RunStore& store, const SweepRun& run, const QString& sweepUid)
{
    const QString name = QStringLiteral("%1-%2-seed%3-%4")
                             .arg(QString::fromStdString(run.config.name))
                             .arg(QString::fromStdString(precisionModeName(run.config.precision)))
                             .arg(run.seed)
                             .arg(sweepUid.left(6));
    try {
        store.findRun(name);
        return {};
    } catch (const storage::StorageError&) {
        return name;
    }
}

} // namespace

int runSweepWorkerCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription("Train one run of a sweep (started by mantissa-cli sweep and by Slurm tasks).");
    addDatabaseOption(parser);
    parser.addOptions({
        {"sweep", "The sweep's id in the database.", "id"},
        {"spec", "A self-contained sweep spec file (Slurm tasks).", "file"},
        {"sweep-uid", "The sweep's uid (with --spec).", "uid"},
        {"index", "The run's index in the sweep.", "n"},
        {"threads", "CPU threads for this run.", "n"},
    });
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    try {
        const auto store = openRunStore(parser);
        storage::SweepInfo sweep;
        if (parser.isSet("spec")) {
            sweep = sweepFromFile(*store, parser.value("spec"), parser.value("sweep-uid"));
        } else {
            bool ok = false;
            const qint64 id = parser.value("sweep").toLongLong(&ok);
            if (!ok)
                throw ConfigError("give --sweep ID or --spec FILE --sweep-uid UID");
            sweep = store->sweep(id);
        }
        bool ok = false;
        const int index = parser.value("index").toInt(&ok);
        const std::string origin = "sweep " + std::to_string(sweep.id);
        const SweepSpec spec = parseSweepSpec(sweep.specJson.toStdString(), origin, "");
        if (!ok || index < 0 || index >= int(spec.runCount()))
            throw ConfigError("--index must be 0 to " + std::to_string(spec.runCount() - 1) + ", got \"" +
                              parser.value("index").toStdString() + "\"");
        SweepRun run = std::move(expandSweep(spec, origin).runs[std::size_t(index)]);
        if (parser.isSet("threads"))
            run.config.training.threads = parser.value("threads").toInt();

        std::fprintf(stderr, "sweep %lld run %d: %s\n", static_cast<long long>(sweep.id), index, run.label.c_str());
        BackendSelection selection = selectBackend(run.config);
        const DatasetSplits data = loadDatasets(run.config.data, run.config.training.seed);
        RecordingOptions recording;
        recording.name = runName(*store, run, sweep.uid);
        recording.sweepId = sweep.id;
        recording.sweepIndex = index;
        InterruptHandler interruptHandler;
        const RecordedRun recorded = trainRecorded(*store, run.config, *selection.backend, data, recording);
        nlohmann::json line = recorded.toJson();
        line["sweep_index"] = index;
        std::cout << line.dump() << std::endl;
        return recorded.exitCode();
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
