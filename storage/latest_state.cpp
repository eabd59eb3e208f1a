#include "storage/latest_state.h"

#include "storage/run_store.h"
#include "storage/storage_error.h"

#include <QFileInfo>

namespace mantissa::storage {

LatestState latestState(const RunStore& store, const RunInfo& run)
{
    const QList<CheckpointInfo> checkpoints = store.checkpoints(run.id);
    if (checkpoints.isEmpty())
        throw StorageError(StorageError::Kind::NotFound, store.path(),
                           QStringLiteral("run %1 (%2, %3) has no checkpoint; runs save one when they finish or are "
                                          "stopped, not when they diverge or fail")
                               .arg(run.id)
                               .arg(run.name, QString::fromLatin1(runStatusName(run.status))));
    const CheckpointInfo& latest = checkpoints.last(); // ordered by step
    if (!QFileInfo(latest.absolutePath).isFile())
        throw StorageError(StorageError::Kind::NotFound, store.path(),
                           QStringLiteral("the checkpoint of run %1 (%2) at step %3 is missing: %4 (moved or deleted?)")
                               .arg(run.id)
                               .arg(run.name)
                               .arg(latest.step)
                               .arg(latest.absolutePath));
    return {
        latest.absolutePath,
        QStringLiteral("run %1 (%2), epoch %3, step %4").arg(run.id).arg(run.name).arg(latest.epoch).arg(latest.step)};
}

} // namespace mantissa::storage
