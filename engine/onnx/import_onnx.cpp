#include "engine/onnx/import_onnx.h"

#include "engine/onnx/input_shapes.h"
#include "engine/onnx/model_file.h"
#include "engine/onnx/node_flops.h"
#include "engine/onnx/onnx_import_error.h"
#include "engine/onnx/op_support.h"
#include "engine/onnx/parameter_roles.h"
#include "engine/onnx/proto_tensor.h"
#include "engine/onnx/shape_folding.h"
#include "engine/util/format_number.h"

#include <unistd.h>

#include <cmath>
#include <unordered_map>

namespace mantissa::onnx_import {

namespace {

std::uint64_t physicalMemoryBytes()
{
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long pageSize = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && pageSize > 0 ? std::uint64_t(pages) * std::uint64_t(pageSize) : 0;
}

// Names for nodes the file leaves unnamed, so that every message can point at a node.
void nameUnnamedNodes(onnx::GraphProto& graph)
{
    for (int i = 0; i < graph.node_size(); ++i) {
        onnx::NodeProto& node = *graph.mutable_node(i);
        if (node.name().empty())
            node.set_name(node.op_type() + "_" + std::to_string(i));
    }
}

OnnxAttribute attributeFromProto(const onnx::AttributeProto& proto, const std::string& where)
{
    OnnxAttribute attribute;
    attribute.name = proto.name();
    switch (proto.type()) {
    case onnx::AttributeProto::INT:
        attribute.kind = OnnxAttribute::Kind::Int;
        attribute.i = proto.i();
        break;
    case onnx::AttributeProto::FLOAT:
        attribute.kind = OnnxAttribute::Kind::Float;
        attribute.f = proto.f();
        break;
    case onnx::AttributeProto::STRING:
        attribute.kind = OnnxAttribute::Kind::String;
        attribute.s = proto.s();
        break;
    case onnx::AttributeProto::INTS:
        attribute.kind = OnnxAttribute::Kind::Ints;
        attribute.ints.assign(proto.ints().begin(), proto.ints().end());
        break;
    case onnx::AttributeProto::FLOATS:
        attribute.kind = OnnxAttribute::Kind::Floats;
        attribute.floats.assign(proto.floats().begin(), proto.floats().end());
        break;
    case onnx::AttributeProto::STRINGS:
        attribute.kind = OnnxAttribute::Kind::Strings;
        attribute.strings.assign(proto.strings().begin(), proto.strings().end());
        break;
    case onnx::AttributeProto::TENSOR:
        attribute.kind = OnnxAttribute::Kind::Tensor;
        attribute.tensor = tensorFromProto(proto.t(), where + " attribute '" + proto.name() + "'");
        break;
    default: break; // graphs, sparse tensors, types: only ops outside the supported list carry them
    }
    return attribute;
}

struct ValueType {
    ElementType type = ElementType::Undefined;
    std::optional<std::vector<std::int64_t>> shape; // when fully static
};

void collectValueType(const onnx::ValueInfoProto& info, std::unordered_map<std::string, ValueType>& types)
{
    if (!info.type().has_tensor_type())
        return;
    ValueType& entry = types[info.name()];
    entry.type = ElementType(info.type().tensor_type().elem_type());
    if (std::optional<std::vector<std::int64_t>> shape = staticShapeOf(info))
        entry.shape = std::move(*shape);
}

// ONNX 1.12 infers no shape for the statistics a training-mode BatchNormalization outputs
// (running mean and variance; before opset 14 also the saved mean and variance): one value per
// channel, like the running mean it reads (input 3).
void fillRunningStatisticShapes(const onnx::GraphProto& graph, std::unordered_map<std::string, ValueType>& types)
{
    for (const onnx::NodeProto& node : graph.node()) {
        if (node.op_type() != "BatchNormalization" || node.input_size() < 5)
            continue;
        for (int k = 1; k < node.output_size(); ++k) {
            if (node.output(k).empty())
                continue;
            const auto statistic = types.find(node.input(3));
            ValueType& output = types[node.output(k)];
            if (!output.shape && statistic != types.end()) {
                output.shape = statistic->second.shape;
                output.type = statistic->second.type;
            }
        }
    }
}

std::string indexText(std::size_t index, std::size_t count)
{
    return "at index " + std::to_string(index) + " of its " + std::to_string(count) + " values";
}

void checkInitializerValues(const OnnxGraph& graph)
{
    const auto check = [&](const OnnxTensor& tensor, bool infinityAllowed) {
        for (std::size_t i = 0; i < tensor.floats.size(); ++i) {
            const float value = tensor.floats[i];
            if (std::isnan(value) || (!infinityAllowed && std::isinf(value)))
                throw OnnxImportError(graph.path + ": initializer '" + tensor.name + "' holds " +
                                      (std::isnan(value) ? "NaN"
                                       : value > 0       ? "+Inf"
                                                         : "-Inf") +
                                      " " + indexText(i, tensor.floats.size()));
        }
    };
    for (const OnnxTensor& tensor : graph.parameters)
        check(tensor, false);
    // A constant may be a mask of -Inf (added to attention scores); NaN is never meaningful.
    for (const OnnxTensor& tensor : graph.constants)
        check(tensor, true);
}

void checkMemory(const OnnxGraph& graph, std::uint64_t budget)
{
    if (budget == 0)
        return;
    // fp32 master, gradient and two optimizer moments per parameter; the constants once.
    double bytes = double(graph.parameterElementCount()) * 4.0 * 4.0;
    for (const OnnxTensor& tensor : graph.constants)
        bytes += double(tensor.elementCount()) * 4.0;
    if (bytes > double(budget))
        throw OnnxImportError(graph.path + ": too large: " + std::to_string(graph.parameterElementCount()) +
                              " parameters need " + formatBytes(std::uint64_t(bytes)) +
                              " for fp32 weights, gradients and optimizer state, more than the " + formatBytes(budget) +
                              " of memory available");
}

OnnxGraph buildGraph(const onnx::ModelProto& model, const std::string& path, std::int64_t batch,
                     const std::unordered_set<std::string>& folded)
{
    const onnx::GraphProto& proto = model.graph();
    OnnxGraph graph;
    graph.path = path;
    graph.opsetVersion = defaultOpset(model);
    graph.producer = model.producer_name() + (model.producer_version().empty() ? "" : " " + model.producer_version());
    graph.batchSize = batch;
    for (const onnx::ValueInfoProto* input : dataInputs(proto))
        graph.inputs.push_back(input->name());
    for (const auto& output : proto.output())
        graph.outputs.push_back(output.name());

    std::unordered_map<std::string, ValueType> types;
    for (const auto& info : proto.input())
        collectValueType(info, types);
    for (const auto& info : proto.value_info())
        collectValueType(info, types);
    for (const auto& info : proto.output())
        collectValueType(info, types);
    for (const auto& tensor : proto.initializer())
        types[tensor.name()] = {ElementType(tensor.data_type()),
                                std::vector<std::int64_t>(tensor.dims().begin(), tensor.dims().end())};
    fillRunningStatisticShapes(proto, types);

    for (const onnx::NodeProto& nodeProto : proto.node()) {
        OnnxNode node;
        node.opType = nodeProto.op_type();
        node.domain = nodeProto.domain() == "ai.onnx" ? "" : nodeProto.domain();
        node.name = nodeProto.name();
        node.inputs.assign(nodeProto.input().begin(), nodeProto.input().end());
        node.outputs.assign(nodeProto.output().begin(), nodeProto.output().end());
        const std::string where = path + ": node '" + node.name + "' (" + node.opType + ")";
        for (const auto& attribute : nodeProto.attribute())
            node.attributes.push_back(attributeFromProto(attribute, where));
        node.supported = isSupportedOp(node.domain, node.opType);
        if (node.opType == "SoftmaxCrossEntropyLoss" && node.domain.empty() && !graph.lossNode)
            graph.lossNode = graph.nodes.size();
        graph.nodes.push_back(std::move(node));
    }

    std::vector<OnnxTensor> initializers;
    std::unordered_map<std::string, const OnnxTensor*> floatInitializers;
    initializers.reserve(std::size_t(proto.initializer_size()));
    for (const onnx::TensorProto& tensor : proto.initializer())
        initializers.push_back(tensorFromProto(tensor, path + ": initializer '" + tensor.name() + "'"));
    for (const OnnxTensor& tensor : initializers) {
        if (isFloatingPoint(tensor.type) && !folded.count(tensor.name))
            floatInitializers[tensor.name] = &tensor;
    }
    const std::unordered_set<std::string> trainable = trainableInitializers(graph.nodes, floatInitializers);
    for (OnnxTensor& tensor : initializers) {
        const bool parameter = trainable.count(tensor.name) != 0;
        graph.values.push_back(
            {tensor.name, tensor.type, tensor.shape, true, parameter ? ValueKind::Parameter : ValueKind::Constant});
        (parameter ? graph.parameters : graph.constants).push_back(std::move(tensor));
    }

    const bool hasUnsupported = !graph.unsupportedNodes().empty();
    const auto addValue = [&](const std::string& name, ValueKind kind, const OnnxNode* producer) {
        const auto found = types.find(name);
        OnnxValue value{name, ElementType::Undefined, {}, false, kind};
        if (found != types.end()) {
            value.type = found->second.type;
            value.shapeKnown = found->second.shape.has_value();
            value.shape = found->second.shape.value_or(std::vector<std::int64_t>{});
        }
        if (!value.shapeKnown && !hasUnsupported)
            throw OnnxImportError(
                path + ": the shape of '" + name + "'" +
                (producer ? " (output of node '" + producer->name + "', " + producer->opType + ")" : std::string()) +
                " is not static for the fixed input shape");
        graph.values.push_back(std::move(value));
    };
    for (const std::string& input : graph.inputs)
        addValue(input, ValueKind::Input, nullptr);
    for (const OnnxNode& node : graph.nodes) {
        for (const std::string& output : node.outputs) {
            if (!output.empty())
                addValue(output, ValueKind::Activation, &node);
        }
    }

    std::unordered_map<std::string, const std::vector<std::int64_t>*> shapes;
    for (const OnnxValue& value : graph.values) {
        if (value.shapeKnown)
            shapes[value.name] = &value.shape;
    }
    const ShapeLookup shapeOf = [&](const std::string& name) -> const std::vector<std::int64_t>* {
        const auto found = shapes.find(name);
        return found == shapes.end() ? nullptr : found->second;
    };
    for (OnnxNode& node : graph.nodes)
        node.flopsPerSample = nodeFlopsPerSample(node, shapeOf, batch);
    return graph;
}

} // namespace

OnnxGraph importOnnx(const std::string& path, const ImportOptions& options)
{
    const std::uint64_t budget = options.memoryBudgetBytes != 0 ? options.memoryBudgetBytes : physicalMemoryBytes();
    onnx::ModelProto model = loadModelFile(path, budget);
    const std::int64_t opset = defaultOpset(model);
    nameUnnamedNodes(*model.mutable_graph());
    fixInputValues(model, options.fixedInputs, path);
    const std::int64_t batch = fixInputShapes(model, options, path);
    const std::unordered_set<std::string> folded = foldConstants(model, path, opset);
    OnnxGraph graph = buildGraph(model, path, batch, folded);
    checkInitializerValues(graph);
    if (options.requireParameters && graph.parameters.empty())
        throw OnnxImportError(path + ": no float parameters: no initializer feeds a weight input (Gemm, MatMul, Conv, "
                                     "normalisation scale, embedding table), so there is nothing to train");
    checkMemory(graph, budget);
    return graph;
}

void requireSupported(const OnnxGraph& graph)
{
    const std::vector<const OnnxNode*> unsupported = graph.unsupportedNodes();
    if (unsupported.empty())
        return;
    std::string message = graph.path + ": " + std::to_string(unsupported.size()) + " node" +
                          (unsupported.size() == 1 ? "" : "s") + " with an unsupported operator:";
    for (const OnnxNode* node : unsupported) {
        message += "\n  node '" + node->name + "': " + (node->domain.empty() ? "" : node->domain + ".") + node->opType;
        if (opHandling(node->domain, node->opType) == OpHandling::FoldedOnly)
            message += " (on values that are not constant for the fixed input shape; it is only folded)";
    }
    message += "\nsupported operators: " + supportedOpsText();
    throw OnnxImportError(message);
}

std::vector<std::int64_t> parseShapeText(const std::string& text)
{
    std::vector<std::int64_t> shape;
    std::size_t start = 0;
    while (true) {
        const std::size_t end = text.find('x', start);
        const std::string part = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
        std::size_t used = 0;
        long long dim = 0;
        try {
            dim = std::stoll(part, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (part.empty() || used != part.size() || dim <= 0 || part.front() == '+' || part.front() == ' ')
            throw OnnxImportError("input shape '" + text + "': expected positive integers joined by 'x', like 3x32x32");
        shape.push_back(dim);
        if (end == std::string::npos)
            return shape;
        start = end + 1;
    }
}

std::string shapeText(const std::vector<std::int64_t>& shape)
{
    std::string text;
    for (std::size_t d = 0; d < shape.size(); ++d) {
        if (d != 0)
            text += 'x';
        text += std::to_string(shape[d]);
    }
    return text.empty() ? "(scalar)" : text;
}

} // namespace mantissa::onnx_import
