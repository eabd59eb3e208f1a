// mantissa-cli fork RUN --at STEP: a new recorded run that continues RUN's training state saved
// after STEP, with the settings the options change (precision, recipe, learning rate, any
// field). With none changed it continues bit for bit as RUN did. The new run records its
// parent and the step, which `runs`, `show` and the GUI's run browser and comparison show.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/interrupt.h"
#include "cli/recorded_run.h"
#include "cli/run_lookup.h"
#include "cli/train_options.h"
#include "engine/backend/backend_factory.h"
#include "engine/train/fork_compatibility.h"
#include "engine/train/training_backend.h"
#include "engine/util/check.h"
#include "storage/fork_point.h"

#include <cstdio>
#include <iostream>
#include <unistd.h>

namespace mantissa::cli {

int runForkCommand(const QStringList& arguments)
{
    constexpr const char* kCommand = "fork";
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Start a new recorded run from a run's training state saved after a step (weights, optimizer state, loss "
        "scaler, delayed-scaling history, place in the data order), with the settings the options change. "
        "With none changed it continues bit for bit as the run did. A run saves its state at its end, every "
        "training.checkpoint_every_epochs epochs and every training.save_state_every steps.\n"
        "Exit codes: 0 finished or stopped, 1 diverged or failed, 2 bad input, unknown run or step.");
    parser.addPositionalArgument("run", "The run to fork (id or name).", "RUN");
    parser.addOption({"at", "The step whose saved state the fork starts from.", "step"});
    parser.addOption({"name", "Name of the fork (default: <config name>-<precision>-<n>).", "name"});
    addTrainOptions(parser);
    addDatabaseOption(parser);
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    if (const auto exit = requirePositionals(parser, 1, kCommand, "RUN"))
        return *exit;
    try {
        if (!parser.isSet("at"))
            throw ConfigError("--at STEP is required: the step whose saved state the fork starts from");
        bool ok = false;
        const qint64 step = parser.value("at").toLongLong(&ok);
        if (!ok || step < 1)
            throw ConfigError("--at is \"" + parser.value("at").toStdString() +
                              "\"; expected a step number (1 or more)");
        if (parser.isSet("preset") || parser.isSet("input-shape"))
            throw ConfigError("a fork keeps its parent's model: --preset and --input-shape do not apply");
        std::unique_ptr<storage::RunStore> store = openRunStore(parser);
        const storage::RunInfo parent = lookUpRun(*store, parser.positionalArguments().first());
        const storage::CheckpointInfo state = storage::forkPoint(*store, parent, step);
        const RunConfig parentConfig = storedRunConfig(*store, parent);
        const RunConfig config = runConfigFromOptions(parser, {}, parentConfig);
        if (const std::optional<std::string> change = forkShapeChange(parentConfig, config))
            throw ConfigError(*change);
        if (config.distributed.worldSize > 1)
            throw ConfigError("a fork trains in one process: set distributed.world_size to 1 (--set "
                              "distributed.world_size=1)");
        std::fprintf(stderr, "forking run %s (#%lld) at step %lld: %s\n", qPrintable(parent.name),
                     static_cast<long long>(parent.id), static_cast<long long>(step), qPrintable(state.absolutePath));
        const BackendSelection selection = selectBackend(config);
        std::fprintf(stderr, "%s: %s, batch %lld, %s; %s\n", config.name.c_str(),
                     precisionModeName(config.precision).c_str(), static_cast<long long>(config.training.batchSize),
                     selection.backend->name().c_str(), selection.reason.c_str());
        const DatasetSplits data = loadDatasets(config.data, config.training.seed);
        InterruptHandler interruptHandler;
        RecordingOptions recording;
        recording.name = parser.value("name");
        recording.interactive = isatty(STDERR_FILENO) != 0;
        recording.resumeFrom = state.absolutePath;
        recording.parent = storage::RunLineage{parent.id, step};
        const RecordedRun run = trainRecorded(*store, config, *selection.backend, data, recording);
        std::cout << run.toJson().dump() << std::endl;
        return run.exitCode();
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
