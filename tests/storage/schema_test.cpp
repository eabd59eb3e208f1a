// The schema: creation, forward migration from older versions built by hand, and refusal
// of a newer version without touching the file.
#include "storage/run_store.h"
#include "storage/run_writer.h"
#include "storage/storage_error.h"
#include "test_support.h"

#include <QFile>

#include <QTemporaryDir>
#include <QTest>
#include <cmath>

using namespace mantissa;
using namespace mantissa::storage;
using namespace mantissa::storage::test;

namespace {

// Frozen copies of the released schemas, as an older Mantissa left them; never update
// these to match schema.cpp.
const QStringList kVersion1 = {
    QStringLiteral(R"(CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
        status TEXT NOT NULL CHECK (status IN
            ('running', 'finished', 'stopped', 'diverged', 'failed', 'interrupted')),
        created_at TEXT NOT NULL, finished_at TEXT, config_json TEXT NOT NULL,
        preset TEXT NOT NULL DEFAULT '', precision TEXT NOT NULL DEFAULT '',
        device TEXT NOT NULL DEFAULT '', engine_version TEXT NOT NULL DEFAULT '',
        wall_seconds REAL, peak_memory_bytes INTEGER, final_train_loss REAL,
        best_test_accuracy REAL, final_test_accuracy REAL, steps INTEGER, skipped_steps INTEGER,
        final_loss_scale REAL, samples_per_second REAL, error_message TEXT NOT NULL DEFAULT ''))"),
    QStringLiteral("CREATE INDEX runs_created_at ON runs (created_at)"),
    QStringLiteral(R"(CREATE TABLE steps (run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        step INTEGER NOT NULL, epoch INTEGER NOT NULL, loss REAL, learning_rate REAL,
        loss_scale REAL, skipped INTEGER NOT NULL, grad_norm REAL, samples_per_second REAL,
        elapsed_seconds REAL, PRIMARY KEY (run_id, step)) WITHOUT ROWID)"),
    QStringLiteral(R"(CREATE TABLE epochs (run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        epoch INTEGER NOT NULL, train_loss REAL, train_accuracy REAL, test_loss REAL,
        test_accuracy REAL, wall_seconds REAL, PRIMARY KEY (run_id, epoch)) WITHOUT ROWID)"),
    QStringLiteral(R"(CREATE TABLE events (id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        kind TEXT NOT NULL CHECK (kind IN ('overflow', 'scale_change', 'divergence', 'finished', 'error')),
        step INTEGER NOT NULL, scale_before REAL, scale_after REAL,
        parameter TEXT NOT NULL DEFAULT '', message TEXT NOT NULL DEFAULT ''))"),
    QStringLiteral("CREATE INDEX events_run_step ON events (run_id, step)"),
};
const QStringList kVersion2 = {
    QStringLiteral(
        "CREATE TABLE comparison_groups (id INTEGER PRIMARY KEY, name TEXT NOT NULL, created_at TEXT NOT NULL)"),
    QStringLiteral("ALTER TABLE runs ADD COLUMN group_id INTEGER REFERENCES comparison_groups (id) ON DELETE SET NULL"),
    QStringLiteral("ALTER TABLE runs ADD COLUMN notes TEXT NOT NULL DEFAULT ''"),
    QStringLiteral("CREATE INDEX runs_group ON runs (group_id)"),
    QStringLiteral(R"(CREATE TABLE run_tags (run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        tag TEXT NOT NULL, PRIMARY KEY (run_id, tag)) WITHOUT ROWID)"),
    QStringLiteral("CREATE INDEX run_tags_tag ON run_tags (tag)"),
};

const QStringList kVersion3 = {
    QStringLiteral(R"(CREATE TABLE checkpoints (id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE, path TEXT NOT NULL,
        step INTEGER NOT NULL, epoch INTEGER NOT NULL, created_at TEXT NOT NULL))"),
    QStringLiteral("CREATE INDEX checkpoints_run_step ON checkpoints (run_id, step)"),
    QStringLiteral("ALTER TABLE runs ADD COLUMN writer_pid INTEGER"),
    QStringLiteral("ALTER TABLE runs ADD COLUMN writer_host TEXT"),
    QStringLiteral("ALTER TABLE runs ADD COLUMN writer_boot TEXT"),
    QStringLiteral("ALTER TABLE runs ADD COLUMN writer_start INTEGER"),
    QStringLiteral("ALTER TABLE runs ADD COLUMN heartbeat_at TEXT"),
};
const QStringList kVersion4 = {
    QStringLiteral("ALTER TABLE steps ADD COLUMN grad_amax REAL"),
    QStringLiteral("ALTER TABLE events ADD COLUMN location_layer_index INTEGER"),
    QStringLiteral("ALTER TABLE events ADD COLUMN location_layer TEXT"),
    QStringLiteral("ALTER TABLE events ADD COLUMN location_kind TEXT"),
    QStringLiteral("ALTER TABLE events ADD COLUMN location_tensor TEXT"),
    QStringLiteral("ALTER TABLE events ADD COLUMN location_non_finite INTEGER"),
    QStringLiteral("ALTER TABLE events ADD COLUMN location_count INTEGER"),
    QStringLiteral("ALTER TABLE events ADD COLUMN location_largest_finite REAL"),
    QStringLiteral(R"(CREATE TABLE numerics_steps (run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        step INTEGER NOT NULL, loss_scale REAL NOT NULL, scaled_gradients INTEGER NOT NULL,
        PRIMARY KEY (run_id, step)) WITHOUT ROWID)"),
    QStringLiteral(R"(CREATE TABLE numerics_tensors (run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        step INTEGER NOT NULL, layer_index INTEGER NOT NULL, kind TEXT NOT NULL, tensor TEXT NOT NULL,
        layer TEXT NOT NULL, dtype TEXT NOT NULL, target_dtype TEXT NOT NULL, count INTEGER NOT NULL, amax REAL,
        zeros INTEGER NOT NULL, underflow INTEGER NOT NULL, subnormal INTEGER NOT NULL, overflow INTEGER NOT NULL,
        non_finite INTEGER NOT NULL, histogram BLOB NOT NULL,
        PRIMARY KEY (run_id, step, layer_index, kind, tensor)) WITHOUT ROWID)"),
};

const QStringList kVersion5 = {
    QStringLiteral(R"(CREATE TABLE sweeps (id INTEGER PRIMARY KEY, uid TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
        spec_json TEXT NOT NULL, run_count INTEGER NOT NULL, created_at TEXT NOT NULL))"),
    QStringLiteral("ALTER TABLE runs ADD COLUMN uid TEXT"),
    QStringLiteral("CREATE UNIQUE INDEX runs_uid ON runs (uid)"),
    QStringLiteral("ALTER TABLE runs ADD COLUMN sweep_id INTEGER REFERENCES sweeps (id) ON DELETE SET NULL"),
    QStringLiteral("ALTER TABLE runs ADD COLUMN sweep_index INTEGER"),
    QStringLiteral("CREATE INDEX runs_sweep ON runs (sweep_id, sweep_index)"),
    QStringLiteral("ALTER TABLE runs ADD COLUMN kernels TEXT NOT NULL DEFAULT ''"),
};

const QStringList kVersion6 = {
    QStringLiteral("ALTER TABLE numerics_tensors ADD COLUMN nan_count INTEGER"),
    QStringLiteral("ALTER TABLE events ADD COLUMN location_nan INTEGER"),
    QStringLiteral(R"(CREATE TABLE numerics_gemm_inputs (run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        step INTEGER NOT NULL, ordinal INTEGER NOT NULL, layer_index INTEGER NOT NULL, layer TEXT NOT NULL,
        pass TEXT NOT NULL CHECK (pass IN ('fprop', 'dgrad', 'wgrad')),
        operand TEXT NOT NULL CHECK (operand IN ('activation', 'weight', 'gradient')), format TEXT NOT NULL,
        elements INTEGER NOT NULL, blocks INTEGER NOT NULL, clipped_blocks INTEGER NOT NULL,
        nan_scale_blocks INTEGER NOT NULL, flushed INTEGER NOT NULL, non_finite INTEGER NOT NULL,
        nan_count INTEGER NOT NULL, signal_energy REAL NOT NULL, noise_energy REAL, scale_exponents BLOB NOT NULL,
        PRIMARY KEY (run_id, step, ordinal)) WITHOUT ROWID)"),
};

const QStringList kVersion7 = {
    QStringLiteral("ALTER TABLE runs ADD COLUMN world_size INTEGER NOT NULL DEFAULT 1"),
    QStringLiteral("ALTER TABLE events ADD COLUMN first_rank INTEGER"),
    QStringLiteral(R"(CREATE TABLE run_ranks (run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        rank INTEGER NOT NULL, train_seconds REAL NOT NULL, samples_per_second REAL NOT NULL,
        allreduce_seconds REAL NOT NULL, PRIMARY KEY (run_id, rank)) WITHOUT ROWID)"),
};

const QStringList kVersion8 = {
    QStringLiteral("ALTER TABLE steps ADD COLUMN allreduce_flushed INTEGER"),
    QStringLiteral("ALTER TABLE steps ADD COLUMN allreduce_overflowed INTEGER"),
};

const QStringList kVersion9 = {
    QStringLiteral("ALTER TABLE runs ADD COLUMN data_fingerprint TEXT"),
};

const QStringList kVersion10 = {
    QStringLiteral(
        "CREATE TABLE model_files (sha256 TEXT PRIMARY KEY, size_bytes INTEGER NOT NULL, bytes BLOB NOT NULL)"),
    QStringLiteral("ALTER TABLE runs ADD COLUMN model_source TEXT"),
    QStringLiteral("ALTER TABLE runs ADD COLUMN model_sha256 TEXT REFERENCES model_files (sha256)"),
};

const QStringList kVersion11 = {
    QStringLiteral(R"(CREATE TABLE shadow_steps (run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        step INTEGER NOT NULL, loss_scale REAL NOT NULL, PRIMARY KEY (run_id, step)) WITHOUT ROWID)"),
    QStringLiteral(R"(CREATE TABLE shadow_errors (run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        step INTEGER NOT NULL, ordinal INTEGER NOT NULL, layer TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('output', 'input_grad', 'weight_grad')), tensor TEXT NOT NULL,
        elements INTEGER NOT NULL, non_finite INTEGER NOT NULL, reference_energy REAL NOT NULL,
        compared_energy REAL NOT NULL, error_energy REAL NOT NULL, dot REAL NOT NULL,
        PRIMARY KEY (run_id, step, ordinal)) WITHOUT ROWID)"),
};

const QStringList kVersion12 = {
    QStringLiteral("ALTER TABLE runs ADD COLUMN parent_run_id INTEGER REFERENCES runs (id) ON DELETE SET NULL"),
    QStringLiteral("ALTER TABLE runs ADD COLUMN parent_step INTEGER"),
};

// An old database with a finished run (steps 1..50, two epochs, one event) and a run an
// old process left running.
void buildOldDatabase(const QString& path, int version)
{
    RawDatabase db(path);
    QStringList statements = kVersion1;
    if (version >= 2)
        statements += kVersion2;
    if (version >= 3)
        statements += kVersion3;
    if (version >= 4)
        statements += kVersion4;
    if (version >= 5)
        statements += kVersion5;
    if (version >= 6)
        statements += kVersion6;
    if (version >= 7)
        statements += kVersion7;
    if (version >= 8)
        statements += kVersion8;
    if (version >= 9)
        statements += kVersion9;
    if (version >= 10)
        statements += kVersion10;
    if (version >= 11)
        statements += kVersion11;
    if (version >= 12)
        statements += kVersion12;
    statements << QStringLiteral("PRAGMA user_version = %1").arg(version)
               << QStringLiteral("INSERT INTO runs (id, name, status, created_at, finished_at, config_json, "
                                 "preset, precision, best_test_accuracy) VALUES (1, 'old-fp32-1', 'finished', "
                                 "'2024-01-01T10:00:00.000Z', '2024-01-01T10:05:00.000Z', '{}', 'old', 'fp32', 0.875)")
               << QStringLiteral("INSERT INTO runs (id, name, status, created_at, config_json) "
                                 "VALUES (2, 'old-fp32-2', 'running', '2024-01-02T10:00:00.000Z', '{}')")
               << QStringLiteral("INSERT INTO epochs VALUES (1, 1, 0.5, 0.8, 0.6, 0.875, 300)")
               << QStringLiteral("INSERT INTO epochs VALUES (1, 2, 0.4, 0.85, 0.7, 0.86, 600)")
               << QStringLiteral("INSERT INTO events (run_id, kind, step, scale_before, scale_after, parameter) "
                                 "VALUES (1, 'overflow', 7, 65536, 32768, 'fc1.weight')");
    for (const QString& sql : statements) {
        QString error;
        QVERIFY2(db.exec(sql, &error), qPrintable(error + QStringLiteral(" in ") + sql));
    }
    QSqlQuery insert(db.database());
    insert.prepare(
        QStringLiteral("INSERT INTO steps (run_id, step, epoch, loss, learning_rate, loss_scale, skipped, "
                       "grad_norm, samples_per_second, elapsed_seconds) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    for (qint64 n = 1; n <= 50; ++n) {
        const StepRecord s = makeStep(n);
        for (const QVariant& v :
             {QVariant(qlonglong(s.step)), QVariant(s.epoch), QVariant(double(s.loss)),
              QVariant(double(s.learningRate)), QVariant(double(s.lossScale)), QVariant(int(s.skipped)),
              QVariant(double(s.gradNorm)), QVariant(double(s.samplesPerSecond)), QVariant(s.elapsedSeconds)}) {
            insert.addBindValue(v);
        }
        QVERIFY(insert.exec());
    }
}

} // namespace

class SchemaTest : public QObject {
    Q_OBJECT

private slots:
    void init()
    {
        QVERIFY(m_dir.isValid());
        m_path = m_dir.filePath(QStringLiteral("runs.sqlite"));
    }
    void cleanup()
    {
        QFile::remove(m_path);
        QFile::remove(m_path + "-wal");
        QFile::remove(m_path + "-shm");
    }

    void createsCurrentSchema_data()
    {
        QTest::addColumn<QString>("table");
        for (const char* table : {"runs", "steps", "epochs", "events", "checkpoints", "comparison_groups", "run_tags",
                                  "numerics_steps", "numerics_tensors", "sweeps", "numerics_gemm_inputs", "run_ranks",
                                  "model_files", "shadow_steps", "shadow_errors"})
            QTest::newRow(table) << QString::fromLatin1(table);
    }
    void createsCurrentSchema()
    {
        QFETCH(QString, table);
        {
            RunStore store(m_path);
        }
        RawDatabase db(m_path);
        QCOMPARE(db.scalar(QStringLiteral("PRAGMA user_version")).toInt(), RunStore::schemaVersion());
        QCOMPARE(RunStore::schemaVersion(), 13);
        QCOMPARE(db.scalar(QStringLiteral("PRAGMA application_id")).toInt(), 0x4D4E5453);
        QCOMPARE(db.scalar(QStringLiteral("PRAGMA journal_mode")).toString(), QStringLiteral("wal"));
        QCOMPARE(
            db.scalar(
                  QStringLiteral("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '%1'").arg(table))
                .toInt(),
            1);
    }

    void emptyFileBecomesDatabase()
    {
        {
            QFile file(m_path);
            QVERIFY(file.open(QIODevice::WriteOnly));
        }
        RunStore store(m_path);
        QVERIFY(store.listRuns().isEmpty());
    }

    void migratesForward_data()
    {
        QTest::addColumn<int>("version");
        QTest::newRow("from version 1") << 1;
        QTest::newRow("from version 2") << 2;
        QTest::newRow("from version 3") << 3;
        QTest::newRow("from version 4") << 4;
        QTest::newRow("from version 5") << 5;
        QTest::newRow("from version 6") << 6;
        QTest::newRow("from version 7") << 7;
        QTest::newRow("from version 8") << 8;
        QTest::newRow("from version 9") << 9;
        QTest::newRow("from version 10") << 10;
        QTest::newRow("from version 11") << 11;
        QTest::newRow("from version 12") << 12;
    }
    void migratesForward()
    {
        QFETCH(int, version);
        buildOldDatabase(m_path, version);
        if (QTest::currentTestFailed())
            return;
        RunStore store(m_path);
        {
            RawDatabase db(m_path);
            QCOMPARE(db.scalar(QStringLiteral("PRAGMA user_version")).toInt(), 13);
            QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM shadow_errors")).toInt(), 0);
            QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM run_ranks")).toInt(), 0);
            QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM model_files")).toInt(), 0);
            QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM runs WHERE model_sha256 IS NOT NULL OR "
                                              "model_source IS NOT NULL"))
                         .toInt(),
                     0);
            QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM runs WHERE data_fingerprint IS NOT NULL")).toInt(),
                     0);
            QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM runs WHERE world_size != 1")).toInt(), 0);
            QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM runs WHERE parent_run_id IS NOT NULL OR "
                                              "parent_step IS NOT NULL"))
                         .toInt(),
                     0);
            QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM numerics_gemm_inputs")).toInt(), 0);
            QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM runs WHERE kernels != ''")).toInt(), 0);
            QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM sweeps")).toInt(), 0);
            QCOMPARE(
                db.scalar(QStringLiteral("SELECT count(*) FROM runs WHERE uid IS NOT NULL OR sweep_id IS NOT NULL"))
                    .toInt(),
                0);
            QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM checkpoints")).toInt(), 0);
            QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM numerics_tensors")).toInt(), 0);
            QVERIFY(db.scalar(QStringLiteral("SELECT count(*) FROM steps WHERE grad_amax IS NOT NULL")).toInt() == 0);
            QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM steps WHERE allreduce_flushed IS NOT NULL OR "
                                              "allreduce_overflowed IS NOT NULL"))
                         .toInt(),
                     0);
        }
        const RunInfo old = store.findRun(QStringLiteral("old-fp32-1"));
        QCOMPARE(old.status, RunStatus::Finished);
        QCOMPARE(old.summary.bestTestAccuracy, std::optional<double>(0.875));
        QCOMPARE(old.notes, QString());
        QCOMPARE(old.kernels, QString());         // recorded before runs recorded their kernels
        QCOMPARE(old.dataFingerprint, QString()); // recorded before runs recorded their data's fingerprint
        QCOMPARE(old.modelSha256, QString());     // a layer list, and recorded before model files were kept
        QVERIFY(old.tags.isEmpty());
        QVERIFY(!old.groupId);
        const StepSeries steps = store.steps(old.id);
        QCOMPARE(steps.size(), 50);
        QString why;
        QVERIFY2(isIntactPrefix(steps, &why), qPrintable(why));
        // The epochs read back with no validation figures, and the run's test losses come from them.
        const QList<EpochRecord> epochs = store.epochs(old.id);
        QCOMPARE(epochs.size(), 2);
        QVERIFY(std::isnan(epochs[1].validationLoss) && std::isnan(epochs[1].validationAccuracy));
        QCOMPARE(old.summary.finalTestLoss, std::optional<double>(0.7));
        QCOMPARE(old.summary.bestTestLoss, std::optional<double>(0.6));
        QVERIFY(!store.run(2).summary.finalTestLoss); // it had no epochs
        QCOMPARE(store.events(old.id).front().parameter, std::string("fc1.weight"));
        // An old build recorded no writer, so nothing can be writing that run any more.
        QCOMPARE(store.run(2).status, RunStatus::Interrupted);
        // The new tables work on the migrated database.
        store.addTag(old.id, QStringLiteral("baseline"));
        store.setRunGroup(old.id, store.createGroup(QStringLiteral("fp32 vs fp16")));
        store.addCheckpoint(old.id, m_dir.filePath(QStringLiteral("old.ckpt")), 50, 1);
        QCOMPARE(store.run(old.id).tags, QStringList{QStringLiteral("baseline")});
        QCOMPARE(store.checkpoints(old.id).size(), 1);
        QCOMPARE(store.createRun(sampleRun()), qint64(3));
        // Old rows read back without the version-4 values, and the lens's tables work.
        QVERIFY(std::isnan(steps.gradAmax.front()));
        QVERIFY(std::isnan(steps.allReduceFlushed.front()) && std::isnan(steps.allReduceOverflowed.front()));
        QVERIFY(!store.events(old.id).front().location);
        QVERIFY(store.numericsSteps(old.id).isEmpty());
        {
            RunWriter writer(m_path, 3);
            NumericsRecord record;
            record.step = 1;
            record.tensors.push_back(TensorNumerics{});
            writer.onNumerics(record);
            QVERIFY(writer.flush());
        }
        QCOMPARE(store.numericsSteps(3), QList<qint64>{1});
    }

    void lensRowsOfVersion5ReadWithoutTheNewValues()
    {
        // A version-5 database with a sampled step and an overflow located in a tensor holding
        // non-finite values, before NaN was told from Inf and GEMM inputs were measured.
        buildOldDatabase(m_path, 5);
        if (QTest::currentTestFailed())
            return;
        {
            RawDatabase db(m_path);
            for (const QString& sql :
                 {QStringLiteral("INSERT INTO numerics_steps VALUES (1, 10, 1024, 0)"),
                  QStringLiteral("INSERT INTO numerics_tensors VALUES (1, 10, 0, 'weight_grad', '0.linear.weight', "
                                 "'0.linear', 'f16', 'f16', 100, 2.5, 1, 2, 3, 4, 5, zeroblob(252))"),
                  QStringLiteral("UPDATE events SET location_layer_index = 0, location_layer = '0.linear', "
                                 "location_kind = 'weight_grad', location_tensor = '0.linear.weight', "
                                 "location_non_finite = 5, location_count = 100, location_largest_finite = 2.5")}) {
                QString error;
                QVERIFY2(db.exec(sql, &error), qPrintable(error));
            }
        }
        RunStore store(m_path);
        const NumericsRecord old = store.numerics(1, 10);
        QCOMPARE(old.tensors.size(), std::size_t(1));
        QCOMPARE(old.tensors[0].stats.nonFinite, qint64(5));
        QCOMPARE(old.tensors[0].stats.nan, qint64(-1)); // not recorded
        QVERIFY(old.gemmInputs.empty());
        const OverflowLocation where = *store.events(1).front().location;
        QCOMPARE(where.nonFiniteCount, qint64(5));
        QCOMPARE(where.nanCount, qint64(-1));
        QCOMPARE(describeNonFinite(where.nonFiniteCount, where.nanCount), std::string("5 Inf or NaN"));
        // A new run on the migrated database stores both.
        const qint64 run = store.createRun(sampleRun());
        {
            RunWriter writer(m_path, run);
            NumericsRecord record;
            record.step = 4;
            TensorNumerics t;
            t.stats.nonFinite = 3;
            t.stats.nan = 1;
            record.tensors.push_back(t);
            GemmInputNumerics g;
            g.layer = "0.linear";
            g.pass = GemmPass::DataGrad;
            g.operand = GemmOperand::Gradient;
            g.format = "e5m2 tensor";
            g.stats.blocks = 1;
            g.stats.scaleExponents = {{7, 1}};
            record.gemmInputs.push_back(g);
            writer.onNumerics(record);
            QVERIFY(writer.flush());
        }
        const NumericsRecord fresh = store.numerics(run, 4);
        QCOMPARE(fresh.tensors[0].stats.nan, qint64(1));
        QCOMPARE(fresh.gemmInputs.size(), std::size_t(1));
        QCOMPARE(fresh.gemmInputs[0].pass, GemmPass::DataGrad);
        QCOMPARE(fresh.gemmInputs[0].stats.scaleExponents, (std::map<int, std::size_t>{{7, 1}}));
    }

    void worldSizeOfVersion6RunsComesFromTheirConfig()
    {
        // A version-6 database holding a 2-rank run, which recorded its world size only in its
        // config, and a run whose config is not JSON at all (left at 1, not an error).
        buildOldDatabase(m_path, 6);
        if (QTest::currentTestFailed())
            return;
        {
            RawDatabase db(m_path);
            for (const QString& sql :
                 {QStringLiteral("INSERT INTO runs (id, name, status, created_at, config_json) VALUES (3, 'dp-2', "
                                 "'finished', '2024-01-03T10:00:00.000Z', "
                                 "'{\"distributed\": {\"world_size\": 2, \"allreduce_dtype\": \"fp32\"}}')"),
                  QStringLiteral("INSERT INTO runs (id, name, status, created_at, config_json) VALUES (4, 'bad', "
                                 "'finished', '2024-01-03T11:00:00.000Z', 'not json')")}) {
                QString error;
                QVERIFY2(db.exec(sql, &error), qPrintable(error));
            }
        }
        RunStore store(m_path);
        QCOMPARE(store.run(3).worldSize, 2);
        QCOMPARE(store.run(4).worldSize, 1);
        QCOMPARE(store.run(1).worldSize, 1);
        QVERIFY(store.rankThroughput(3).isEmpty()); // not recorded before version 7
        QCOMPARE(store.events(1).front().firstRank, -1);
    }

    void refusesNewerVersion_data()
    {
        QTest::addColumn<int>("version");
        QTest::addColumn<bool>("wal");
        QTest::newRow("version 14") << 14 << false;
        QTest::newRow("version 14, WAL") << 14 << true;
        QTest::newRow("version 1000") << 1000 << false;
    }
    void refusesNewerVersion()
    {
        QFETCH(int, version);
        QFETCH(bool, wal);
        {
            RawDatabase db(m_path);
            if (wal)
                QVERIFY(db.exec(QStringLiteral("PRAGMA journal_mode = WAL")));
            QVERIFY(db.exec(QStringLiteral("CREATE TABLE runs (id INTEGER PRIMARY KEY, future_column TEXT)")));
            QVERIFY(db.exec(QStringLiteral("INSERT INTO runs VALUES (1, 'from the future')")));
            QVERIFY(db.exec(QStringLiteral("PRAGMA user_version = %1").arg(version)));
        }
        const FileSnapshot before = snapshot(m_path);
        QTest::qWait(20); // so that a write would show in the modification time
        const QString expected = QStringLiteral("%1: database schema version %2 is newer than this build "
                                                "of Mantissa supports (%3); upgrade Mantissa")
                                     .arg(m_path)
                                     .arg(version)
                                     .arg(RunStore::schemaVersion());
        try {
            RunStore store(m_path);
            QFAIL("a newer schema was opened");
        } catch (const StorageError& error) {
            QCOMPARE(error.kind(), StorageError::Kind::TooNew);
            QCOMPARE(error.message(), expected);
            QCOMPARE(QString::fromStdString(error.what()), expected);
        }
        try {
            RunWriter writer(m_path, 1);
            QFAIL("a writer opened a newer schema");
        } catch (const StorageError& error) {
            QCOMPARE(error.kind(), StorageError::Kind::TooNew);
        }
        QVERIFY(snapshot(m_path) == before);
        RawDatabase db(m_path);
        QCOMPARE(db.scalar(QStringLiteral("SELECT future_column FROM runs")).toString(),
                 QStringLiteral("from the future"));
    }

private:
    QTemporaryDir m_dir;
    QString m_path;
};

QTEST_GUILESS_MAIN(SchemaTest)
#include "schema_test.moc"
