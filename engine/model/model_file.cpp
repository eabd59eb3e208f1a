#include "engine/model/model_file.h"

#include "engine/util/check.h"

#include <mutex>

namespace mantissa {

namespace {

// Installed once at a program's start, read by whichever thread builds a model.
std::mutex g_mutex;
ModelFileSupport g_support;

ModelFileSupport installed(const std::string& path)
{
    const std::lock_guard lock(g_mutex);
    if (!g_support.compile)
        throw ConfigError("model.onnx is " + path +
                          ", but this program was built without ONNX support (libonnx-dev and libprotobuf-dev)");
    return g_support;
}

} // namespace

void installModelFileSupport(const ModelFileSupport& support)
{
    const std::lock_guard lock(g_mutex);
    g_support = support;
}

CompiledModelFile compileModelFile(const ModelSpec& spec, const PrecisionPolicy& policy, Backend* backend)
{
    CompiledModelFile compiled = installed(spec.onnx).compile(spec, policy, backend);
    // The task reads the logits' last dimension as the classes (per token for a sequence model).
    const std::vector<std::int64_t>& output = compiled.output.dims();
    if (output.empty() || output.back() != spec.classes)
        throw ConfigError("model.classes is " + std::to_string(spec.classes) + " but the output of " + spec.onnx +
                          " has the per-sample shape " + compiled.output.toString() +
                          ", whose last dimension is the classes");
    return compiled;
}

void useModelFile(RunConfig& config, const std::string& path,
                  const std::optional<std::vector<std::int64_t>>& sampleShape)
{
    installed(path).use(config, path, sampleShape);
}

ModelFileDescription describeModelFile(const RunConfig& config)
{
    return installed(config.model.onnx).describe(config);
}

} // namespace mantissa
