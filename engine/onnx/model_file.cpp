#include "engine/onnx/model_file.h"

#include "engine/onnx/onnx_import_error.h"
#include "engine/util/format_number.h"

#include <onnx/checker.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

namespace mantissa::onnx_import {

namespace fs = std::filesystem;

namespace {

std::string readBytes(const std::string& path, std::uint64_t offset, std::uint64_t length)
{
    std::ifstream file(path, std::ios::binary);
    std::string bytes(length, '\0');
    file.seekg(std::streamoff(offset));
    file.read(bytes.data(), std::streamsize(length));
    if (!file || std::uint64_t(file.gcount()) != length)
        throw OnnxImportError(path + ": cannot read " + std::to_string(length) + " bytes at offset " +
                              std::to_string(offset));
    return bytes;
}

// ONNX keeps the weights of models over protobuf's 2 GiB in files next to the model, named by
// each tensor's external_data entries (location, offset, length). They become raw_data here.
void loadExternalData(onnx::TensorProto& tensor, const fs::path& folder, const std::string& modelPath,
                      std::uint64_t& bytesRead, std::uint64_t byteBudget)
{
    std::string location;
    std::uint64_t offset = 0;
    std::optional<std::uint64_t> length;
    for (const onnx::StringStringEntryProto& entry : tensor.external_data()) {
        if (entry.key() == "location")
            location = entry.value();
        else if (entry.key() == "offset")
            offset = std::stoull(entry.value());
        else if (entry.key() == "length")
            length = std::stoull(entry.value());
    }
    const std::string what = modelPath + ": initializer '" + tensor.name() + "'";
    if (location.empty())
        throw OnnxImportError(what + " keeps its data in an external file but names none");
    // ONNX defines the location relative to the model's folder, and so does its checker: a
    // file elsewhere is refused rather than read into the weights.
    const fs::path relative(location);
    if (relative.is_absolute() ||
        std::any_of(relative.begin(), relative.end(), [](const fs::path& part) { return part == ".."; }))
        throw OnnxImportError(what + " names the external file '" + location +
                              "', outside the model's folder; ONNX keeps external data beside the model");
    const fs::path dataPath = folder / location;
    std::error_code error;
    const std::uint64_t fileSize = fs::file_size(dataPath, error);
    if (error)
        throw OnnxImportError(what + " keeps its data in the external file '" + location +
                              "', which is missing (looked for " + dataPath.string() + ")");
    const std::uint64_t size = length.value_or(fileSize >= offset ? fileSize - offset : 0);
    if (offset + size > fileSize)
        throw OnnxImportError(what + " needs bytes " + std::to_string(offset) + " to " + std::to_string(offset + size) +
                              " of '" + location + "', which has " + std::to_string(fileSize));
    bytesRead += size;
    if (byteBudget != 0 && bytesRead > byteBudget)
        throw OnnxImportError(modelPath + ": too large: its weights take more than " + formatBytes(byteBudget) +
                              ", the memory available");
    tensor.set_raw_data(readBytes(dataPath.string(), offset, size));
    tensor.clear_external_data();
    tensor.set_data_location(onnx::TensorProto::DEFAULT);
}

void loadAllExternalData(onnx::ModelProto& model, const std::string& path, std::uint64_t bytesRead,
                         std::uint64_t byteBudget)
{
    const fs::path folder = fs::path(path).parent_path();
    for (onnx::TensorProto& tensor : *model.mutable_graph()->mutable_initializer()) {
        if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
            loadExternalData(tensor, folder, path, bytesRead, byteBudget);
    }
    for (onnx::NodeProto& node : *model.mutable_graph()->mutable_node()) {
        for (onnx::AttributeProto& attribute : *node.mutable_attribute()) {
            if (attribute.has_t() && attribute.t().data_location() == onnx::TensorProto::EXTERNAL)
                loadExternalData(*attribute.mutable_t(), folder, path, bytesRead, byteBudget);
        }
    }
}

std::string firstLine(const std::string& text)
{
    const auto end = text.find('\n');
    return end == std::string::npos ? text : text.substr(0, end);
}

} // namespace

std::int64_t defaultOpset(const onnx::ModelProto& model)
{
    for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
        if (opset.domain().empty() || opset.domain() == "ai.onnx")
            return opset.version();
    }
    return 0;
}

onnx::ModelProto loadModelFile(const std::string& path, std::uint64_t byteBudget)
{
    std::error_code error;
    if (!fs::is_regular_file(path, error))
        throw OnnxImportError(path + ": " + (fs::exists(path, error) ? "not a file" : "no such file"));
    const std::uint64_t size = fs::file_size(path, error);
    if (byteBudget != 0 && size > byteBudget)
        throw OnnxImportError(path + ": too large: " + formatBytes(size) + ", more than the " +
                              formatBytes(byteBudget) + " of memory available");
    if (size > std::uint64_t(std::numeric_limits<int>::max()))
        throw OnnxImportError(path + ": " + formatBytes(size) +
                              " in one file, over protobuf's 2 GiB limit; ONNX stores larger models with their "
                              "weights in external data files (onnx.save_model(..., save_as_external_data=True))");
    std::ifstream file(path, std::ios::binary);
    if (!file)
        throw OnnxImportError(path + ": cannot be opened");
    std::string bytes(size, '\0');
    file.read(bytes.data(), std::streamsize(size));
    if (!file)
        throw OnnxImportError(path + ": cannot be read");

    onnx::ModelProto model;
    if (size == 0 || !model.ParseFromString(bytes))
        throw OnnxImportError(path + ": not an ONNX model, or a truncated one: protobuf cannot parse its " +
                              std::to_string(size) + " bytes as an onnx.ModelProto");
    if (model.ir_version() <= 0 || !model.has_graph() || model.opset_import_size() == 0)
        throw OnnxImportError(path + ": not an ONNX model, or a truncated one: it has no " +
                              (model.ir_version() <= 0 ? "IR version"
                               : !model.has_graph()    ? "graph"
                                                       : "opset import"));
    bytes = std::string(); // the ModelProto holds its own copy

    const std::int64_t opset = defaultOpset(model);
    if (opset > kNewestOpset)
        throw OnnxImportError(path + ": opset " + std::to_string(opset) + " is newer than " +
                              std::to_string(kNewestOpset) + ", the newest this build's ONNX " + MANTISSA_ONNX_VERSION +
                              " knows; export it again with opset_version=" + std::to_string(kNewestOpset) +
                              " or lower");
    loadAllExternalData(model, path, size, byteBudget);
    try {
        onnx::checker::check_model(model);
    } catch (const std::exception& failure) {
        throw OnnxImportError(path + ": the ONNX checker refuses it: " + firstLine(failure.what()));
    }
    return model;
}

} // namespace mantissa::onnx_import
