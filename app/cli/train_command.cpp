// mantissa-cli train: one run, recorded in the run database; progress on stderr, a JSON
// summary line on stdout.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/init_weights.h"
#include "cli/interrupt.h"
#include "cli/recorded_run.h"
#include "cli/run_lookup.h"
#include "cli/train_options.h"
#include "engine/backend/backend_factory.h"
#include "engine/distributed/all_reduce_path.h"
#include "engine/distributed/connect_ranks.h"
#include "engine/distributed/data_parallel.h"
#include "engine/distributed/gpu_assignment.h"
#include "engine/distributed/rank_agreement.h"
#include "engine/model/model.h"
#include "engine/model/tensor_core_alignment.h"
#include "engine/train/training_backend.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace mantissa::cli {

int runTrainCommand(const QStringList& arguments)
{
    constexpr const char* kCommand = "train";
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Train a model, record the run in the run database and print a JSON summary line on stdout.\n"
        "Exit codes: 0 finished or stopped, 1 diverged or failed, 2 bad input or unusable database.");
    parser.addPositionalArgument("config", "A run config JSON file, or an ONNX model to train (or use --preset).",
                                 "[CONFIG.json | MODEL.onnx]");
    addTrainOptions(parser);
    addDatabaseOption(parser);
    parser.addOption({"name", "Name of the run (default: <config name>-<precision>-<n>).", "name"});
    parser.addOption({"from-run",
                      "Train a stored run's config again (id or name). An imported model is read from the run "
                      "database's copy when its file has moved or changed. The options given override its settings.",
                      "run"});
    parser.addOption({"init-from",
                      "Start from the weights of a stored run (id or name; its latest checkpoint) or of a "
                      "checkpoint file, in any precision; the optimizer and loss scaler start fresh.",
                      "run|file"});
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    // Under mpirun or srun, MPI starts first: every rank must reach the collectives below.
    std::unique_ptr<Communicator> communicator;
    // Before `ranks`, so that it outlives ranks' NCCL communicator, which runs on its device.
    BackendSelection selection;
    std::optional<DataParallel> ranks;
    try {
        std::unique_ptr<storage::RunStore> store;
        std::optional<RunConfig> storedConfig;
        if (parser.isSet("from-run")) {
            store = openRunStore(parser);
            storedConfig = storedRunConfig(*store, lookUpRun(*store, parser.value("from-run")));
        }
        RunConfig config = runConfigFromOptions(parser, parser.positionalArguments(), storedConfig);
        communicator = connectRanks();
        const int rank = communicator ? communicator->rank() : 0;
        resolveWorldSize(config, communicator ? communicator->size() : 1);
        // Only rank 0 opens the database: the other ranks write nothing. The database first: a
        // file we cannot use should fail before minutes of data loading.
        if (rank == 0 && !store)
            store = openRunStore(parser);
        std::string initFrom;
        if (rank == 0 && parser.isSet("init-from")) {
            const InitialWeights weights = resolveInitialWeights(*store, parser.value("init-from"));
            initFrom = weights.path.toStdString();
            std::fprintf(stderr, "starting from the weights of %s\n", qPrintable(weights.description));
        }
        if (communicator && communicator->size() > 1)
            communicator->broadcast(initFrom, 0); // the others cannot look the run up
        if (!initFrom.empty())
            config.training.initFrom = initFrom;
        if (communicator && communicator->size() > 1)
            ranks.emplace(*communicator, config); // the same config on every rank, a batch that divides
        if (ranks)                                // which process is which rank, for whoever has to find or stop one
            std::fprintf(stderr, "rank %d of %d is pid %lld\n", rank, ranks->worldSize(),
                         static_cast<long long>(getpid()));
        // One GPU per rank (the rank's place on its node); a node with fewer GPUs than ranks
        // asking for one ends every rank with the counts. The recorded config keeps the device
        // asked for ("cuda"), the same on every rank.
        RunConfig rankConfig = config;
        if (ranks) {
            const GpuAssignment gpu = assignGpuToThisRank(config.training.device);
            failTogether(*communicator, gpu.error);
            rankConfig.training.device = gpu.device;
        }
        selection = selectBackend(rankConfig);
        if (ranks) // NCCL on the device where every rank can, else MPI on the host
            connectAllReduce(*ranks, *selection.backend);
        if (rank == 0) {
            std::fprintf(stderr, "%s: %s, batch %lld, %s; %s\n", config.name.c_str(),
                         precisionModeName(config.precision).c_str(), static_cast<long long>(config.training.batchSize),
                         selection.backend->name().c_str(), selection.reason.c_str());
            // Advice, not an error: on stderr, so that stdout's last line stays the JSON summary.
            for (const std::string& line : tensorCoreAdvice(config).messages())
                std::fprintf(stderr, "tensor cores: %s\n", line.c_str());
            const GemmCoverage coverage = plannedGemmCoverage(config.model, config.precision, config.recipe);
            if (const std::string summary = coverage.summary(); !summary.empty())
                std::fprintf(stderr, "%s: %s\n", coverage.recipe != GemmRecipe::None ? "recipe" : "formats",
                             summary.c_str());
            if (const std::optional<std::string> warning = coverage.warning())
                std::fprintf(stderr, "warning: %s\n", warning->c_str());
        }
        const DatasetSplits data = loadDatasets(config.data, config.training.seed);

        InterruptHandler interruptHandler;
        if (rank != 0) {
            const RunSummary summary = trainReplica(config, *selection.backend, data, *ranks);
            // A rank failing alone would leave the others waiting: end the whole job.
            if (summary.status == RunStatus::Failed)
                communicator->abortJob(kExitRunFailed);
            const bool ok = summary.status == RunStatus::Finished || summary.status == RunStatus::Stopped;
            return ok ? kExitOk : kExitRunFailed;
        }
        RecordingOptions recording;
        recording.name = parser.value("name");
        recording.interactive = isatty(STDERR_FILENO) != 0;
        recording.ranks = ranks ? &*ranks : nullptr;
        const RecordedRun run = trainRecorded(*store, config, *selection.backend, data, recording);
        // A native kernel oneDNN refused for a shape ran emulated (Backend::kernelPaths's
        // "ran emulated: " lines, stored with the run): said here too, once per shape.
        std::istringstream kernelPaths(selection.backend->kernelPaths());
        for (std::string line; std::getline(kernelPaths, line);)
            if (line.starts_with("ran emulated: "))
                std::fprintf(stderr, "kernels: %s\n", line.c_str());
        std::cout << run.toJson().dump() << std::endl;
        if (ranks && run.summary.status == RunStatus::Failed)
            communicator->abortJob(kExitRunFailed); // recorded: now end the other ranks
        return run.exitCode();
    } catch (const std::exception& error) {
        const int exit = reportError(kCommand, error);
        // Every rank finds a bad config or a mismatch alike and ends on its own; any other error
        // may be one rank's alone, and the others would wait for it for ever: end the job.
        const bool everyRankFailed =
            dynamic_cast<const DistributedError*>(&error) || (dynamic_cast<const ConfigError*>(&error) && !ranks);
        if (communicator && communicator->size() > 1 && !everyRankFailed)
            communicator->abortJob(exit);
        return exit;
    }
}

} // namespace mantissa::cli
