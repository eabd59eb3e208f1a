#include "storage/run_writer.h"

#include "storage/connection.h"
#include "storage/db_values.h"
#include "storage/histogram_blob.h"
#include "storage/process_liveness.h"
#include "storage/run_sql.h"
#include "storage/schema.h"
#include "storage/storage_error.h"

#include <QFileInfo>

#include <cmath>

namespace mantissa::storage {

namespace {

constexpr int kStepColumns = 12;     // bound per step row; run_id is part of the SQL text
constexpr int kMaxLockedCommits = 3; // then a held lock is a failure, not a hiccup

QString stepInsertSql(qint64 runId, int rows)
{
    QString sql = QStringLiteral("INSERT OR REPLACE INTO steps (run_id, step, epoch, loss, learning_rate, loss_scale, "
                                 "skipped, grad_norm, samples_per_second, elapsed_seconds, grad_amax, "
                                 "allreduce_flushed, allreduce_overflowed) VALUES ");
    const QString row = QStringLiteral("(%1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)").arg(runId);
    for (int i = 0; i < rows; ++i)
        sql += (i == 0 ? QString() : QStringLiteral(", ")) + row;
    return sql;
}

// An unset count is NULL.
QVariant optionalCount(const std::optional<std::int64_t>& count)
{
    return count ? QVariant(qlonglong(*count)) : QVariant();
}

// Floats go in as doubles: exact, and a float QVariant is not bound as REAL by every Qt
// version. A NaN is stored as NULL by SQLite.
void bindStep(QSqlQuery& query, int first, const StepRecord& s)
{
    query.bindValue(first + 0, qlonglong(s.step));
    query.bindValue(first + 1, s.epoch);
    query.bindValue(first + 2, double(s.loss));
    query.bindValue(first + 3, double(s.learningRate));
    query.bindValue(first + 4, double(s.lossScale));
    query.bindValue(first + 5, s.skipped ? 1 : 0);
    query.bindValue(first + 6, double(s.gradNorm));
    query.bindValue(first + 7, double(s.samplesPerSecond));
    query.bindValue(first + 8, s.elapsedSeconds);
    query.bindValue(first + 9, double(s.gradAmax));
    query.bindValue(first + 10, optionalCount(s.allReduceFlushed));
    query.bindValue(first + 11, optionalCount(s.allReduceOverflowed));
}

QString dtypeText(DType type)
{
    const std::string_view name = dtypeName(type);
    return QString::fromLatin1(name.data(), qsizetype(name.size()));
}

bool hasScale(EventKind kind) { return kind == EventKind::Overflow || kind == EventKind::ScaleChange; }

template <typename T>
void fillIfUnset(std::optional<T>& field, const std::optional<T>& observed)
{
    if (!field)
        field = observed;
}

} // namespace

RunWriter::RunWriter(const QString& databasePath, qint64 runId, const WriterOptions& options)
    : m_connection(std::make_unique<Connection>(databasePath, options.busyTimeoutMs)), m_runId(runId),
      m_options(options), m_databaseDirectory(QFileInfo(m_connection->path()).absolutePath())
{
    // The RunStore that created the run has checked the file's integrity already.
    prepareDatabase(*m_connection, IntegrityCheck::Skip);
    prepareStatements();
    claimRun();
    m_steps.reserve(std::min(options.maxBufferedSteps, 4096));
    m_lastCommit = Clock::now();
}

RunWriter::~RunWriter()
{
    if (failed() && !m_failureRecorded)
        markRunEnded(RunStatus::Failed, m_errorMessage);
    if (!m_finished && !failed()) {
        RunSummary interrupted;
        interrupted.status = RunStatus::Interrupted;
        interrupted.message = "the run's writer was closed before the run finished";
        finish(interrupted);
    }
}

void RunWriter::prepareStatements()
{
    const Connection& c = *m_connection;
    m_insertSteps = c.prepare(stepInsertSql(m_runId, kRowsPerInsert));
    m_insertStep = c.prepare(stepInsertSql(m_runId, 1));
    m_insertEpoch =
        c.prepare(QStringLiteral("INSERT OR REPLACE INTO epochs (run_id, epoch, train_loss, train_accuracy, test_loss, "
                                 "test_accuracy, wall_seconds, validation_loss, validation_accuracy) "
                                 "VALUES (%1, ?, ?, ?, ?, ?, ?, ?, ?)")
                      .arg(m_runId));
    m_insertEvent = c.prepare(
        QStringLiteral("INSERT INTO events (run_id, kind, step, scale_before, scale_after, parameter, message, "
                       "location_layer_index, location_layer, location_kind, location_tensor, location_non_finite, "
                       "location_count, location_largest_finite, location_nan, first_rank) "
                       "VALUES (%1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
            .arg(m_runId));
    m_insertNumericsStep =
        c.prepare(QStringLiteral("INSERT OR REPLACE INTO numerics_steps (run_id, step, loss_scale, scaled_gradients) "
                                 "VALUES (%1, ?, ?, ?)")
                      .arg(m_runId));
    m_insertNumericsTensor =
        c.prepare(QStringLiteral(
                      "INSERT OR REPLACE INTO numerics_tensors (run_id, step, layer_index, kind, tensor, layer, dtype, "
                      "target_dtype, count, amax, zeros, underflow, subnormal, overflow, non_finite, nan_count, "
                      "histogram) VALUES (%1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
                      .arg(m_runId));
    m_insertGemmInput = c.prepare(
        QStringLiteral("INSERT OR REPLACE INTO numerics_gemm_inputs (run_id, step, ordinal, layer_index, layer, pass, "
                       "operand, format, elements, blocks, clipped_blocks, nan_scale_blocks, flushed, non_finite, "
                       "nan_count, signal_energy, noise_energy, scale_exponents) "
                       "VALUES (%1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
            .arg(m_runId));
    m_insertShadowStep =
        c.prepare(QStringLiteral("INSERT OR REPLACE INTO shadow_steps (run_id, step, loss_scale) VALUES (%1, ?, ?)")
                      .arg(m_runId));
    m_insertShadowError = c.prepare(
        QStringLiteral("INSERT OR REPLACE INTO shadow_errors (run_id, step, ordinal, layer, kind, tensor, elements, "
                       "non_finite, reference_energy, compared_energy, error_energy, dot) "
                       "VALUES (%1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
            .arg(m_runId));
    m_insertCheckpoint = c.prepare(
        QStringLiteral("INSERT INTO checkpoints (run_id, path, step, epoch, created_at) VALUES (%1, ?, ?, ?, ?)")
            .arg(m_runId));
    m_heartbeat = c.prepare(QStringLiteral("UPDATE runs SET heartbeat_at = ? WHERE id = %1").arg(m_runId));
    m_begin = c.prepare(QStringLiteral("BEGIN IMMEDIATE"));
    m_commit = c.prepare(QStringLiteral("COMMIT"));
    m_rollback = c.prepare(QStringLiteral("ROLLBACK"));
}

void RunWriter::claimRun()
{
    const Connection& c = *m_connection;
    const WriterIdentity self = currentWriterIdentity();
    QSqlQuery claim =
        c.prepare(QStringLiteral("UPDATE runs SET writer_pid = ?, writer_host = ?, writer_boot = ?, writer_start = ?, "
                                 "heartbeat_at = ? WHERE id = ? AND status = 'running'"));
    for (const QVariant& value : {QVariant(self.pid), QVariant(self.host), QVariant(self.boot),
                                  QVariant(self.startTicks), QVariant(nowDbTime()), QVariant(m_runId)}) {
        claim.addBindValue(value);
    }
    c.exec(claim, QStringLiteral("claiming run %1 for writing").arg(m_runId));
    if (claim.numRowsAffected() == 1)
        return;
    QSqlQuery status = c.prepare(QStringLiteral("SELECT status FROM runs WHERE id = ?"));
    status.addBindValue(m_runId);
    c.exec(status, QStringLiteral("reading run %1").arg(m_runId));
    if (!status.next()) {
        throw StorageError(StorageError::Kind::NotFound, c.path(),
                           QStringLiteral("there is no run with id %1 to write").arg(m_runId));
    }
    throw StorageError(StorageError::Kind::InvalidArgument, c.path(),
                       QStringLiteral("run %1 has already ended (status \"%2\"); create a new run "
                                      "to train again")
                           .arg(m_runId)
                           .arg(status.value(0).toString()));
}

void RunWriter::onStep(const StepRecord& step)
{
    if (failed())
        return;
    try {
        m_steps.push_back(step);
    } catch (const std::bad_alloc&) {
        fail(QStringLiteral("%1: out of memory buffering step rows").arg(m_connection->path()));
        return;
    }
    observe(step);
    if (qsizetype(m_steps.size()) >= m_options.maxBufferedSteps ||
        Clock::now() - m_lastCommit >= std::chrono::milliseconds(m_options.commitIntervalMs)) {
        commit(nullptr);
    }
}

void RunWriter::onNumerics(const NumericsRecord& numerics)
{
    if (failed())
        return;
    try {
        m_numerics.push_back(numerics);
    } catch (const std::bad_alloc&) {
        fail(QStringLiteral("%1: out of memory buffering numerics rows").arg(m_connection->path()));
    }
}

void RunWriter::onShadow(const ShadowRecord& shadow)
{
    if (failed())
        return;
    try {
        m_shadows.push_back(shadow);
    } catch (const std::bad_alloc&) {
        fail(QStringLiteral("%1: out of memory buffering shadow rows").arg(m_connection->path()));
    }
}

void RunWriter::onEpoch(const EpochRecord& epoch)
{
    if (failed())
        return;
    m_epochs.push_back(epoch);
    observe(epoch);
    commit(nullptr);
}

void RunWriter::onEvent(const EventRecord& event)
{
    if (failed())
        return;
    m_events.push_back(event);
    observe(event);
    commit(nullptr);
}

void RunWriter::addCheckpoint(const QString& filePath, qint64 step, int epoch)
{
    if (failed())
        return;
    m_checkpoints.push_back({storedCheckpointPath(m_databaseDirectory, filePath), step, epoch, nowDbTime()});
    commit(nullptr);
}

bool RunWriter::flush() { return commit(nullptr); }

bool RunWriter::finish(const RunSummary& summary)
{
    if (summary.status == RunStatus::Running) {
        throw StorageError(StorageError::Kind::InvalidArgument, m_connection->path(),
                           QStringLiteral("run %1 cannot finish with status \"running\"").arg(m_runId));
    }
    if (m_finished || failed())
        return !failed();
    FinishedRow complete = finishedRow(summary);
    const StoredSummary observed = observedSummary();
    StoredSummary& s = complete.summary;
    fillIfUnset(s.finalTrainLoss, observed.finalTrainLoss);
    fillIfUnset(s.bestTestAccuracy, observed.bestTestAccuracy);
    fillIfUnset(s.finalTestAccuracy, observed.finalTestAccuracy);
    fillIfUnset(s.finalTestLoss, observed.finalTestLoss);
    fillIfUnset(s.bestTestLoss, observed.bestTestLoss);
    fillIfUnset(s.steps, observed.steps);
    fillIfUnset(s.skippedSteps, observed.skippedSteps);
    fillIfUnset(s.finalLossScale, observed.finalLossScale);
    fillIfUnset(s.samplesPerSecond, observed.samplesPerSecond);
    if (!complete.wallSeconds && m_lastElapsedSeconds > 0)
        complete.wallSeconds = m_lastElapsedSeconds;
    return commit(&complete);
}

QString RunWriter::errorMessage() const { return failed() ? m_errorMessage : QString(); }

bool RunWriter::commit(const FinishedRow* finish)
{
    if (failed())
        return false;
    for (;;) {
        try {
            m_connection->exec(m_begin, QStringLiteral("starting to write run %1").arg(m_runId));
            writePending(finish);
            m_connection->exec(m_commit, QStringLiteral("committing rows of run %1").arg(m_runId));
            break;
        } catch (const StorageError& error) {
            rollback();
            // A lock held past the timeout may be a reader's long `sqlite3` session: keep
            // the rows and try again at the next commit, but only a few times running.
            if (error.kind() == StorageError::Kind::Locked && ++m_lockedCommits < kMaxLockedCommits) {
                if (finish)
                    continue; // the last chance to write: wait again now
                m_lastCommit = Clock::now();
                return true;
            }
            fail(error.message());
            return false;
        } catch (const std::exception& error) {
            rollback();
            fail(QStringLiteral("%1: writing run %2 failed: %3")
                     .arg(m_connection->path())
                     .arg(m_runId)
                     .arg(QString::fromLocal8Bit(error.what())));
            return false;
        }
    }
    m_committedSteps += qint64(m_steps.size());
    ++m_commitCount;
    m_lockedCommits = 0;
    m_steps.clear();
    m_epochs.clear();
    m_events.clear();
    m_numerics.clear();
    m_shadows.clear();
    m_checkpoints.clear();
    m_lastCommit = Clock::now();
    if (finish)
        m_finished = true;
    return true;
}

void RunWriter::writePending(const FinishedRow* finish)
{
    const Connection& c = *m_connection;
    writeSteps();
    writeNumerics();
    writeShadows();
    for (const EpochRecord& e : m_epochs) {
        int i = 0;
        m_insertEpoch.bindValue(i++, e.epoch);
        for (double value : {double(e.trainLoss), double(e.trainAccuracy), double(e.testLoss), double(e.testAccuracy),
                             e.wallSeconds, double(e.validationLoss), double(e.validationAccuracy)}) {
            m_insertEpoch.bindValue(i++, value);
        }
        c.exec(m_insertEpoch, QStringLiteral("writing epoch %1 of run %2").arg(e.epoch).arg(m_runId));
    }
    for (const EventRecord& e : m_events) {
        m_insertEvent.bindValue(0, QString::fromLatin1(eventKindName(e.kind)));
        m_insertEvent.bindValue(1, qlonglong(e.step));
        m_insertEvent.bindValue(2, hasScale(e.kind) ? QVariant(double(e.scaleBefore)) : QVariant());
        m_insertEvent.bindValue(3, hasScale(e.kind) ? QVariant(double(e.scaleAfter)) : QVariant());
        m_insertEvent.bindValue(4, text(QString::fromStdString(e.parameter)));
        m_insertEvent.bindValue(5, text(QString::fromStdString(e.message)));
        const std::optional<OverflowLocation>& where = e.location;
        m_insertEvent.bindValue(6, where ? QVariant(where->layerIndex) : QVariant());
        m_insertEvent.bindValue(7, where ? QVariant(QString::fromStdString(where->layer)) : QVariant());
        m_insertEvent.bindValue(8, where ? QVariant(QString::fromLatin1(tensorKindName(where->kind))) : QVariant());
        m_insertEvent.bindValue(9, where ? QVariant(QString::fromStdString(where->tensor)) : QVariant());
        m_insertEvent.bindValue(10, where ? QVariant(qlonglong(where->nonFiniteCount)) : QVariant());
        m_insertEvent.bindValue(11, where ? QVariant(qlonglong(where->count)) : QVariant());
        m_insertEvent.bindValue(12, where ? QVariant(double(where->largestFinite)) : QVariant());
        m_insertEvent.bindValue(13, where && where->nanCount >= 0 ? QVariant(qlonglong(where->nanCount)) : QVariant());
        m_insertEvent.bindValue(14, e.firstRank >= 0 ? QVariant(e.firstRank) : QVariant());
        c.exec(m_insertEvent, QStringLiteral("writing an event of run %1").arg(m_runId));
    }
    for (const PendingCheckpoint& p : m_checkpoints) {
        m_insertCheckpoint.bindValue(0, p.path);
        m_insertCheckpoint.bindValue(1, p.step);
        m_insertCheckpoint.bindValue(2, p.epoch);
        m_insertCheckpoint.bindValue(3, p.createdAt);
        c.exec(m_insertCheckpoint, QStringLiteral("recording a checkpoint of run %1").arg(m_runId));
    }
    m_heartbeat.bindValue(0, nowDbTime());
    c.exec(m_heartbeat, QStringLiteral("updating the heartbeat of run %1").arg(m_runId));
    if (finish) {
        QSqlQuery update = c.prepare(finishRunSql());
        bindFinish(update, m_runId, *finish);
        c.exec(update, QStringLiteral("finishing run %1").arg(m_runId));
        writeRanks(c, m_runId, finish->ranks);
    }
}

void RunWriter::writeSteps()
{
    const Connection& c = *m_connection;
    const QString what = QStringLiteral("writing steps of run %1").arg(m_runId);
    const std::size_t n = m_steps.size();
    std::size_t i = 0;
    for (; i + kRowsPerInsert <= n; i += kRowsPerInsert) {
        for (int row = 0; row < kRowsPerInsert; ++row)
            bindStep(m_insertSteps, row * kStepColumns, m_steps[i + std::size_t(row)]);
        c.exec(m_insertSteps, what);
    }
    for (; i < n; ++i) {
        bindStep(m_insertStep, 0, m_steps[i]);
        c.exec(m_insertStep, what);
    }
}

void RunWriter::writeNumerics()
{
    const Connection& c = *m_connection;
    for (const NumericsRecord& r : m_numerics) {
        const QString what = QStringLiteral("writing the numerics of step %1 of run %2").arg(r.step).arg(m_runId);
        m_insertNumericsStep.bindValue(0, qlonglong(r.step));
        m_insertNumericsStep.bindValue(1, double(r.lossScale));
        m_insertNumericsStep.bindValue(2, r.scaledGradients ? 1 : 0);
        c.exec(m_insertNumericsStep, what);
        for (const TensorNumerics& t : r.tensors) {
            const TensorStats& s = t.stats;
            int i = 0;
            m_insertNumericsTensor.bindValue(i++, qlonglong(r.step));
            m_insertNumericsTensor.bindValue(i++, t.layerIndex);
            m_insertNumericsTensor.bindValue(i++, QString::fromLatin1(tensorKindName(t.kind)));
            m_insertNumericsTensor.bindValue(i++, text(QString::fromStdString(t.tensor)));
            m_insertNumericsTensor.bindValue(i++, text(QString::fromStdString(t.layer)));
            m_insertNumericsTensor.bindValue(i++, dtypeText(t.dtype));
            m_insertNumericsTensor.bindValue(i++, dtypeText(t.target));
            m_insertNumericsTensor.bindValue(i++, qlonglong(s.count));
            m_insertNumericsTensor.bindValue(i++, double(s.amax));
            for (std::int64_t count : {s.zeros, s.underflow, s.subnormal, s.overflow, s.nonFinite})
                m_insertNumericsTensor.bindValue(i++, qlonglong(count));
            m_insertNumericsTensor.bindValue(i++, s.nan >= 0 ? QVariant(qlonglong(s.nan)) : QVariant());
            m_insertNumericsTensor.bindValue(i++, encodeHistogram(s.histogram));
            c.exec(m_insertNumericsTensor, what);
        }
        writeGemmInputs(r, what);
    }
}

void RunWriter::writeGemmInputs(const NumericsRecord& r, const QString& what)
{
    const Connection& c = *m_connection;
    const auto key = [](std::string_view k) { return QString::fromLatin1(k.data(), qsizetype(k.size())); };
    int ordinal = 0;
    for (const GemmInputNumerics& g : r.gemmInputs) {
        const QuantStats& s = g.stats;
        int i = 0;
        m_insertGemmInput.bindValue(i++, qlonglong(r.step));
        m_insertGemmInput.bindValue(i++, ordinal++);
        m_insertGemmInput.bindValue(i++, g.layerIndex);
        m_insertGemmInput.bindValue(i++, text(QString::fromStdString(g.layer)));
        m_insertGemmInput.bindValue(i++, key(enumKey(g.pass)));
        m_insertGemmInput.bindValue(i++, key(enumKey(g.operand)));
        m_insertGemmInput.bindValue(i++, text(QString::fromStdString(g.format)));
        for (std::size_t count :
             {s.elements, s.blocks, s.clippedBlocks, s.nanScaleBlocks, s.flushedToZero, s.nonFinite, s.nanInputs})
            m_insertGemmInput.bindValue(i++, qlonglong(count));
        m_insertGemmInput.bindValue(i++, s.signalEnergy);
        m_insertGemmInput.bindValue(i++, s.noiseEnergy);
        m_insertGemmInput.bindValue(i++, encodeScaleExponents(s.scaleExponents));
        c.exec(m_insertGemmInput, what);
    }
}

void RunWriter::writeShadows()
{
    const Connection& c = *m_connection;
    for (const ShadowRecord& r : m_shadows) {
        const QString what = QStringLiteral("writing the shadow errors of step %1 of run %2").arg(r.step).arg(m_runId);
        m_insertShadowStep.bindValue(0, qlonglong(r.step));
        m_insertShadowStep.bindValue(1, double(r.lossScale));
        c.exec(m_insertShadowStep, what);
        int ordinal = 0;
        for (const ShadowError& e : r.errors) {
            int i = 0;
            m_insertShadowError.bindValue(i++, qlonglong(r.step));
            m_insertShadowError.bindValue(i++, ordinal++);
            m_insertShadowError.bindValue(i++, text(QString::fromStdString(e.layer)));
            m_insertShadowError.bindValue(i++, QString::fromLatin1(shadowTensorName(e.kind)));
            m_insertShadowError.bindValue(i++, text(QString::fromStdString(e.tensor)));
            m_insertShadowError.bindValue(i++, qlonglong(e.energies.count));
            m_insertShadowError.bindValue(i++, qlonglong(e.energies.nonFinite));
            for (double sum : {e.energies.reference, e.energies.compared, e.energies.error, e.energies.dot})
                m_insertShadowError.bindValue(i++, sum);
            c.exec(m_insertShadowError, what);
        }
    }
}

void RunWriter::rollback()
{
    m_rollback.exec(); // fails harmlessly when SQLite already rolled back (SQLITE_FULL)
}

void RunWriter::fail(const QString& message)
{
    if (failed())
        return;
    m_errorMessage = message;
    m_failed.store(true, std::memory_order_release);
    // The rows cannot be stored; do not let them grow while the trainer winds down.
    std::vector<StepRecord>().swap(m_steps);
    std::vector<NumericsRecord>().swap(m_numerics);
    std::vector<ShadowRecord>().swap(m_shadows);
    m_epochs.clear();
    m_events.clear();
    m_checkpoints.clear();
    m_failureRecorded = markRunEnded(RunStatus::Failed, message);
}

bool RunWriter::markRunEnded(RunStatus status, const QString& message)
{
    // Best effort: after a full disk or a broken file this update may fail as well, and
    // then the next open marks the run interrupted instead.
    QSqlQuery update(m_connection->database());
    update.prepare(QStringLiteral("UPDATE runs SET status = ?, finished_at = ?, error_message = ? "
                                  "WHERE id = ? AND status = 'running'"));
    update.addBindValue(QString::fromLatin1(runStatusName(status)));
    update.addBindValue(nowDbTime());
    update.addBindValue(text(message));
    update.addBindValue(m_runId);
    return update.exec();
}

void RunWriter::observe(const StepRecord& step)
{
    m_lastStep = std::max(m_lastStep, qint64(step.step));
    if (step.skipped)
        ++m_skippedSteps;
    m_lastStepLoss = step.loss;
    m_lastElapsedSeconds = std::max(m_lastElapsedSeconds, step.elapsedSeconds);
    // A step's record holds the scale it used; an event at the same step holds the scale
    // after it, which is later: positions 2k and 2k+1 order them.
    if (2 * step.step >= m_finalLossScaleStep) {
        m_finalLossScale = step.lossScale;
        m_finalLossScaleStep = 2 * step.step;
    }
    if (step.samplesPerSecond > 0 && std::isfinite(step.samplesPerSecond)) {
        m_inverseRateSum += 1.0 / step.samplesPerSecond;
        ++m_rateCount;
    }
}

void RunWriter::observe(const EpochRecord& epoch)
{
    m_finalTrainLoss = epoch.trainLoss;
    m_lastElapsedSeconds = std::max(m_lastElapsedSeconds, epoch.wallSeconds);
    m_finalTestAccuracy = epoch.testAccuracy;
    if (!m_bestTestAccuracy || epoch.testAccuracy > *m_bestTestAccuracy)
        m_bestTestAccuracy = epoch.testAccuracy;
    m_finalTestLoss = epoch.testLoss;
    if (std::isfinite(epoch.testLoss) && !(m_bestTestLoss && *m_bestTestLoss <= epoch.testLoss))
        m_bestTestLoss = epoch.testLoss;
}

void RunWriter::observe(const EventRecord& event)
{
    if (hasScale(event.kind) && 2 * event.step + 1 >= m_finalLossScaleStep) {
        m_finalLossScale = event.scaleAfter;
        m_finalLossScaleStep = 2 * event.step + 1;
    }
}

StoredSummary RunWriter::observedSummary() const
{
    StoredSummary s;
    if (m_lastStep > 0) {
        s.steps = m_lastStep;
        s.skippedSteps = m_skippedSteps;
        s.finalTrainLoss = m_lastStepLoss;
    }
    if (m_finalTrainLoss)
        s.finalTrainLoss = m_finalTrainLoss; // the epoch's mean beats one batch's loss
    s.bestTestAccuracy = m_bestTestAccuracy;
    s.finalTestAccuracy = m_finalTestAccuracy;
    s.finalTestLoss = m_finalTestLoss;
    s.bestTestLoss = m_bestTestLoss;
    s.finalLossScale = m_finalLossScale;
    // Every step has the same batch size, so the run's throughput (samples over time) is
    // the harmonic mean of the per-step rates, not their arithmetic mean.
    if (m_rateCount > 0)
        s.samplesPerSecond = double(m_rateCount) / m_inverseRateSum;
    return s;
}

} // namespace mantissa::storage
