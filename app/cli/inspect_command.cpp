// mantissa-cli inspect MODEL.onnx: the graph an ONNX file imports to, node by node in the order
// they run: op, name, output shape, parameters and forward FLOPs per sample; the totals; and
// every node whose operator Mantissa does not support (then exit 2, as for any model it cannot
// train).
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/text_table.h"
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/onnx_import_error.h"
#include "engine/onnx/onnx_node_rows.h"
#include "engine/util/format_number.h"

#include <cstdio>
#include <unordered_map>

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

void printGraph(const ox::OnnxGraph& graph)
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
    table.addColumn(QStringLiteral("supported"));
    for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
        const ox::OnnxNode& node = graph.nodes[i];
        const std::int64_t parameters = ox::nodeParameterCount(graph, node);
        const QString op = text(node.domain.empty() ? node.opType : node.domain + "." + node.opType);
        table.addRow({QString::number(i + 1), op, text(node.name),
                      shapeCell(node.outputs.empty() ? nullptr : graph.value(node.outputs.front())),
                      parameters ? QString::number(parameters) : QString(), flopsCell(node.flopsPerSample),
                      node.supported ? QStringLiteral("yes") : QStringLiteral("NO")});
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
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    if (const auto exit = requirePositionals(parser, 1, kCommand, "MODEL.onnx [--input-shape SHAPE] [--batch N]"))
        return *exit;
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
        printGraph(graph);
        ox::requireSupported(graph);
        return kExitOk;
    } catch (const std::exception& error) {
        std::fflush(stdout);
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
