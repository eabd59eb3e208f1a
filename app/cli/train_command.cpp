#include "cli/train_command.h"

#include "cli/progress_printer.h"
#include "cli/train_options.h"
#include "engine/backend/backend_factory.h"
#include "engine/train/trainer.h"
#include "engine/util/check.h"

#include <QCommandLineParser>

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <unistd.h>

namespace mantissa::cli {

namespace {

Trainer* g_activeTrainer = nullptr;

// Ctrl-C stops the run at the next step boundary, so the summary (and, with storage,
// every recorded step) is still written.
void onInterrupt(int)
{
    if (g_activeTrainer)
        g_activeTrainer->requestStop();
}

} // namespace

int runTrainCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription("Train a model and print a JSON summary line on stdout.");
    parser.addHelpOption();
    parser.addPositionalArgument("config", "A run config JSON file (or use --preset).", "[CONFIG.json]");
    addTrainOptions(parser);
    if (!parser.parse(arguments)) {
        std::fprintf(stderr, "mantissa-cli train: %s\n", qPrintable(parser.errorText()));
        return 2;
    }
    if (parser.isSet("help")) {
        std::fputs(qPrintable(parser.helpText()), stdout);
        return 0;
    }
    try {
        const RunConfig config = runConfigFromOptions(parser, parser.positionalArguments());
        BackendSelection selection = selectBackend(config.training.device, config.training.threads);
        std::fprintf(stderr, "%s: %s, batch %lld, %s; %s\n", config.name.c_str(),
                     precisionModeName(config.precision).c_str(), static_cast<long long>(config.training.batchSize),
                     selection.backend->name().c_str(), selection.reason.c_str());
        const DatasetSplits data = loadDatasets(config.data, config.training.seed);
        Trainer trainer(config, *selection.backend, data);
        std::fprintf(stderr, "%lld training and %lld test samples from %s; loss scaling: %s\n",
                     static_cast<long long>(data.train.size()), static_cast<long long>(data.test.size()),
                     data.directory.empty() ? "synthetic data" : data.directory.c_str(),
                     trainer.scaler().describe().c_str());

        ProgressPrinter progress(trainer.totalSteps(), isatty(STDERR_FILENO) != 0);
        trainer.addObserver(&progress);
        g_activeTrainer = &trainer;
        std::signal(SIGINT, onInterrupt);
        const RunSummary summary = trainer.run();
        std::signal(SIGINT, SIG_DFL);
        g_activeTrainer = nullptr;
        progress.finish();

        nlohmann::json line = {
            {"status", runStatusName(summary.status)},
            {"train_loss", summary.trainLoss},
            {"test_accuracy", summary.testAccuracy},
            {"steps", summary.steps},
            {"skipped_steps", summary.skippedSteps},
            {"final_loss_scale", summary.finalLossScale},
            {"samples_per_s", summary.samplesPerSecond},
            {"wall_s", summary.wallSeconds},
        };
        if (!summary.message.empty())
            line["message"] = summary.message;
        std::cout << line.dump() << std::endl;
        const bool ok = summary.status == RunStatus::Finished || summary.status == RunStatus::Stopped;
        return ok ? 0 : 1;
    } catch (const Error& e) {
        std::fprintf(stderr, "mantissa-cli train: %s\n", e.what());
        return 2;
    }
}

} // namespace mantissa::cli
