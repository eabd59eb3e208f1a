#include "engine/onnx/onnx_model.h"

#include "engine/model/model.h"
#include "engine/model/model_file.h"
#include "engine/onnx/compile_onnx.h"
#include "engine/onnx/graph_loss.h"
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/onnx_import_error.h"
#include "engine/onnx/onnx_node_rows.h"

#include <algorithm>
#include <filesystem>

namespace mantissa::onnx_import {

namespace {

// spec.onnx imported as a run compiles it.
OnnxGraph importForTraining(const ModelSpec& spec)
{
    ImportOptions options;
    options.sampleShape = spec.input;
    // Where an export moves the batch off the first axis (attention's [tokens, batch, width]),
    // the compiler finds it by its size, which a batch of 1 hides (batch_layout.h); the compiled
    // graph then takes any batch.
    options.batchSize = 2;
    return importOnnx(spec.onnx, options);
}

CompiledModelFile compileOnnxModel(const ModelSpec& spec, const PrecisionPolicy& policy, Backend* backend)
{
    const OnnxGraph onnx = importForTraining(spec);
    CompiledModelFile result;
    if (backend) {
        CompiledOnnx compiled = compileOnnx(onnx, policy, *backend);
        result.graph = std::move(compiled.graph);
        result.coverage = std::move(compiled.coverage);
        result.output = compiled.output;
        return result;
    }
    // Planning: the parameters land on a scratch backend and go with it; only the plan stays.
    const std::unique_ptr<Backend> scratch = makeCpuBackend(1);
    CompiledOnnx compiled = compileOnnx(onnx, policy, *scratch);
    result.coverage = std::move(compiled.coverage);
    result.output = compiled.output;
    compiled.graph.reset();
    return result;
}

} // namespace

std::set<std::string> initializersHeldTransposed(const ModelSpec& spec)
{
    const std::unique_ptr<Backend> scratch = makeCpuBackend(1);
    return compileOnnx(importForTraining(spec), PrecisionPolicy(PrecisionMode::Fp32), *scratch).transposedInitializers;
}

void installOnnxModelSupport()
{
    installModelFileSupport({.compile = &compileOnnxModel, .use = &useOnnxModel, .describe = &describeOnnxModel});
}

bool isOnnxPath(const std::string& path)
{
    std::string extension = std::filesystem::path(path).extension().string();
    std::transform(extension.begin(), extension.end(), extension.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return extension == ".onnx";
}

void useOnnxModel(RunConfig& config, const std::string& path,
                  const std::optional<std::vector<std::int64_t>>& sampleShape)
{
    ImportOptions options;
    options.sampleShape = sampleShape;
    const OnnxGraph onnx = importOnnx(path, options);
    if (onnx.inputs.empty() || onnx.outputs.empty())
        throw OnnxImportError(path + ": the graph needs a data input and an output to train");
    const std::optional<GraphLoss> loss = graphLoss(onnx);
    if (loss && config.data.task == DataTask::Regression)
        throw OnnxImportError(path + ": its own loss, node '" + loss->node +
                              "', is a classification loss, but data.task is regression");
    const OnnxValue* input = onnx.value(dataInput(onnx));
    const OnnxValue* output = onnx.value(trainingOutput(onnx));
    if (!input || !output || !input->shapeKnown || !output->shapeKnown || input->shape.size() < 2 ||
        output->shape.size() < 2)
        throw OnnxImportError(path + ": its input and output need a static shape with the batch first to train");

    ModelSpec& model = config.model;
    model.onnx = std::filesystem::absolute(path).lexically_normal().string();
    model.layers.clear();
    model.input.assign(input->shape.begin() + 1, input->shape.end());
    model.classes = output->shape.back();
    DataSpec& data = config.data;
    if (data.dataset == DatasetKind::Synthetic) {
        data.syntheticShape = model.input;
        data.syntheticClasses = model.classes;
    } else if (data.dataset == DatasetKind::Text && model.input.size() == 1) {
        data.context = model.input.front();
    }
    // Every problem of the file now, compiled as the run will compile it.
    installOnnxModelSupport();
    plannedGemmCoverage(model, config.precision, config.recipe);
}

} // namespace mantissa::onnx_import
