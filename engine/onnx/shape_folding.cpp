#include "engine/onnx/shape_folding.h"

#include "engine/onnx/constant_evaluator.h"
#include "engine/onnx/onnx_import_error.h"
#include "engine/onnx/op_support.h"
#include "engine/onnx/proto_tensor.h"

#include <onnx/shape_inference/implementation.h>

#include <unordered_map>

namespace mantissa::onnx_import {

std::optional<std::vector<std::int64_t>> staticShapeOf(const onnx::ValueInfoProto& info)
{
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape())
        return std::nullopt;
    std::vector<std::int64_t> shape;
    for (const auto& dim : info.type().tensor_type().shape().dim()) {
        if (!dim.has_dim_value())
            return std::nullopt;
        shape.push_back(dim.dim_value());
    }
    return shape;
}

namespace {

using Shapes = std::unordered_map<std::string, std::vector<std::int64_t>>;

void collectStaticShape(const onnx::ValueInfoProto& info, Shapes& shapes)
{
    if (std::optional<std::vector<std::int64_t>> shape = staticShapeOf(info))
        shapes[info.name()] = std::move(*shape);
}

Shapes staticShapes(const onnx::GraphProto& graph)
{
    Shapes shapes;
    for (const auto& info : graph.input())
        collectStaticShape(info, shapes);
    for (const auto& info : graph.value_info())
        collectStaticShape(info, shapes);
    for (const auto& info : graph.output())
        collectStaticShape(info, shapes);
    for (const auto& tensor : graph.initializer())
        shapes[tensor.name()] = std::vector<std::int64_t>(tensor.dims().begin(), tensor.dims().end());
    return shapes;
}

// Shape (with opset 15's start and end) and Size need only the input's static shape.
std::optional<OnnxTensor> shapeOf(const onnx::NodeProto& node, const Shapes& shapes)
{
    if (node.input_size() < 1)
        return std::nullopt;
    const auto found = shapes.find(node.input(0));
    if (found == shapes.end())
        return std::nullopt;
    const std::vector<std::int64_t>& shape = found->second;
    OnnxTensor out{node.output(0), ElementType::Int64, {}, {}, {}};
    if (node.op_type() == "Size") {
        std::int64_t count = 1;
        for (std::int64_t dim : shape)
            count *= dim;
        out.ints = {count};
        return out;
    }
    const auto rank = std::int64_t(shape.size());
    std::int64_t start = 0, end = rank;
    for (const auto& attribute : node.attribute()) {
        if (attribute.name() == "start")
            start = attribute.i();
        else if (attribute.name() == "end")
            end = attribute.i();
    }
    start = std::clamp<std::int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<std::int64_t>(end < 0 ? end + rank : end, 0, rank);
    for (std::int64_t d = start; d < end; ++d)
        out.ints.push_back(shape[std::size_t(d)]);
    out.shape = {std::int64_t(out.ints.size())};
    return out;
}

std::string firstLine(const std::string& text)
{
    const auto end = text.find('\n');
    return end == std::string::npos ? text : text.substr(0, end);
}

// Removes the nodes and initializers that no graph output depends on.
void dropDeadCode(onnx::GraphProto& graph)
{
    std::unordered_set<std::string> live;
    for (const auto& output : graph.output())
        live.insert(output.name());
    std::vector<bool> keep(std::size_t(graph.node_size()), false);
    for (int i = graph.node_size(); i-- > 0;) {
        const onnx::NodeProto& node = graph.node(i);
        for (const std::string& output : node.output())
            keep[std::size_t(i)] = keep[std::size_t(i)] || live.count(output) != 0;
        if (keep[std::size_t(i)])
            live.insert(node.input().begin(), node.input().end());
    }
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    for (int i = 0; i < graph.node_size(); ++i) {
        if (keep[std::size_t(i)])
            *nodes.Add() = std::move(*graph.mutable_node(i));
    }
    graph.mutable_node()->Swap(&nodes);
    google::protobuf::RepeatedPtrField<onnx::TensorProto> initializers;
    for (auto& tensor : *graph.mutable_initializer()) {
        if (live.count(tensor.name()))
            *initializers.Add() = std::move(tensor);
    }
    graph.mutable_initializer()->Swap(&initializers);
}

} // namespace

void forgetInferredShapes(onnx::GraphProto& graph)
{
    graph.clear_value_info();
    for (onnx::ValueInfoProto& output : *graph.mutable_output()) {
        if (output.type().has_tensor_type())
            output.mutable_type()->mutable_tensor_type()->clear_shape();
    }
}

void inferShapes(onnx::ModelProto& model, const std::string& path)
{
    bool hasUnsupported = false;
    for (const auto& node : model.graph().node())
        hasUnsupported = hasUnsupported || opHandling(node.domain(), node.op_type()) == OpHandling::Unsupported;
    // Strict, so that an input shape that does not fit fails at the node where it stops fitting;
    // lenient where unsupported operators (which may have no shape function) are in the graph:
    // those are reported as such.
    const onnx::ShapeInferenceOptions options(false, hasUnsupported ? 0 : 1, true);
    try {
        onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
    } catch (const std::exception& failure) {
        throw OnnxImportError(path +
                              ": ONNX shape inference fails for the fixed input shape: " + firstLine(failure.what()));
    }
}

std::unordered_set<std::string> foldConstants(onnx::ModelProto& model, const std::string& path, std::int64_t opset)
{
    onnx::GraphProto& graph = *model.mutable_graph();
    std::unordered_map<std::string, OnnxTensor> constants;
    std::unordered_set<std::string> initializerNames;
    for (const onnx::TensorProto& tensor : graph.initializer()) {
        initializerNames.insert(tensor.name());
        // A float initializer with dimensions may be a weight (a regression head's bias has
        // one value, shape [1]): it stays out of folding so that it can train. Integer ones and
        // rank-0 float scalars (an epsilon, a scale) are constants.
        const bool weightCandidate = isFloatingPoint(ElementType(tensor.data_type())) && tensor.dims_size() > 0;
        if (!weightCandidate)
            constants.emplace(tensor.name(), tensorFromProto(tensor, path + ": initializer '" + tensor.name() + "'"));
    }
    std::unordered_set<std::string> folded;
    for (bool changed = true; changed;) {
        changed = false;
        // Inference from scratch each pass: a dimension an earlier pass could only name
        // (unk__0) would otherwise stay a name after its value became known.
        forgetInferredShapes(graph);
        inferShapes(model, path);
        const Shapes shapes = staticShapes(graph);
        google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
        for (onnx::NodeProto& node : *graph.mutable_node()) {
            std::optional<std::vector<OnnxTensor>> outputs;
            if ((node.op_type() == "Shape" || node.op_type() == "Size") &&
                opHandling(node.domain(), node.op_type()) != OpHandling::Unsupported) {
                if (auto shape = shapeOf(node, shapes))
                    outputs = std::vector<OnnxTensor>{std::move(*shape)};
            } else {
                std::vector<const OnnxTensor*> inputs;
                bool allConstant = true;
                for (const std::string& input : node.input()) {
                    const auto found = constants.find(input);
                    allConstant = allConstant && (input.empty() || found != constants.end());
                    inputs.push_back(input.empty() || found == constants.end() ? nullptr : &found->second);
                }
                if (allConstant) {
                    try {
                        outputs = evaluateConstantNode(node, inputs, opset);
                    } catch (const OnnxImportError& failure) {
                        throw OnnxImportError(path + ": " + failure.what());
                    }
                }
            }
            if (!outputs) {
                *kept.Add() = std::move(node);
                continue;
            }
            for (OnnxTensor& output : *outputs) {
                folded.insert(output.name);
                constants[output.name] = std::move(output);
            }
            changed = true;
        }
        graph.mutable_node()->Swap(&kept);
        // The folded values still read by a node or a graph output become initializers.
        std::unordered_set<std::string> needed;
        for (const auto& node : graph.node())
            needed.insert(node.input().begin(), node.input().end());
        for (const auto& output : graph.output())
            needed.insert(output.name());
        for (const std::string& name : folded) {
            if (needed.count(name) && initializerNames.insert(name).second)
                *graph.add_initializer() = tensorToProto(constants.at(name));
        }
    }
    dropDeadCode(graph);
    return folded;
}

} // namespace mantissa::onnx_import
