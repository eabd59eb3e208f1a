// RunStore's read API: single SELECT statements, so that no read transaction outlives
// a call (a long one would keep the WAL from being checkpointed while a run writes).
#include "storage/run_store.h"

#include "storage/connection.h"
#include "storage/db_values.h"
#include "storage/histogram_blob.h"
#include "storage/run_sql.h"
#include "storage/storage_error.h"

#include <QDir>

#include <algorithm>

namespace mantissa::storage {

namespace {

// Tags come along as one string joined by the unit separator, to list runs in one query.
const QString kRunColumns = QStringLiteral(
    "id, name, status, created_at, finished_at, config_json, preset, precision, device, "
    "engine_version, wall_seconds, peak_memory_bytes, notes, group_id, final_train_loss, "
    "best_test_accuracy, final_test_accuracy, final_test_loss, best_test_loss, steps, skipped_steps, final_loss_scale, "
    "samples_per_second, error_message, writer_pid, writer_host, heartbeat_at, kernels, uid, sweep_id, sweep_index, "
    "world_size, data_fingerprint, model_source, model_sha256, parent_run_id, parent_step, "
    "(SELECT group_concat(tag, char(31)) FROM run_tags WHERE run_id = runs.id)");

RunInfo readRun(const QSqlQuery& q)
{
    RunInfo run;
    int i = 0;
    run.id = q.value(i++).toLongLong();
    run.name = q.value(i++).toString();
    run.status = parseRunStatus(q.value(i++).toString().toStdString()).value_or(RunStatus::Failed);
    run.createdAt = fromDbTime(q.value(i++));
    run.finishedAt = fromDbTime(q.value(i++));
    run.configJson = q.value(i++).toString();
    run.preset = q.value(i++).toString();
    run.precision = q.value(i++).toString();
    run.device = q.value(i++).toString();
    run.engineVersion = q.value(i++).toString();
    run.wallSeconds = optionalDouble(q.value(i++));
    run.peakMemoryBytes = optionalInt(q.value(i++));
    run.notes = q.value(i++).toString();
    run.groupId = optionalInt(q.value(i++));
    StoredSummary& s = run.summary;
    s.finalTrainLoss = optionalDouble(q.value(i++));
    s.bestTestAccuracy = optionalDouble(q.value(i++));
    s.finalTestAccuracy = optionalDouble(q.value(i++));
    s.finalTestLoss = optionalDouble(q.value(i++));
    s.bestTestLoss = optionalDouble(q.value(i++));
    s.steps = optionalInt(q.value(i++));
    s.skippedSteps = optionalInt(q.value(i++));
    s.finalLossScale = optionalDouble(q.value(i++));
    s.samplesPerSecond = optionalDouble(q.value(i++));
    run.errorMessage = q.value(i++).toString();
    run.writerPid = q.value(i++).toLongLong();
    run.writerHost = q.value(i++).toString();
    run.heartbeatAt = fromDbTime(q.value(i++));
    run.kernels = q.value(i++).toString();
    run.uid = q.value(i++).toString();
    run.sweepId = optionalInt(q.value(i++));
    if (const auto index = optionalInt(q.value(i++)))
        run.sweepIndex = static_cast<int>(*index);
    run.worldSize = q.value(i++).toInt();
    splitDataColumn(q.value(i++).toString(), run.dataFingerprint, run.dataPreparation);
    run.modelSource = q.value(i++).toString();
    run.modelSha256 = q.value(i++).toString();
    const std::optional<qint64> parentId = optionalInt(q.value(i++));
    if (const std::optional<qint64> parentStep = optionalInt(q.value(i++)))
        run.parent = RunLineage{parentId, *parentStep};
    const QString tags = q.value(i++).toString();
    if (!tags.isEmpty()) {
        run.tags = tags.split(QChar(31));
        run.tags.sort();
    }
    return run;
}

QList<RunInfo> readRuns(const Connection& connection, QSqlQuery& query, const QString& what)
{
    connection.exec(query, what);
    QList<RunInfo> runs;
    while (query.next())
        runs << readRun(query);
    return runs;
}

} // namespace

QList<RunInfo> RunStore::listRuns(const RunFilter& filter) const
{
    QStringList where;
    QVariantList values;
    if (filter.status) {
        where << QStringLiteral("status = ?");
        values << QString::fromLatin1(runStatusName(*filter.status));
    }
    if (!filter.preset.isEmpty()) {
        where << QStringLiteral("preset = ?");
        values << filter.preset;
    }
    if (!filter.precision.isEmpty()) {
        where << QStringLiteral("precision = ?");
        values << filter.precision;
    }
    if (filter.groupId) {
        where << QStringLiteral("group_id = ?");
        values << *filter.groupId;
    }
    if (filter.sweepId) {
        where << QStringLiteral("sweep_id = ?");
        values << *filter.sweepId;
    }
    if (filter.parentRunId) {
        where << QStringLiteral("parent_run_id = ?");
        values << *filter.parentRunId;
    }
    if (!filter.tag.isEmpty()) {
        where << QStringLiteral("EXISTS (SELECT 1 FROM run_tags WHERE run_id = runs.id AND tag = ?)");
        values << filter.tag;
    }
    QString sql = QStringLiteral("SELECT %1 FROM runs").arg(kRunColumns);
    if (!where.isEmpty())
        sql += QStringLiteral(" WHERE ") + where.join(QStringLiteral(" AND "));
    sql += QStringLiteral(" ORDER BY created_at DESC, id DESC");
    if (filter.limit > 0)
        sql += QStringLiteral(" LIMIT %1").arg(filter.limit);
    QSqlQuery query = m_connection->prepare(sql);
    query.setForwardOnly(true);
    for (const QVariant& value : values)
        query.addBindValue(value);
    return readRuns(*m_connection, query, QStringLiteral("listing runs"));
}

RunInfo RunStore::run(qint64 runId) const
{
    QSqlQuery query = m_connection->prepare(QStringLiteral("SELECT %1 FROM runs WHERE id = ?").arg(kRunColumns));
    query.addBindValue(runId);
    const QList<RunInfo> runs = readRuns(*m_connection, query, QStringLiteral("reading run %1").arg(runId));
    if (runs.isEmpty()) {
        throw StorageError(StorageError::Kind::NotFound, path(),
                           QStringLiteral("there is no run with id %1").arg(runId));
    }
    return runs.front();
}

RunInfo RunStore::findRun(const QString& idOrName) const
{
    const QString key = idOrName.trimmed();
    bool isId = false;
    const qint64 id = key.toLongLong(&isId);
    if (isId && std::all_of(key.begin(), key.end(), [](QChar c) { return c.isDigit(); }))
        return run(id);
    QSqlQuery query = m_connection->prepare(QStringLiteral("SELECT %1 FROM runs WHERE name = ?").arg(kRunColumns));
    query.addBindValue(key);
    const QList<RunInfo> runs = readRuns(*m_connection, query, QStringLiteral("finding run \"%1\"").arg(key));
    if (runs.isEmpty()) {
        throw StorageError(StorageError::Kind::NotFound, path(),
                           QStringLiteral("there is no run named \"%1\"; give a run's name or id").arg(key));
    }
    return runs.front();
}

StepSeries RunStore::steps(qint64 runId, qint64 afterStep) const
{
    requireRun(runId);
    QSqlQuery query = m_connection->prepare(QStringLiteral(
        "SELECT step, epoch, loss, learning_rate, loss_scale, skipped, grad_norm, "
        "samples_per_second, elapsed_seconds, grad_amax, allreduce_flushed, allreduce_overflowed FROM steps "
        "WHERE run_id = ? AND step > ? ORDER BY step"));
    query.setForwardOnly(true);
    query.addBindValue(runId);
    query.addBindValue(afterStep);
    m_connection->exec(query, QStringLiteral("reading the steps of run %1").arg(runId));
    StepSeries s;
    while (query.next()) {
        s.step << query.value(0).toDouble();
        s.epoch << query.value(1).toDouble();
        s.loss << doubleOrNan(query.value(2));
        s.learningRate << doubleOrNan(query.value(3));
        s.lossScale << doubleOrNan(query.value(4));
        s.skipped << query.value(5).toBool();
        s.gradNorm << doubleOrNan(query.value(6));
        s.samplesPerSecond << doubleOrNan(query.value(7));
        s.elapsedSeconds << doubleOrNan(query.value(8));
        s.gradAmax << doubleOrNan(query.value(9));
        s.allReduceFlushed << doubleOrNan(query.value(10));
        s.allReduceOverflowed << doubleOrNan(query.value(11));
    }
    return s;
}

QList<EpochRecord> RunStore::epochs(qint64 runId) const
{
    requireRun(runId);
    QSqlQuery query = m_connection->prepare(
        QStringLiteral("SELECT epoch, train_loss, train_accuracy, test_loss, test_accuracy, wall_seconds, "
                       "validation_loss, validation_accuracy "
                       "FROM epochs WHERE run_id = ? ORDER BY epoch"));
    query.setForwardOnly(true);
    query.addBindValue(runId);
    m_connection->exec(query, QStringLiteral("reading the epochs of run %1").arg(runId));
    QList<EpochRecord> epochs;
    while (query.next()) {
        EpochRecord e;
        e.epoch = query.value(0).toInt();
        e.trainLoss = float(doubleOrNan(query.value(1)));
        e.trainAccuracy = float(doubleOrNan(query.value(2)));
        e.testLoss = float(doubleOrNan(query.value(3)));
        e.testAccuracy = float(doubleOrNan(query.value(4)));
        e.wallSeconds = doubleOrNan(query.value(5));
        e.validationLoss = float(doubleOrNan(query.value(6)));
        e.validationAccuracy = float(doubleOrNan(query.value(7)));
        epochs << e;
    }
    return epochs;
}

QList<EventRecord> RunStore::events(qint64 runId) const
{
    requireRun(runId);
    QSqlQuery query = m_connection->prepare(QStringLiteral(
        "SELECT kind, step, scale_before, scale_after, parameter, message, location_layer_index, "
        "location_layer, location_kind, location_tensor, location_non_finite, location_count, "
        "location_largest_finite, location_nan, first_rank FROM events WHERE run_id = ? ORDER BY step, id"));
    query.setForwardOnly(true);
    query.addBindValue(runId);
    m_connection->exec(query, QStringLiteral("reading the events of run %1").arg(runId));
    QList<EventRecord> events;
    while (query.next()) {
        EventRecord e;
        e.kind = parseEventKind(query.value(0).toString()).value_or(EventKind::Error);
        e.step = query.value(1).toLongLong();
        // NULL (events without a scale) reads back as the struct's default, 0.
        e.scaleBefore = float(query.value(2).toDouble());
        e.scaleAfter = float(query.value(3).toDouble());
        e.parameter = query.value(4).toString().toStdString();
        e.message = query.value(5).toString().toStdString();
        if (!query.value(6).isNull()) {
            OverflowLocation where;
            where.layerIndex = query.value(6).toInt();
            where.layer = query.value(7).toString().toStdString();
            where.kind = parseTensorKind(query.value(8).toString().toStdString()).value_or(TensorKind::WeightGrad);
            where.tensor = query.value(9).toString().toStdString();
            where.nonFiniteCount = query.value(10).toLongLong();
            where.count = query.value(11).toLongLong();
            where.largestFinite = float(query.value(12).toDouble());
            where.nanCount = query.value(13).isNull() ? -1 : query.value(13).toLongLong();
            e.location = where;
        }
        e.firstRank = query.value(14).isNull() ? -1 : query.value(14).toInt();
        events << e;
    }
    return events;
}

QList<RankThroughput> RunStore::rankThroughput(qint64 runId) const
{
    requireRun(runId);
    QSqlQuery query =
        m_connection->prepare(QStringLiteral("SELECT rank, train_seconds, samples_per_second, allreduce_seconds "
                                             "FROM run_ranks WHERE run_id = ? ORDER BY rank"));
    query.setForwardOnly(true);
    query.addBindValue(runId);
    m_connection->exec(query, QStringLiteral("reading the ranks of run %1").arg(runId));
    QList<RankThroughput> ranks;
    while (query.next()) {
        RankThroughput r;
        r.rank = query.value(0).toInt();
        r.trainSeconds = query.value(1).toDouble();
        r.samplesPerSecond = query.value(2).toDouble();
        r.allReduceSeconds = query.value(3).toDouble();
        ranks << r;
    }
    return ranks;
}

QList<CheckpointInfo> RunStore::checkpoints(qint64 runId) const
{
    requireRun(runId);
    QSqlQuery query = m_connection->prepare(
        QStringLiteral("SELECT id, path, step, epoch, created_at FROM checkpoints WHERE run_id = ? ORDER BY step, id"));
    query.setForwardOnly(true);
    query.addBindValue(runId);
    m_connection->exec(query, QStringLiteral("reading the checkpoints of run %1").arg(runId));
    const QDir base(directory());
    QList<CheckpointInfo> checkpoints;
    while (query.next()) {
        CheckpointInfo c;
        c.id = query.value(0).toLongLong();
        c.path = query.value(1).toString();
        c.absolutePath = QDir::cleanPath(base.absoluteFilePath(c.path));
        c.step = query.value(2).toLongLong();
        c.epoch = query.value(3).toInt();
        c.createdAt = fromDbTime(query.value(4));
        checkpoints << c;
    }
    return checkpoints;
}

QList<qint64> RunStore::numericsSteps(qint64 runId) const
{
    requireRun(runId);
    QSqlQuery query =
        m_connection->prepare(QStringLiteral("SELECT step FROM numerics_steps WHERE run_id = ? ORDER BY step"));
    query.setForwardOnly(true);
    query.addBindValue(runId);
    m_connection->exec(query, QStringLiteral("reading the numerics steps of run %1").arg(runId));
    QList<qint64> steps;
    while (query.next())
        steps << query.value(0).toLongLong();
    return steps;
}

NumericsRecord RunStore::numerics(qint64 runId, qint64 step) const
{
    requireRun(runId);
    const QString what = QStringLiteral("reading the numerics of step %1 of run %2").arg(step).arg(runId);
    QSqlQuery head = m_connection->prepare(
        QStringLiteral("SELECT loss_scale, scaled_gradients FROM numerics_steps WHERE run_id = ? AND step = ?"));
    head.addBindValue(runId);
    head.addBindValue(step);
    m_connection->exec(head, what);
    if (!head.next()) {
        throw StorageError(StorageError::Kind::NotFound, path(),
                           QStringLiteral("run %1 has no numerics at step %2; numericsSteps() lists "
                                          "the sampled steps")
                               .arg(runId)
                               .arg(step));
    }
    NumericsRecord record;
    record.step = step;
    record.lossScale = float(head.value(0).toDouble());
    record.scaledGradients = head.value(1).toBool();
    QSqlQuery query = m_connection->prepare(
        QStringLiteral("SELECT layer_index, kind, tensor, layer, dtype, target_dtype, count, amax, zeros, underflow, "
                       "subnormal, overflow, non_finite, nan_count, histogram FROM numerics_tensors "
                       "WHERE run_id = ? AND step = ? "
                       "ORDER BY layer_index, CASE kind WHEN 'activation' THEN 0 WHEN 'activation_grad' THEN 1 "
                       "WHEN 'weight' THEN 2 ELSE 3 END, tensor"));
    query.setForwardOnly(true);
    query.addBindValue(runId);
    query.addBindValue(step);
    m_connection->exec(query, what);
    while (query.next()) {
        TensorNumerics t;
        int i = 0;
        t.layerIndex = query.value(i++).toInt();
        t.kind = parseTensorKind(query.value(i++).toString().toStdString()).value_or(TensorKind::Activation);
        t.tensor = query.value(i++).toString().toStdString();
        t.layer = query.value(i++).toString().toStdString();
        t.dtype = parseDType(query.value(i++).toString().toStdString()).value_or(DType::F32);
        t.target = parseDType(query.value(i++).toString().toStdString()).value_or(DType::F16);
        TensorStats& s = t.stats;
        s.count = query.value(i++).toLongLong();
        s.amax = float(doubleOrNan(query.value(i++)));
        for (std::int64_t* count : {&s.zeros, &s.underflow, &s.subnormal, &s.overflow, &s.nonFinite})
            *count = query.value(i++).toLongLong();
        s.nan = query.value(i).isNull() ? -1 : query.value(i).toLongLong();
        ++i;
        s.histogram = decodeHistogram(query.value(i++).toByteArray());
        record.tensors.push_back(std::move(t));
    }
    readGemmInputs(runId, record);
    return record;
}

void RunStore::readGemmInputs(qint64 runId, NumericsRecord& record) const
{
    QSqlQuery query = m_connection->prepare(
        QStringLiteral("SELECT layer_index, layer, pass, operand, format, elements, blocks, clipped_blocks, "
                       "nan_scale_blocks, flushed, non_finite, nan_count, signal_energy, noise_energy, "
                       "scale_exponents FROM numerics_gemm_inputs WHERE run_id = ? AND step = ? ORDER BY ordinal"));
    query.setForwardOnly(true);
    query.addBindValue(runId);
    query.addBindValue(qlonglong(record.step));
    m_connection->exec(
        query, QStringLiteral("reading the GEMM inputs' numerics of step %1 of run %2").arg(record.step).arg(runId));
    while (query.next()) {
        GemmInputNumerics g;
        int i = 0;
        g.layerIndex = query.value(i++).toInt();
        g.layer = query.value(i++).toString().toStdString();
        // The table's CHECK constraints admit only these keys.
        g.pass = parseEnum<GemmPass>(query.value(i++).toString().toStdString()).value_or(GemmPass::Forward);
        g.operand = parseEnum<GemmOperand>(query.value(i++).toString().toStdString()).value_or(GemmOperand::Activation);
        g.format = query.value(i++).toString().toStdString();
        QuantStats& s = g.stats;
        for (std::size_t* count : {&s.elements, &s.blocks, &s.clippedBlocks, &s.nanScaleBlocks, &s.flushedToZero,
                                   &s.nonFinite, &s.nanInputs})
            *count = static_cast<std::size_t>(query.value(i++).toLongLong());
        s.signalEnergy = query.value(i++).toDouble();
        // +Inf (a quantised value came back non-finite) is stored as such.
        s.noiseEnergy = doubleOrNan(query.value(i++));
        s.scaleExponents = decodeScaleExponents(query.value(i++).toByteArray());
        record.gemmInputs.push_back(std::move(g));
    }
}

HistogramSeries RunStore::histogramSeries(qint64 runId, const QString& tensor, TensorKind kind) const
{
    requireRun(runId);
    QSqlQuery query = m_connection->prepare(
        QStringLiteral("SELECT t.step, s.loss_scale, s.scaled_gradients, t.histogram FROM numerics_tensors t "
                       "JOIN numerics_steps s ON s.run_id = t.run_id AND s.step = t.step "
                       "WHERE t.run_id = ? AND t.tensor = ? AND t.kind = ? ORDER BY t.step"));
    query.setForwardOnly(true);
    query.addBindValue(runId);
    query.addBindValue(tensor);
    query.addBindValue(QString::fromLatin1(tensorKindName(kind)));
    m_connection->exec(query, QStringLiteral("reading the histograms of %1 in run %2").arg(tensor).arg(runId));
    HistogramSeries series;
    while (query.next()) {
        series.step << query.value(0).toLongLong();
        series.lossScale << query.value(1).toDouble();
        series.scaledGradients << query.value(2).toBool();
        series.counts << decodeHistogram(query.value(3).toByteArray());
    }
    return series;
}

QList<GroupInfo> RunStore::groups() const
{
    QSqlQuery query = m_connection->exec(
        QStringLiteral("SELECT id, name, created_at FROM comparison_groups ORDER BY created_at DESC, id DESC"),
        QStringLiteral("listing comparison groups"));
    QList<GroupInfo> groups;
    while (query.next())
        groups << GroupInfo{query.value(0).toLongLong(), query.value(1).toString(), fromDbTime(query.value(2))};
    return groups;
}

QList<RunInfo> RunStore::groupRuns(qint64 groupId) const
{
    requireGroup(groupId);
    RunFilter filter;
    filter.groupId = groupId;
    return listRuns(filter);
}

} // namespace mantissa::storage
