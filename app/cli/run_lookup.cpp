#include "cli/run_lookup.h"

#include "storage/storage_error.h"
#include "storage/stored_config.h"

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
    QString relocated;
    RunConfig config = storage::storedRunConfig(store, run, &relocated);
    if (!relocated.isEmpty())
        std::fprintf(stderr, "%s\n", qPrintable(relocated));
    return config;
}

} // namespace mantissa::cli
