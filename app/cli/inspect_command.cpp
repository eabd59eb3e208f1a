// mantissa-cli inspect MODEL.onnx: the graph an ONNX file imports to, node by node in the order
// they run: op, name, output shape, parameters and forward FLOPs per sample; the totals; and
// every node whose operator Mantissa does not support (then exit 2, as for any model it cannot
// train). With --precision MODE, also the precision each node runs in under that mode and the
// engine's tensor-core alignment advice for the format each GEMM runs in
// (tensor_core_alignment.h): fp16/bf16 tiles of 8, FP8 tensor cores' 16, a block format's block.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/text_table.h"
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/onnx_import_error.h"
#include "engine/onnx/onnx_node_rows.h"
#include "engine/util/format_number.h"

#include <cstdio>
#include <map>
#include <optional>

namespace mantissa::cli {

namespace {

constexpr const char* kCommand = "inspect";

namespace ox = onnx_import;

QString text(const std::string& value) { return QString::fromStdString(value); }

QString shapeCell(const ox::OnnxValue* value)
{
    if (!value || !value->shapeKnown)
        return QStringLiteral("?");
    return text(ox::shapeText(value->shape));
}

// FLOPs with an SI prefix: "0", "1.2 M", "3.4 G".
QString flopsCell(double flops)
{
    if (flops <= 0)
        return {};
    return text(formatSi(flops));
}

using NodePrecisions = std::map<std::string, ox::NodePrecision>;

void printGraph(const ox::OnnxGraph& graph, const NodePrecisions* precisions)
{
    std::printf("model %s: %s, opset %lld\n", graph.path.c_str(),
                graph.producer.empty() ? "unknown producer" : graph.producer.c_str(),
                static_cast<long long>(graph.opsetVersion));
    for (const std::string& input : graph.inputs) {
        const ox::OnnxValue* value = graph.value(input);
        std::printf("input %s: %s %s\n", input.c_str(), qPrintable(shapeCell(value)),
                    value ? ox::elementTypeName(value->type) : "?");
    }
    std::printf("batch %lld (shapes below include it; parameters and FLOPs are per sample)\n\n",
                static_cast<long long>(graph.batchSize));

    using Align = TextTable::Align;
    TextTable table;
    table.addColumn(QStringLiteral("#"), Align::Right);
    table.addColumn(QStringLiteral("op"));
    table.addColumn(QStringLiteral("node"));
    table.addColumn(QStringLiteral("output shape"));
    table.addColumn(QStringLiteral("parameters"), Align::Right);
    table.addColumn(QStringLiteral("FLOPs/sample"), Align::Right);
    if (precisions)
        table.addColumn(QStringLiteral("precision"));
    table.addColumn(QStringLiteral("supported"));
    for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
        const ox::OnnxNode& node = graph.nodes[i];
        const std::int64_t parameters = ox::nodeParameterCount(graph, node);
        const QString op = text(node.domain.empty() ? node.opType : node.domain + "." + node.opType);
        QStringList row{QString::number(i + 1),
                        op,
                        text(node.name),
                        shapeCell(node.outputs.empty() ? nullptr : graph.value(node.outputs.front())),
                        parameters ? QString::number(parameters) : QString(),
                        flopsCell(node.flopsPerSample)};
        if (precisions) {
            const auto found = precisions->find(node.name);
            row << (found == precisions->end() ? QString() : text(found->second.precision));
        }
        row << (node.supported ? QStringLiteral("yes") : QStringLiteral("NO"));
        table.addRow(row);
    }
    table.print(stdout);

    std::printf("\n%zu nodes, %zu parameter tensors, %lld parameters, %s FLOPs per sample (forward)\n",
                graph.nodes.size(), graph.parameters.size(), static_cast<long long>(graph.parameterElementCount()),
                graph.flopsPerSample() > 0 ? qPrintable(flopsCell(graph.flopsPerSample())) : "0");
    if (graph.lossNode)
        std::printf("loss: the graph's own SoftmaxCrossEntropyLoss, node '%s': training uses it (softmax "
                    "cross-entropy over '%s', the mean over the batch)\n",
                    graph.nodes[*graph.lossNode].name.c_str(), graph.nodes[*graph.lossNode].inputs.at(0).c_str());
    else
        std::printf("loss: none in the graph; its outputs are the logits (or predictions) the task's loss reads\n");
}

// The engine's advice for each GEMM node under `mode`, in the order the nodes run: the rule of
// the format it runs in, then one line per node whose extents miss it, and the batch where the
// 16-bit tensor cores' rule applies and it misses it too.
void printAlignment(const ox::OnnxGraph& graph, const NodePrecisions& precisions, PrecisionMode mode)
{
    std::printf("\ntensor-core alignment under %s:\n", precisionModeName(mode).c_str());
    std::map<std::string, std::string> rules; // format -> its rule, each stated once
    std::vector<std::string> lines;
    int gemms = 0;
    bool sixteenBit = false;
    for (const ox::OnnxNode& node : graph.nodes) {
        const auto found = precisions.find(node.name);
        if (found == precisions.end() || !found->second.alignment)
            continue;
        const LayerAlignment& a = *found->second.alignment;
        if (a.verdict == AlignmentVerdict::NoGemm)
            continue;
        ++gemms;
        if (a.verdict == AlignmentVerdict::Fp32)
            continue;
        sixteenBit |= !a.rule.alongK && a.rule.multiple == kTensorCoreMultiple;
        const std::string what = a.rule.alongK ? "the widths their blocks run along (K)" : "every extent";
        rules.emplace(a.rule.format, what + " a multiple of " + std::to_string(a.rule.multiple));
        if (a.verdict == AlignmentVerdict::Misaligned)
            lines.push_back("node " + node.name + " (" + node.opType + "), " + a.rule.format + ": " + a.reason());
    }
    if (gemms == 0) {
        std::printf("  no node runs a GEMM or convolution\n");
        return;
    }
    if (rules.empty()) {
        std::printf("  every GEMM computes in fp32, which does not run on 16-bit or FP8 tensor cores: no advice\n");
        return;
    }
    for (const auto& [format, rule] : rules)
        std::printf("  %s GEMMs want %s\n", format.c_str(), rule.c_str());
    if (sixteenBit)
        if (const std::optional<MisalignedExtent> batch = misalignedBatch(graph.batchSize))
            lines.push_back(batchAdvice(*batch));
    if (lines.empty())
        std::printf("  all %d GEMMs meet them\n", gemms);
    for (const std::string& line : lines)
        std::printf("  %s\n", line.c_str());
}

} // namespace

int runInspectCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription("The graph an ONNX model imports to: each node's op, output shape, parameters "
                                     "and FLOPs per sample, the totals, and every unsupported node.");
    parser.addPositionalArgument("model", "The ONNX file.");
    parser.addOption(
        {"input-shape", "The shape of one sample of the first input, without the batch: 3x32x32, 128.", "SHAPE"});
    parser.addOption({"batch", "The batch size, where the model leaves it dynamic (default 1).", "N"});
    parser.addOption({"precision",
                      QString::fromStdString("Also show the precision each node runs in under this mode, and the "
                                             "tensor-core alignment its GEMMs want: " +
                                             enumKeyList<PrecisionMode>() + "."),
                      "MODE"});
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    if (const auto exit =
            requirePositionals(parser, 1, kCommand, "MODEL.onnx [--input-shape SHAPE] [--batch N] [--precision MODE]"))
        return *exit;
    std::optional<PrecisionMode> mode;
    if (parser.isSet("precision")) {
        mode = parseEnum<PrecisionMode>(parser.value("precision").toStdString());
        if (!mode)
            return fail(kCommand,
                        QString::fromStdString(
                            unknownEnumMessage<PrecisionMode>("--precision", parser.value("precision").toStdString())),
                        kExitBadInput);
    }
    try {
        ox::ImportOptions options;
        if (parser.isSet("input-shape"))
            options.sampleShape = ox::parseShapeText(parser.value("input-shape").toStdString());
        if (parser.isSet("batch")) {
            bool ok = false;
            options.batchSize = parser.value("batch").toLongLong(&ok);
            if (!ok || options.batchSize <= 0)
                return fail(kCommand,
                            QStringLiteral("--batch must be a positive integer, not \"%1\"").arg(parser.value("batch")),
                            kExitBadInput);
        }
        const ox::OnnxGraph graph = ox::importOnnx(parser.positionalArguments().front().toStdString(), options);
        // Under a mode the nodes compile, which takes every node supported; the graph is listed
        // first all the same, with its unsupported nodes.
        NodePrecisions precisions;
        std::optional<std::string> problem;
        if (mode && graph.unsupportedNodes().empty()) {
            try {
                precisions = ox::nodePrecisions(graph, PrecisionPolicy(*mode));
            } catch (const ConfigError& error) {
                problem = error.what();
            }
        }
        printGraph(graph, mode && !problem && graph.unsupportedNodes().empty() ? &precisions : nullptr);
        ox::requireSupported(graph);
        if (problem) {
            std::fflush(stdout);
            return fail(kCommand,
                        QStringLiteral("under %1 the model does not compile: %2")
                            .arg(QString::fromStdString(precisionModeName(*mode)), QString::fromStdString(*problem)),
                        kExitBadInput);
        }
        if (mode)
            printAlignment(graph, precisions, *mode);
        return kExitOk;
    } catch (const std::exception& error) {
        std::fflush(stdout);
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
