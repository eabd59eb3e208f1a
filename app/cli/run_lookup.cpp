#include "cli/run_lookup.h"

#include "storage/storage_error.h"

#include <cstdio>

namespace mantissa::cli {

storage::RunInfo lookUpRun(const storage::RunStore& store, const QString& idOrName)
{
    try {
        return store.findRun(idOrName);
    } catch (const storage::StorageError& error) {
        if (error.kind() != storage::StorageError::Kind::NotFound)
            throw;
        // The store's message says what is missing; point at where to look.
        throw storage::StorageError(
            error.kind(), error.path(),
            QStringLiteral("no run \"%1\" in this database; `mantissa-cli runs` lists them").arg(idOrName));
    }
}

RunConfig storedRunConfig(const storage::RunStore& store, const storage::RunInfo& run)
{
    RunConfig config = parseRunConfig(run.configJson.toStdString(), "run " + run.name.toStdString());
    if (!run.modelSha256.isEmpty()) {
        const QString model = store.modelFilePath(run);
        if (model.toStdString() != config.model.onnx)
            std::fprintf(stderr, "the model of run %s: %s (sha256 %s), the stored copy of %s\n", qPrintable(run.name),
                         qPrintable(model), qPrintable(run.modelSha256), qPrintable(run.modelSource));
        config.model.onnx = model.toStdString();
    }
    return config;
}

} // namespace mantissa::cli
