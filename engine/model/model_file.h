#pragma once
// A model read from a file (model.onnx) rather than built from a layer list. The engine does not
// read model files itself: ONNX needs libonnx and protobuf, which only engine/onnx links (an
// engine-only build goes without them). That library installs its support below, and every
// program that trains imported models calls its installer once at start
// (onnx_import::installOnnxModelSupport), so that Model and the Trainer build an imported model
// where they build a preset's (one model, one graph, one training loop), and front ends that do
// not link the ONNX library (the workbench) can still import and describe one.
#include "engine/config/run_config.h"
#include "engine/model/gemm_coverage.h"
#include "engine/model/graph/graph.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mantissa {

struct CompiledModelFile {
    std::unique_ptr<Graph> graph; // parameters created and loaded from the file; null when planning
    GemmCoverage coverage;
    Shape output; // per sample
};

// One node of a model file, in the order the nodes run.
struct ModelFileNode {
    std::string name;
    std::string opType;      // with its domain, "com.microsoft.Gelu", outside the default one
    std::string outputShape; // per sample ("64x4x4"); "?" where it could not be inferred
    std::int64_t parameters = 0;
    double flopsPerSample = 0;
    bool supported = false; // the import accepts it and the engine compiles its op type
    // Under the run's mode: the dtype its ops compute in ("bf16"), or the recipe's format for a
    // GEMM it quantises ("mxfp8 GEMM"), or why the recipe keeps it ("bf16, keep_first_last: the
    // first GEMM"). Empty when the model does not compile.
    std::string precision;
    // For a GEMM or convolution whose extents miss what its format wants (tensor_core_alignment.h):
    // the engine's advice, "in features = 100 is not a multiple of 8: ..."; empty otherwise.
    std::string alignment;
};

struct ModelFileDescription {
    std::string path;
    std::vector<ModelFileNode> nodes;
    std::int64_t parameters = 0;
    double flopsPerSample = 0;
    // Why the model does not compile under the run's settings; empty when it does.
    std::string problem;
};

struct ModelFileSupport {
    // Compiles spec.onnx for spec.input under `policy`. With a backend, the parameters are
    // created on it and loaded with the file's values; without one (planning: what a run would
    // quantise) no graph comes back. Throws ConfigError naming the file and the problem.
    CompiledModelFile (*compile)(const ModelSpec& spec, const PrecisionPolicy& policy, Backend* backend) = nullptr;
    // Makes `config` train the file at `path` (onnx_import::useOnnxModel).
    void (*use)(RunConfig& config, const std::string& path,
                const std::optional<std::vector<std::int64_t>>& sampleShape) = nullptr;
    // config.model.onnx node by node under config's precision (onnx_import::describeOnnxModel).
    ModelFileDescription (*describe)(const RunConfig& config) = nullptr;
};

void installModelFileSupport(const ModelFileSupport& support);

// The installed support's functions; each throws ConfigError when none is installed (a program
// built without ONNX support).
CompiledModelFile compileModelFile(const ModelSpec& spec, const PrecisionPolicy& policy, Backend* backend);
void useModelFile(RunConfig& config, const std::string& path,
                  const std::optional<std::vector<std::int64_t>>& sampleShape = std::nullopt);
ModelFileDescription describeModelFile(const RunConfig& config);

} // namespace mantissa
