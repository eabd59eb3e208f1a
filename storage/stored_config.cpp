#include "storage/stored_config.h"

#include "storage/run_store.h"

namespace mantissa::storage {

RunConfig storedRunConfig(const RunStore& store, const RunInfo& run, QString* relocated)
{
    RunConfig config = parseRunConfig(run.configJson.toStdString(), "run " + run.name.toStdString());
    if (relocated)
        relocated->clear();
    if (!run.modelSha256.isEmpty()) {
        const QString model = store.modelFilePath(run);
        if (relocated && model.toStdString() != config.model.onnx)
            *relocated = QStringLiteral("the model of run %1: %2 (sha256 %3), the stored copy of %4")
                             .arg(run.name, model, run.modelSha256, run.modelSource);
        config.model.onnx = model.toStdString();
    }
    return config;
}

} // namespace mantissa::storage
