// mantissa-cli train: one run, recorded in the run database; progress on stderr, a JSON
// summary line on stdout.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/init_weights.h"
#include "cli/interrupt.h"
#include "cli/recorded_run.h"
#include "cli/train_options.h"
#include "engine/backend/backend_factory.h"
#include "engine/model/tensor_core_alignment.h"
#include "engine/train/training_backend.h"

#include <cstdio>
#include <iostream>
#include <unistd.h>

namespace mantissa::cli {

int runTrainCommand(const QStringList& arguments)
{
    constexpr const char* kCommand = "train";
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Train a model, record the run in the run database and print a JSON summary line on stdout.\n"
        "Exit codes: 0 finished or stopped, 1 diverged or failed, 2 bad input or unusable database.");
    parser.addPositionalArgument("config", "A run config JSON file (or use --preset).", "[CONFIG.json]");
    addTrainOptions(parser);
    addDatabaseOption(parser);
    parser.addOption({"name", "Name of the run (default: <config name>-<precision>-<n>).", "name"});
    parser.addOption({"init-from",
                      "Start from the weights of a stored run (id or name; its latest checkpoint) or of a "
                      "checkpoint file, in any precision; the optimizer and loss scaler start fresh.",
                      "run|file"});
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    try {
        RunConfig config = runConfigFromOptions(parser, parser.positionalArguments());
        // The database first: a file we cannot use should fail before minutes of data loading.
        const auto store = openRunStore(parser);
        if (parser.isSet("init-from")) {
            const InitialWeights weights = resolveInitialWeights(*store, parser.value("init-from"));
            config.training.initFrom = weights.path.toStdString();
            std::fprintf(stderr, "starting from the weights of %s\n", qPrintable(weights.description));
        }
        BackendSelection selection = selectBackend(config);
        std::fprintf(stderr, "%s: %s, batch %lld, %s; %s\n", config.name.c_str(),
                     precisionModeName(config.precision).c_str(), static_cast<long long>(config.training.batchSize),
                     selection.backend->name().c_str(), selection.reason.c_str());
        // Advice, not an error: on stderr, so that stdout's last line stays the JSON summary.
        for (const std::string& line : tensorCoreAdvice(config).messages())
            std::fprintf(stderr, "tensor cores: %s\n", line.c_str());
        const DatasetSplits data = loadDatasets(config.data, config.training.seed);

        RecordingOptions recording;
        recording.name = parser.value("name");
        recording.interactive = isatty(STDERR_FILENO) != 0;
        InterruptHandler interruptHandler;
        const RecordedRun run = trainRecorded(*store, config, *selection.backend, data, recording);
        std::cout << run.toJson().dump() << std::endl;
        return run.exitCode();
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
