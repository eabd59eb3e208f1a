#include "engine/onnx/export_onnx.h"

#include "engine/onnx/export_layer_list.h"
#include "engine/onnx/model_file.h"
#include "engine/onnx/onnx_graph.h"
#include "engine/onnx/onnx_model.h"
#include "engine/util/check.h"

#include <onnx/checker.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

namespace mantissa::onnx_import {

namespace {

static_assert(std::endian::native == std::endian::little, "ONNX raw_data is little-endian, as fp32 is here");

// The model's tensors that came from initializers, by initializer name: a parameter takes its
// initializer's name at compile time (compile_onnx.cpp), and a batch normalisation's running
// statistics are its layer's buffers, the layer named after its node (BatchNorm::buffers).
std::map<std::string, Tensor*> trainedTensors(const onnx::ModelProto& proto, Model& model, std::int64_t& parameters)
{
    std::map<std::string, Tensor*> byInitializer;
    for (Parameter* p : model.parametersInBackwardOrder())
        byInitializer[p->name] = &p->master;
    parameters = static_cast<std::int64_t>(byInitializer.size());
    std::map<std::string, Tensor*> buffers;
    for (auto& [name, tensor] : model.buffers())
        buffers[name] = tensor;
    for (const onnx::NodeProto& node : proto.graph().node()) {
        if (node.op_type() != "BatchNormalization" || node.input_size() < 5)
            continue;
        for (const auto& [input, suffix] : {std::pair{3, ".running_mean"}, std::pair{4, ".running_var"}}) {
            const auto found = buffers.find(node.name() + suffix);
            if (found == buffers.end())
                throw ConfigError("export: the running statistic '" + node.input(input) + "' of node '" + node.name() +
                                  "' has no trained tensor (" + node.name() + suffix + ")");
            byInitializer[node.input(input)] = found->second;
        }
    }
    return byInitializer;
}

// `heldTransposed`: the tensor holds the initializer's transpose (a [K, N] MatMul weight).
void writeValues(onnx::TensorProto& initializer, const Tensor& tensor, bool heldTransposed, Backend& backend,
                 const std::string& what)
{
    if (initializer.data_type() != onnx::TensorProto::FLOAT)
        throw ConfigError(what + " is stored as ONNX type " + std::to_string(initializer.data_type()) +
                          ", not float; export writes fp32 weights into fp32 initializers only");
    std::int64_t count = 1;
    for (std::int64_t d : initializer.dims())
        count *= d;
    if (count != tensor.numel())
        throw ConfigError(what + " holds " + std::to_string(count) + " values but the trained tensor " +
                          std::to_string(tensor.numel()));
    std::vector<float> values(static_cast<std::size_t>(tensor.numel()));
    backend.download(tensor, values.data());
    if (heldTransposed)
        values = transpose2d(values, {initializer.dims(1), initializer.dims(0)});
    std::string bytes(values.size() * sizeof(float), '\0');
    std::memcpy(bytes.data(), values.data(), bytes.size());
    initializer.clear_float_data();
    initializer.clear_external_data();
    initializer.set_data_location(onnx::TensorProto::DEFAULT);
    initializer.set_raw_data(std::move(bytes));
}

// Writes the trained tensors into the initializers of the file the model was imported from.
onnx::ModelProto intoImportedGraph(const RunConfig& config, Model& model, Backend& backend, ExportSummary& summary)
{
    onnx::ModelProto proto = loadModelFile(config.model.onnx, 0);
    summary.source = config.model.onnx;
    std::map<std::string, Tensor*> trained = trainedTensors(proto, model, summary.parameters);
    const std::set<std::string> transposed = initializersHeldTransposed(config.model);
    for (onnx::TensorProto& initializer : *proto.mutable_graph()->mutable_initializer()) {
        const auto found = trained.find(initializer.name());
        if (found == trained.end())
            continue;
        writeValues(initializer, *found->second, transposed.contains(initializer.name()), backend,
                    "export: initializer '" + initializer.name() + "'");
        trained.erase(found);
        ++summary.initializers;
    }
    if (!trained.empty())
        throw ConfigError("export: the trained tensor '" + trained.begin()->first +
                          "' has no initializer of that name in " + config.model.onnx);
    return proto;
}

} // namespace

ExportSummary exportTrainedOnnx(const RunConfig& config, Model& model, Backend& backend, const std::string& outPath)
{
    ExportSummary summary;
    onnx::ModelProto proto;
    if (config.model.onnx.empty()) {
        proto = layerListToOnnx(model, backend);
        summary.parameters = static_cast<std::int64_t>(model.parametersInBackwardOrder().size());
        summary.initializers = summary.parameters + static_cast<std::int64_t>(model.buffers().size());
    } else {
        proto = intoImportedGraph(config, model, backend, summary);
    }
    summary.nodes = proto.graph().node_size();
    proto.set_producer_name("mantissa");
    try {
        onnx::checker::check_model(proto);
    } catch (const std::exception& failure) {
        throw ConfigError("export: the ONNX checker refuses the written model: " + std::string(failure.what()));
    }
    std::string bytes;
    if (!proto.SerializeToString(&bytes))
        throw IoError(outPath + ": the model does not serialise (over protobuf's 2 GiB?)");
    const std::string partial = outPath + ".partial";
    {
        std::ofstream out(partial, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        out.close();
        if (!out) {
            std::remove(partial.c_str()); // a half-written file is never left beside the output
            throw IoError(outPath + ": cannot write the model");
        }
    }
    if (std::rename(partial.c_str(), outPath.c_str()) != 0) {
        std::remove(partial.c_str());
        throw IoError(outPath + ": cannot write the model (rename failed)");
    }
    summary.bytes = bytes.size();
    return summary;
}

} // namespace mantissa::onnx_import
