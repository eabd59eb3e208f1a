#include "engine/onnx/input_shapes.h"

#include "engine/onnx/onnx_import_error.h"
#include "engine/onnx/proto_tensor.h"

#include <algorithm>
#include <unordered_set>

namespace mantissa::onnx_import {

namespace {

std::string dimText(const onnx::TensorShapeProto_Dimension& dim)
{
    if (dim.has_dim_value())
        return std::to_string(dim.dim_value());
    return dim.has_dim_param() && !dim.dim_param().empty() ? dim.dim_param() : "?";
}

std::string shapeText(const onnx::TensorShapeProto& shape)
{
    std::string text = "[";
    for (int d = 0; d < shape.dim_size(); ++d)
        text += (d ? ", " : "") + dimText(shape.dim(d));
    return text + "]";
}

// The messages, built outside the loop over dimensions.
std::string rankMismatch(const std::string& what, const std::string& declared, int rank,
                         const std::vector<std::int64_t>& sampleShape)
{
    return what + " has shape " + declared + " (batch first), rank " + std::to_string(rank) + "; the input shape " +
           onnx_import::shapeText(sampleShape) + " gives " + std::to_string(sampleShape.size()) +
           " dimensions per sample, it needs " + std::to_string(rank - 1);
}

std::string notFitting(const std::string& what, const std::string& declared,
                       const std::vector<std::int64_t>& sampleShape)
{
    return what + " has shape " + declared + " (batch first), which does not fit the input shape " +
           onnx_import::shapeText(sampleShape);
}

std::string dynamicWithoutShape(const std::string& what, const std::string& declared, int dimension,
                                const std::string& dimName, bool firstInput, int rank)
{
    std::string message =
        what + " has shape " + declared + ": dimension " + std::to_string(dimension) + " (" + dimName + ") is dynamic";
    if (firstInput)
        message += std::string("; give the shape of one sample with --input-shape (e.g. ") +
                   (rank == 4 ? "3x224x224" : "128") + ")";
    else
        message += "; only the first input's sample shape can be given, export the model with fixed dimensions for "
                   "the others";
    return message;
}

} // namespace

std::vector<const onnx::ValueInfoProto*> dataInputs(const onnx::GraphProto& graph)
{
    std::unordered_set<std::string> initializers;
    for (const auto& tensor : graph.initializer())
        initializers.insert(tensor.name());
    std::vector<const onnx::ValueInfoProto*> inputs;
    for (const auto& input : graph.input()) {
        if (!initializers.count(input.name()))
            inputs.push_back(&input);
    }
    return inputs;
}

void fixInputValues(onnx::ModelProto& model, const std::vector<OnnxTensor>& values, const std::string& path)
{
    onnx::GraphProto& graph = *model.mutable_graph();
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    for (const OnnxTensor& value : values) {
        auto* inputs = graph.mutable_input();
        const auto input = std::find_if(inputs->begin(), inputs->end(),
                                        [&](const onnx::ValueInfoProto& info) { return info.name() == value.name; });
        if (input == inputs->end())
            throw OnnxImportError(path + ": no graph input '" + value.name + "' to fix the value of");
        const auto declared = ElementType(input->type().tensor_type().elem_type());
        if (declared != value.type || !canWriteToProto(value.type))
            throw OnnxImportError(path + ": input '" + value.name + "' is " + elementTypeName(declared) +
                                  ", its fixed value " + elementTypeName(value.type) +
                                  (canWriteToProto(value.type) ? "" : " (not one the import can fix)"));
        inputs->erase(input);
        onnx::NodeProto& constant = *nodes.Add();
        constant.set_op_type("Constant");
        constant.set_name("fixed_input_" + value.name);
        constant.add_output(value.name);
        onnx::AttributeProto& attribute = *constant.add_attribute();
        attribute.set_name("value");
        attribute.set_type(onnx::AttributeProto::TENSOR);
        *attribute.mutable_t() = tensorToProto(value);
        attribute.mutable_t()->clear_name();
    }
    for (onnx::NodeProto& node : *graph.mutable_node())
        *nodes.Add() = std::move(node);
    graph.mutable_node()->Swap(&nodes);
}

std::int64_t fixInputShapes(onnx::ModelProto& model, const ImportOptions& options, const std::string& path)
{
    const std::vector<const onnx::ValueInfoProto*> inputs = dataInputs(model.graph());
    std::optional<std::int64_t> batch;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
        auto& input = const_cast<onnx::ValueInfoProto&>(*inputs[k]);
        const std::string what = path + ": input '" + input.name() + "'";
        if (!input.type().has_tensor_type())
            throw OnnxImportError(what + " is not a tensor");
        if (!input.type().tensor_type().has_shape())
            throw OnnxImportError(what + " declares no shape (not even its rank)");
        onnx::TensorShapeProto& shape = *input.mutable_type()->mutable_tensor_type()->mutable_shape();
        const std::string declared = shapeText(shape);
        const bool first = k == 0;
        if (first && options.sampleShape && std::size_t(shape.dim_size()) != options.sampleShape->size() + 1)
            throw OnnxImportError(rankMismatch(what, declared, shape.dim_size(), *options.sampleShape));
        for (int d = 0; d < shape.dim_size(); ++d) {
            onnx::TensorShapeProto_Dimension& dim = *shape.mutable_dim(d);
            if (d == 0) {
                if (!dim.has_dim_value())
                    dim.set_dim_value(options.batchSize);
                if (!batch)
                    batch = dim.dim_value();
                continue;
            }
            const std::optional<std::int64_t> given =
                first && options.sampleShape ? std::optional((*options.sampleShape)[std::size_t(d - 1)]) : std::nullopt;
            if (dim.has_dim_value()) {
                if (given && *given != dim.dim_value())
                    throw OnnxImportError(notFitting(what, declared, *options.sampleShape));
                continue;
            }
            if (!given)
                throw OnnxImportError(dynamicWithoutShape(what, declared, d, dimText(dim), first, shape.dim_size()));
            dim.set_dim_value(*given);
        }
    }
    return batch.value_or(1);
}

} // namespace mantissa::onnx_import
