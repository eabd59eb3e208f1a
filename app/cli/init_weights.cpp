#include "cli/init_weights.h"

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
    const QList<storage::CheckpointInfo> checkpoints = store.checkpoints(run.id);
    if (checkpoints.isEmpty()) {
        throw notFound(store, QStringLiteral("--init-from: run %1 (%2, %3) has no checkpoint; runs save one when they "
                                             "finish or are stopped, not when they diverge or fail")
                                  .arg(run.id)
                                  .arg(run.name, QString::fromLatin1(runStatusName(run.status))));
    }
    const storage::CheckpointInfo& latest = checkpoints.last(); // ordered by step
    if (!QFileInfo(latest.absolutePath).isFile()) {
        throw notFound(store, QStringLiteral("--init-from: the checkpoint of run %1 (%2) at step %3 is missing: %4 "
                                             "(moved or deleted?)")
                                  .arg(run.id)
                                  .arg(run.name)
                                  .arg(latest.step)
                                  .arg(latest.absolutePath));
    }
    return {
        latest.absolutePath,
        QStringLiteral("run %1 (%2), epoch %3, step %4").arg(run.id).arg(run.name).arg(latest.epoch).arg(latest.step)};
}

} // namespace mantissa::cli
