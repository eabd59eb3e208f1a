// mantissa-cli advise: which layers can go to a lower format. From a stored run's final state,
// or a config or ONNX model trained first, it measures each GEMM layer in each format asked
// for (engine/advisor/precision_probe.h), chooses per layer within a loss budget
// (engine/advisor/format_assignment.h), prints the table and writes the config with the
// per-layer formats; --verify trains it over seeds against the baseline and the rules of thumb.
#include "cli/advise_progress.h"
#include "cli/advise_report.h"
#include "cli/advise_report_file.h"
#include "cli/advise_verify.h"
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/interrupt.h"
#include "cli/run_lookup.h"
#include "cli/sweep_report.h"
#include "cli/train_options.h"
#include "engine/advisor/advice.h"
#include "engine/onnx/onnx_model.h"
#include "engine/train/trainer.h"
#include "engine/train/training_backend.h"
#include "engine/util/check.h"
#include "engine/util/enum_table.h"
#include "stats/rank_correlation.h"
#include "storage/latest_state.h"

#include <QFileInfo>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

namespace mantissa::cli {

namespace {

constexpr const char* kCommand = "advise";
constexpr double kDefaultBudget = 0.01;

std::vector<LayerPrecision> formatsFromOption(const QCommandLineParser& parser)
{
    if (!parser.isSet("format"))
        throw ConfigError("--format F[,F2] is required: the lower formats to consider, e.g. --format mxfp8,mxfp4");
    std::vector<LayerPrecision> formats;
    for (const QString& item : splitList(parser.value("format"))) {
        const auto format = parseEnum<LayerPrecision>(item.toStdString());
        if (!format || *format == LayerPrecision::Auto)
            throw ConfigError("--format lists \"" + item.toStdString() + "\"; expected formats among " +
                              enumKeyList<LayerPrecision>() + " (auto excepted)");
        if (std::find(formats.begin(), formats.end(), *format) == formats.end())
            formats.push_back(*format);
    }
    if (formats.empty())
        throw ConfigError("--format names no format");
    return formats;
}

double numberOption(const QCommandLineParser& parser, const char* name, double fallback)
{
    if (!parser.isSet(name))
        return fallback;
    bool ok = false;
    const double value = parser.value(name).toDouble(&ok);
    if (!ok || !std::isfinite(value))
        throw ConfigError(std::string("--") + name + " expects a number, got \"" + parser.value(name).toStdString() +
                          "\"");
    return value;
}

int countOption(const QCommandLineParser& parser, const char* name, int fallback)
{
    if (!parser.isSet(name))
        return fallback;
    bool ok = false;
    const int value = parser.value(name).toInt(&ok);
    if (!ok || value < 1)
        throw ConfigError(std::string("--") + name + " expects an integer >= 1, got \"" +
                          parser.value(name).toStdString() + "\"");
    return value;
}

// Where the baseline and its state come from.
struct AdviseSource {
    RunConfig config;
    std::string checkpoint; // a stored run's latest state; "" to train first (or keep the initial weights)
    bool trainFirst = false;
    std::string description;
};

AdviseSource sourceFromOptions(const QCommandLineParser& parser)
{
    const QStringList positional = parser.positionalArguments();
    if (positional.size() > 1)
        throw ConfigError("give one RUN, CONFIG.json or MODEL.onnx (or --preset NAME), not " +
                          std::to_string(positional.size()));
    AdviseSource source;
    const bool file = !positional.isEmpty() &&
                      (positional[0].endsWith(".json") || onnx_import::isOnnxPath(positional[0].toStdString()));
    if (!positional.isEmpty() && !file) {
        if (parser.isSet("preset"))
            throw ConfigError("give either a stored RUN or --preset NAME, not both");
        if (parser.isSet("untrained"))
            throw ConfigError("--untrained applies to a config or model trained here, not to a stored run");
        std::unique_ptr<storage::RunStore> store = openRunStore(parser);
        const storage::RunInfo run = lookUpRun(*store, positional[0]);
        source.config = runConfigFromOptions(parser, {}, storedRunConfig(*store, run));
        const storage::LatestState state = storage::latestState(*store, run);
        source.checkpoint = state.path.toStdString();
        source.description = "the latest saved state of " + state.description.toStdString();
        return source;
    }
    source.config = runConfigFromOptions(parser, positional);
    source.trainFirst = !parser.isSet("untrained");
    source.description = source.trainFirst ? "the config trained here first" : "the model's initial weights";
    return source;
}

// What the measurements depend on: two advises with the same key measure the same.
std::string measurementKey(const AdviseSource& source, const AdvisorProbeOptions& options)
{
    return runConfigToJson(source.config, -1) + "\nstate: " + (source.trainFirst ? "trained here" : source.checkpoint) +
           "\nscore: second-order, empirical Fisher" + "\nheld-out batches: " + std::to_string(options.heldOutBatches) +
           ", batch: " + std::to_string(options.batchSize);
}

// Trains the baseline and saves its state; false when Ctrl-C stopped it.
bool trainBaseline(const RunConfig& config, Backend& backend, const DatasetSplits& data, const std::string& path)
{
    std::fprintf(stderr, "training the baseline (%s, %s) before the probes; its state goes to %s\n",
                 config.name.c_str(), precisionModeName(config.precision).c_str(), path.c_str());
    Trainer trainer(config, backend, data);
    InterruptHandler::setActiveTrainer(&trainer);
    const RunSummary summary = trainer.run();
    InterruptHandler::setActiveTrainer(nullptr);
    if (InterruptHandler::interrupted())
        return false;
    if (summary.status != RunStatus::Finished)
        throw ConfigError("the baseline's training ended " + std::string(runStatusName(summary.status)) +
                          (summary.message.empty() ? "" : ": " + summary.message) +
                          "; a state to probe needs a finished run");
    trainer.saveCheckpoint(path);
    return true;
}

std::string outputPath(const QCommandLineParser& parser, const RunConfig& config)
{
    if (parser.isSet("output"))
        return parser.value("output").toStdString();
    return config.name + "-advised.json";
}

// The command as typed, for the report: "mantissa-cli advise --preset char-gpt --format mxfp4".
QString commandLine(const QStringList& arguments)
{
    QStringList words{QStringLiteral("mantissa-cli advise")};
    for (const QString& word : arguments.mid(1))
        words << (word.contains(QLatin1Char(' ')) ? QLatin1Char('\'') + word + QLatin1Char('\'') : word);
    return words.join(QLatin1Char(' '));
}

void writeConfig(const std::string& path, const RunConfig& config)
{
    std::ofstream out(path, std::ios::trunc);
    out << runConfigToJson(config) << '\n';
    if (!out.flush())
        throw IoError("cannot write " + path);
}

} // namespace

int runAdviseCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Advise which layers can go to a lower format. For every layer that runs GEMMs, at any depth, and each\n"
        "format asked for, measure the held-out loss increase with that layer alone in the format (the probe),\n"
        "the output's error against fp32 and a cheap score (a second-order estimate of the same increase from\n"
        "the gradients and the weights' rounding); then choose per layer the\n"
        "format that puts the most FLOPs (or weights) low while the layers' loss increases add up to at most\n"
        "the budget, and write the config with those per-layer formats. Interrupted, it continues where it\n"
        "stopped when run again with the same options (the measurements are kept in OUT.probes.json).\n"
        "Exit codes: 0 done or stopped by Ctrl-C, 1 a verification run failed, 2 bad input.");
    parser.addPositionalArgument("source",
                                 "A stored run (id or name: its latest saved state), a CONFIG.json or a "
                                 "MODEL.onnx (trained here first), or use --preset.",
                                 "[RUN | CONFIG.json | MODEL.onnx]");
    parser.addOptions({
        {"format", "The lower formats to consider, comma-separated (e.g. mxfp8,mxfp4).", "F[,F2]"},
        {"budget",
         QStringLiteral("The largest total held-out loss increase accepted (default %1).").arg(kDefaultBudget), "loss"},
        {"objective", "What to put in the lower formats: flops (default) or memory (the weights).", "flops|memory"},
        {"score-only",
         "Skip most probes: estimate each layer's held-out loss increase from its score (up to 16 backward "
         "passes, whatever the layer count), scaled into loss units by a few probes (--calibration-probes); "
         "--budget is then spent in those estimates."},
        {"calibration-probes",
         "With --score-only: layers probed per format to scale the score into loss units (default 3; 0 probes "
         "nothing and spends the budget in the raw score).",
         "n"},
        {"held-out-batches", "Batches of the validation (else test) split the loss is measured on (default 4).", "n"},
        {"untrained", "Probe a config's or model's initial weights (an imported model's own) instead of training it "
                      "first."},
        {{"o", "output"}, "The config to write, with the per-layer formats (default NAME-advised.json).", "file"},
        {"verify",
         "Train the advised config, the baseline and the rules of thumb over this many seeds and print "
         "the equivalence verdicts.",
         "seeds"},
        {"report",
         "Also write the advice as a report (.pdf, .html or .md): the per-layer sensitivity chart and table, the "
         "share of FLOPs in each format and, with --verify, each configuration's gap to the baseline with its "
         "interval and the advice against the rules of thumb.",
         "file"},
    });
    addTrainOptions(parser);
    addMarginOptions(parser);
    addDatabaseOption(parser);
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    try {
        const std::vector<LayerPrecision> formats = formatsFromOption(parser);
        const double budget = numberOption(parser, "budget", kDefaultBudget);
        const auto objective = parseAdvisorObjective(
            parser.value("objective").isEmpty() ? std::string("flops") : parser.value("objective").toStdString());
        if (!objective)
            throw ConfigError("--objective is \"" + parser.value("objective").toStdString() +
                              "\"; expected flops or memory");
        const bool scoreOnly = parser.isSet("score-only");
        std::size_t calibrationProbes = 3;
        if (parser.isSet("calibration-probes")) {
            if (!scoreOnly)
                throw ConfigError("--calibration-probes applies to --score-only (without it every layer is probed)");
            bool ok = false;
            const int n = parser.value("calibration-probes").toInt(&ok);
            if (!ok || n < 0)
                throw ConfigError("--calibration-probes expects an integer >= 0, got \"" +
                                  parser.value("calibration-probes").toStdString() + "\"");
            calibrationProbes = static_cast<std::size_t>(n);
        }
        AdvisorProbeOptions probeOptions;
        probeOptions.heldOutBatches = countOption(parser, "held-out-batches", 4);
        const int verifySeeds = parser.isSet("verify") ? countOption(parser, "verify", 0) : 0;
        if (verifySeeds == 1)
            throw ConfigError("--verify needs 2 seeds or more: the verdicts compare spreads over seeds");
        const sweep::EquivalenceMargins margins = marginsFromOptions(parser); // checked before any training
        const QString reportPath = parser.value("report");
        if (!reportPath.isEmpty())
            adviceReportFormat(reportPath);

        AdviseSource source = sourceFromOptions(parser);
        const RunConfig& config = source.config;
        probeOptions.batchSize = config.training.batchSize;
        const std::string output = outputPath(parser, config);
        const std::string progressFile = progressPath(output);
        const std::string key = measurementKey(source, probeOptions);
        AdviseProgress progress;
        if (std::optional<AdviseProgress> kept = loadProgress(progressFile)) {
            if (kept->key != key)
                throw ConfigError(progressFile + " holds the measurements of another advise (another config, state or "
                                                 "held-out set); remove it or choose another -o");
            progress = std::move(*kept);
            std::fprintf(stderr, "continuing from %s: %zu probes and %zu scores measured\n", progressFile.c_str(),
                         progress.probes.size(), progress.scores.size());
        }
        progress.key = key;
        saveProgress(progressFile, progress); // a directory it cannot write is said before any training

        const BackendSelection selection = selectBackend(config);
        std::fprintf(stderr, "%s: %s, batch %lld, %s; %s\n", config.name.c_str(),
                     precisionModeName(config.precision).c_str(), static_cast<long long>(config.training.batchSize),
                     selection.backend->name().c_str(), selection.reason.c_str());
        const DatasetSplits data = loadDatasets(config.data, config.training.seed);
        InterruptHandler interruptHandler;
        if (source.trainFirst) {
            if (progress.checkpoint.empty() || !QFileInfo::exists(QString::fromStdString(progress.checkpoint))) {
                const std::string state = statePath(output);
                if (!trainBaseline(config, *selection.backend, data, state)) {
                    std::fprintf(stderr, "interrupted while training the baseline: nothing measured yet\n");
                    return kExitOk;
                }
                progress.checkpoint = state;
                saveProgress(progressFile, progress);
            }
            source.checkpoint = progress.checkpoint;
        }
        progress.checkpoint = source.checkpoint;
        std::fprintf(stderr, "probing %s\n", source.description.c_str());

        PrecisionProbe probe(config, *selection.backend, data, source.checkpoint, probeOptions);
        if (probe.layers().empty())
            throw ConfigError(config.name + " has no layer that runs GEMMs: there is nothing to advise on");
        std::fprintf(stderr, "%zu GEMM layers x %zu formats; held-out loss on %s: %.5g\n", probe.layers().size(),
                     formats.size(), probe.heldOutDescription().c_str(), probe.baselineLoss());

        // The measurements go to the progress file as they are made, and come from it when an
        // interrupted advise runs again.
        AdviceHooks hooks;
        hooks.stopRequested = [] { return InterruptHandler::interrupted(); };
        hooks.knownScores = [&](LayerPrecision format) -> std::optional<std::vector<double>> {
            const auto kept = progress.scores.find(std::string(enumKey(format)));
            return kept == progress.scores.end() ? std::nullopt : std::optional(kept->second);
        };
        hooks.scoresMeasured = [&](LayerPrecision format, const std::vector<double>& scores) {
            progress.scores[std::string(enumKey(format))] = scores;
            saveProgress(progressFile, progress);
        };
        hooks.knownProbe = [&](const std::string& layer, LayerPrecision format) -> std::optional<LayerProbeResult> {
            const auto kept = progress.probes.find(AdviseProgress::probeKey(layer, format));
            return kept == progress.probes.end() ? std::nullopt : std::optional(kept->second);
        };
        hooks.probed = [&](std::size_t index, std::size_t total, const LayerProbeResult& r, double seconds) {
            progress.probes[AdviseProgress::probeKey(r.layer, r.format)] = r;
            saveProgress(progressFile, progress);
            const std::string outcome =
                r.misfit.empty() ? "loss increase " + std::to_string(r.lossIncrease) : "does not fit";
            std::fprintf(stderr, "probe %zu/%zu: %s in %s: %s (%.1f s)\n", index, total, r.layer.c_str(),
                         std::string(enumKey(r.format)).c_str(), outcome.c_str(), seconds);
        };
        hooks.rankCorrelation = stats::spearmanCorrelation;
        const AdviceRequest request{formats, budget, *objective, scoreOnly, calibrationProbes};
        const std::optional<AdviceTable> advice =
            adviseLayers(probe, request, config.recipe, precisionModeName(config.precision), hooks);
        if (!advice) {
            std::fprintf(stderr,
                         "interrupted: %zu of %zu probes measured, kept in %s; run the same command again to "
                         "continue\n",
                         progress.probes.size(), probe.layers().size() * formats.size(), progressFile.c_str());
            return kExitOk;
        }
        const AdviceTable& table = *advice;
        const RunConfig advised = advisedConfig(config, table);
        writeConfig(output, advised);
        printAdvice(stdout, table);
        std::printf("wrote %s\n", output.c_str());
        std::optional<AdviceVerification> verification;
        if (verifySeeds > 0) {
            verification = verifyAdvice(parser, config, advised, table, verifySeeds, output);
        } else {
            nlohmann::json line = adviceJson(table);
            line["config"] = output;
            std::cout << line.dump() << std::endl;
        }
        if (!reportPath.isEmpty()) {
            AdviceReportInput input;
            input.subject = QStringLiteral("%1 (%2)").arg(QString::fromStdString(config.name),
                                                          QString::fromStdString(source.description));
            input.command = commandLine(arguments);
            input.advisedConfigJson = QString::fromStdString(runConfigToJson(advised));
            input.verification = verification ? &*verification : nullptr;
            input.margins = margins;
            const std::unique_ptr<storage::RunStore> store = verification ? openRunStore(parser) : nullptr;
            for (const QString& file : writeAdviceReport(reportPath, table, input, store.get()))
                std::fprintf(stderr, "wrote %s\n", qPrintable(file));
        }
        return verification ? verification->exitCode : kExitOk;
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
