#pragma once
// An ONNX file as a run's model (model.onnx): the compiler Model uses for it
// (engine/model/model_file.h), and the settings a run config takes from the file.
#include "engine/config/run_config.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mantissa::onnx_import {

// Makes Model and the Trainer compile model.onnx with compileOnnx, and useModelFile and
// describeModelFile (engine/model/model_file.h) read ONNX files. Call once at a program's start.
void installOnnxModelSupport();

// Makes `config` train the ONNX model at `path` instead of its layer list: model.onnx is the
// file's absolute path, model.input its input's per-sample shape (`sampleShape` where the file
// leaves dimensions dynamic, checked against the ones it fixes) and model.classes its output's
// last dimension. Synthetic data takes the model's shape and classes, text data its sequence
// length as the context. The file is imported and compiled under the config's precision, so that
// every problem with it (not ONNX, an unsupported node, NaN weights, a shape that does not fit)
// throws ConfigError here, before anything runs.
void useOnnxModel(RunConfig& config, const std::string& path,
                  const std::optional<std::vector<std::int64_t>>& sampleShape = std::nullopt);

// The initializers of spec.onnx whose parameters hold their transpose (compile_onnx.h), so that
// an export writes them back in the file's layout.
std::set<std::string> initializersHeldTransposed(const ModelSpec& spec);

// Whether `path` names an ONNX model by its extension (.onnx), as a CONFIG.json argument may.
bool isOnnxPath(const std::string& path);

} // namespace mantissa::onnx_import
