#include "cli/init_weights.h"

#include "storage/latest_state.h"
#include "storage/storage_error.h"

#include <QFileInfo>

namespace mantissa::cli {

namespace {

storage::StorageError notFound(const storage::RunStore& store, const QString& message)
{
    return storage::StorageError(storage::StorageError::Kind::NotFound, store.path(), message);
}

} // namespace

InitialWeights resolveInitialWeights(const storage::RunStore& store, const QString& value)
{
    // A file wins over a run of the same name: a path typed on purpose is what was meant.
    if (const QFileInfo file(value); file.isFile())
        return {file.absoluteFilePath(), file.absoluteFilePath()};
    storage::RunInfo run;
    try {
        run = store.findRun(value);
    } catch (const storage::StorageError& error) {
        if (error.kind() != storage::StorageError::Kind::NotFound)
            throw;
        throw notFound(store, QStringLiteral("--init-from \"%1\" is neither a run in this database nor a checkpoint "
                                             "file; `mantissa-cli runs` lists the runs")
                                  .arg(value));
    }
    const storage::LatestState latest = storage::latestState(store, run);
    return {latest.path, latest.description};
}

} // namespace mantissa::cli
