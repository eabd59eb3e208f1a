// mantissa-cli export-model RUN -o OUT.onnx: a run's trained weights (its latest checkpoint, in
// fp32) written into the ONNX graph it was imported from, or a layer list's model as a new ONNX
// graph (engine/onnx/export_onnx.h), so that a model trained here goes to any ONNX runtime.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/run_lookup.h"
#include "engine/backend/backend_factory.h"
#include "engine/model/model.h"
#include "engine/onnx/export_onnx.h"
#include "engine/train/checkpoint_weights.h"
#include "engine/util/format_number.h"

#include <QFileInfo>

#include <cstdio>

namespace mantissa::cli {

namespace {

constexpr const char* kCommand = "export-model";
constexpr const char* kUsage = "RUN -o OUT.onnx";

} // namespace

int runExportModelCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Write a run's trained weights (its latest checkpoint, fp32) into the ONNX model it was imported from, "
        "or a preset's or layer list's model as a new ONNX graph. The file passes the ONNX checker, and importing "
        "it again computes what the trained model computes, bit for bit.");
    parser.addPositionalArgument("run", "The run's id or name.", "RUN");
    addDatabaseOption(parser);
    parser.addOption({{"o", "output"}, "The ONNX file to write.", "file"});
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    if (const auto exit = requirePositionals(parser, 1, kCommand, kUsage))
        return *exit;
    if (parser.value("output").isEmpty())
        return fail(kCommand, QStringLiteral("give the file to write with -o OUT.onnx"), kExitBadInput);
    try {
        const auto store = openRunStore(parser);
        const storage::RunInfo run = lookUpRun(*store, parser.positionalArguments().front());
        const RunConfig config = storedRunConfig(*store, run);
        const QList<storage::CheckpointInfo> checkpoints = store->checkpoints(run.id);
        if (checkpoints.isEmpty())
            return fail(kCommand,
                        QStringLiteral("run %1 (%2) has no stored weights: runs save a checkpoint when they finish or "
                                       "are stopped, not when they diverge or fail")
                            .arg(run.id)
                            .arg(run.name),
                        kExitBadInput);
        const storage::CheckpointInfo& latest = checkpoints.last(); // ordered by step
        if (!QFileInfo(latest.absolutePath).isFile())
            return fail(kCommand,
                        QStringLiteral("the checkpoint of run %1 at step %2 is missing: %3 (moved or deleted?)")
                            .arg(run.id)
                            .arg(latest.step)
                            .arg(latest.absolutePath),
                        kExitBadInput);
        // fp32 on the CPU: the masters are fp32 whatever the run's mode, and the file holds fp32.
        BackendSelection selection = selectBackend("cpu", 0);
        Model model(config.model, PrecisionMode::Fp32, *selection.backend, config.training.seed);
        loadCheckpointWeights(model, *selection.backend, latest.absolutePath.toStdString());
        const std::string out = parser.value("output").toStdString();
        const onnx_import::ExportSummary summary =
            onnx_import::exportTrainedOnnx(config, model, *selection.backend, out);
        const std::string what = summary.source.empty() ? "a new graph of " + std::to_string(summary.nodes) +
                                                              " nodes built from its layer list"
                                                        : "the graph of " + summary.source;
        std::printf("%s: run %lld (%s) at step %lld: %lld trained tensors written (%lld parameters, %lld running "
                    "statistics) into %s; %s\n",
                    out.c_str(), static_cast<long long>(run.id), qPrintable(run.name),
                    static_cast<long long>(latest.step), static_cast<long long>(summary.initializers),
                    static_cast<long long>(summary.parameters),
                    static_cast<long long>(summary.initializers - summary.parameters), what.c_str(),
                    formatBytes(summary.bytes).c_str());
        return kExitOk;
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
