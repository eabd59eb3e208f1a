#include "storage/schema.h"

#include "storage/connection.h"
#include "storage/storage_error.h"

#include <QStringList>

#include <array>

namespace mantissa::storage {

namespace {

// 11: the shadow error track (numerics.shadow_every): per shadowed step and per tensor of every
// graph node (ordinal keeps the record's order: layers forward, then output, input gradient,
// weight gradients), the sums the error measures follow from (engine/numerics/shadow_error.h),
// over the elements finite in both passes; non_finite counts the others.
QStringList shadowErrorsMigration()
{
    return {
        QStringLiteral(R"(CREATE TABLE shadow_steps (
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            step INTEGER NOT NULL,
            loss_scale REAL NOT NULL,
            PRIMARY KEY (run_id, step)) WITHOUT ROWID)"),
        QStringLiteral(R"(CREATE TABLE shadow_errors (
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            step INTEGER NOT NULL,
            ordinal INTEGER NOT NULL,
            layer TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('output', 'input_grad', 'weight_grad')),
            tensor TEXT NOT NULL,
            elements INTEGER NOT NULL,
            non_finite INTEGER NOT NULL,
            reference_energy REAL NOT NULL,
            compared_energy REAL NOT NULL,
            error_energy REAL NOT NULL,
            dot REAL NOT NULL,
            PRIMARY KEY (run_id, step, ordinal)) WITHOUT ROWID)"),
    };
}

// 12: forks (mantissa-cli fork): the run a run was forked from and the step it started after.
// A fork outlives its parent: deleting the parent leaves parent_step and clears the id.
QStringList forkLineageMigration()
{
    return {
        QStringLiteral("ALTER TABLE runs ADD COLUMN parent_run_id INTEGER REFERENCES runs (id) ON DELETE SET NULL"),
        QStringLiteral("ALTER TABLE runs ADD COLUMN parent_step INTEGER"),
    };
}

// 13: the validation split's loss and accuracy per epoch (data.validation_split; NULL where no
// samples were held out, or recorded before), and the test loss a run ended with and its lowest,
// which regression's RMSE and a language model's bits per character follow from as accuracy
// does from best_test_accuracy; filled in from the epochs of runs recorded before.
QStringList validationMigration()
{
    return {
        QStringLiteral("ALTER TABLE epochs ADD COLUMN validation_loss REAL"),
        QStringLiteral("ALTER TABLE epochs ADD COLUMN validation_accuracy REAL"),
        QStringLiteral("ALTER TABLE runs ADD COLUMN final_test_loss REAL"),
        QStringLiteral("ALTER TABLE runs ADD COLUMN best_test_loss REAL"),
        QStringLiteral(R"(UPDATE runs SET
            final_test_loss = (SELECT test_loss FROM epochs WHERE run_id = runs.id ORDER BY epoch DESC LIMIT 1),
            best_test_loss = (SELECT MIN(test_loss) FROM epochs WHERE run_id = runs.id)
            WHERE status <> 'running')"),
    };
}

// The schema is built by this chain of migrations, also for a new database, so every
// step runs on every fresh database and stays tested. Append a step to change the
// schema; never edit a released one. Version N is reached by running migration N.
const std::array<QStringList, kSchemaVersion> kMigrations{{
    // 1: runs and the rows a training run produces.
    {
        QStringLiteral(R"(CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            status TEXT NOT NULL CHECK (status IN
                ('running', 'finished', 'stopped', 'diverged', 'failed', 'interrupted')),
            created_at TEXT NOT NULL,
            finished_at TEXT,
            config_json TEXT NOT NULL,
            preset TEXT NOT NULL DEFAULT '',
            precision TEXT NOT NULL DEFAULT '',
            device TEXT NOT NULL DEFAULT '',
            engine_version TEXT NOT NULL DEFAULT '',
            wall_seconds REAL,
            peak_memory_bytes INTEGER,
            final_train_loss REAL,
            best_test_accuracy REAL,
            final_test_accuracy REAL,
            steps INTEGER,
            skipped_steps INTEGER,
            final_loss_scale REAL,
            samples_per_second REAL,
            error_message TEXT NOT NULL DEFAULT ''))"),
        QStringLiteral("CREATE INDEX runs_created_at ON runs (created_at)"),
        // WITHOUT ROWID: rows are stored in (run_id, step) order, so reading one run's
        // curve is a range scan and appending steps touches only the last pages.
        QStringLiteral(R"(CREATE TABLE steps (
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            step INTEGER NOT NULL,
            epoch INTEGER NOT NULL,
            loss REAL,
            learning_rate REAL,
            loss_scale REAL,
            skipped INTEGER NOT NULL,
            grad_norm REAL,
            samples_per_second REAL,
            elapsed_seconds REAL,
            PRIMARY KEY (run_id, step)) WITHOUT ROWID)"),
        QStringLiteral(R"(CREATE TABLE epochs (
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            epoch INTEGER NOT NULL,
            train_loss REAL,
            train_accuracy REAL,
            test_loss REAL,
            test_accuracy REAL,
            wall_seconds REAL,
            PRIMARY KEY (run_id, epoch)) WITHOUT ROWID)"),
        QStringLiteral(R"(CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            kind TEXT NOT NULL CHECK (kind IN
                ('overflow', 'scale_change', 'divergence', 'finished', 'error')),
            step INTEGER NOT NULL,
            scale_before REAL,
            scale_after REAL,
            parameter TEXT NOT NULL DEFAULT '',
            message TEXT NOT NULL DEFAULT ''))"),
        QStringLiteral("CREATE INDEX events_run_step ON events (run_id, step)"),
    },
    // 2: organising runs: comparison groups, tags, notes.
    {
        QStringLiteral(R"(CREATE TABLE comparison_groups (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            created_at TEXT NOT NULL))"),
        QStringLiteral("ALTER TABLE runs ADD COLUMN group_id INTEGER "
                       "REFERENCES comparison_groups (id) ON DELETE SET NULL"),
        QStringLiteral("ALTER TABLE runs ADD COLUMN notes TEXT NOT NULL DEFAULT ''"),
        QStringLiteral("CREATE INDEX runs_group ON runs (group_id)"),
        QStringLiteral(R"(CREATE TABLE run_tags (
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            tag TEXT NOT NULL,
            PRIMARY KEY (run_id, tag)) WITHOUT ROWID)"),
        QStringLiteral("CREATE INDEX run_tags_tag ON run_tags (tag)"),
    },
    // 3: checkpoints, and who writes a run, so that a crashed writer's run can be told
    // from a live one (crash recovery, process_liveness.h).
    {
        QStringLiteral(R"(CREATE TABLE checkpoints (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            path TEXT NOT NULL,
            step INTEGER NOT NULL,
            epoch INTEGER NOT NULL,
            created_at TEXT NOT NULL))"),
        QStringLiteral("CREATE INDEX checkpoints_run_step ON checkpoints (run_id, step)"),
        QStringLiteral("ALTER TABLE runs ADD COLUMN writer_pid INTEGER"),
        QStringLiteral("ALTER TABLE runs ADD COLUMN writer_host TEXT"),
        QStringLiteral("ALTER TABLE runs ADD COLUMN writer_boot TEXT"),
        QStringLiteral("ALTER TABLE runs ADD COLUMN writer_start INTEGER"),
        QStringLiteral("ALTER TABLE runs ADD COLUMN heartbeat_at TEXT"),
    },
    // 4: the numerics lens: each step's largest unscaled gradient (loss-scale replay),
    // where an overflow started, and per-layer statistics of sampled steps.
    {
        QStringLiteral("ALTER TABLE steps ADD COLUMN grad_amax REAL"),
        QStringLiteral("ALTER TABLE events ADD COLUMN location_layer_index INTEGER"),
        QStringLiteral("ALTER TABLE events ADD COLUMN location_layer TEXT"),
        QStringLiteral("ALTER TABLE events ADD COLUMN location_kind TEXT"),
        QStringLiteral("ALTER TABLE events ADD COLUMN location_tensor TEXT"),
        QStringLiteral("ALTER TABLE events ADD COLUMN location_non_finite INTEGER"),
        QStringLiteral("ALTER TABLE events ADD COLUMN location_count INTEGER"),
        QStringLiteral("ALTER TABLE events ADD COLUMN location_largest_finite REAL"),
        QStringLiteral(R"(CREATE TABLE numerics_steps (
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            step INTEGER NOT NULL,
            loss_scale REAL NOT NULL,
            scaled_gradients INTEGER NOT NULL,
            PRIMARY KEY (run_id, step)) WITHOUT ROWID)"),
        // WITHOUT ROWID in (run, step, layer) order: one step's table and one tensor's
        // series over steps are both range scans of one run.
        QStringLiteral(R"(CREATE TABLE numerics_tensors (
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            step INTEGER NOT NULL,
            layer_index INTEGER NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('activation', 'activation_grad', 'weight', 'weight_grad')),
            tensor TEXT NOT NULL,
            layer TEXT NOT NULL,
            dtype TEXT NOT NULL,
            target_dtype TEXT NOT NULL,
            count INTEGER NOT NULL,
            amax REAL,
            zeros INTEGER NOT NULL,
            underflow INTEGER NOT NULL,
            subnormal INTEGER NOT NULL,
            overflow INTEGER NOT NULL,
            non_finite INTEGER NOT NULL,
            histogram BLOB NOT NULL,
            PRIMARY KEY (run_id, step, layer_index, kind, tensor)) WITHOUT ROWID)"),
    },
    // 5: sweeps (a base config times axes times seeds) and their runs; a run's uid, so that
    // runs imported from other databases (Slurm tasks) are recognised when imported again; and
    // which kernels a run's 16-bit types took on the CPU (native bf16 or emulated, and the
    // oneDNN implementations used), so that a speedup can be told to be the hardware's.
    {
        QStringLiteral(R"(CREATE TABLE sweeps (
            id INTEGER PRIMARY KEY,
            uid TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL,
            spec_json TEXT NOT NULL,
            run_count INTEGER NOT NULL,
            created_at TEXT NOT NULL))"),
        QStringLiteral("ALTER TABLE runs ADD COLUMN uid TEXT"),
        QStringLiteral("CREATE UNIQUE INDEX runs_uid ON runs (uid)"),
        QStringLiteral("ALTER TABLE runs ADD COLUMN sweep_id INTEGER REFERENCES sweeps (id) ON DELETE SET NULL"),
        QStringLiteral("ALTER TABLE runs ADD COLUMN sweep_index INTEGER"),
        QStringLiteral("CREATE INDEX runs_sweep ON runs (sweep_id, sweep_index)"),
        QStringLiteral("ALTER TABLE runs ADD COLUMN kernels TEXT NOT NULL DEFAULT ''"),
    },
    // 6: the numerics lens for block formats (issue 17): what a sub-16-bit recipe's quantisation
    // did to each GEMM input of a sampled step (ordinal keeps the record's order: by layer,
    // pass, operand); and NaN told from Inf in the measured tensors and where an overflow
    // started (NULL in rows written before: not recorded).
    {
        QStringLiteral("ALTER TABLE numerics_tensors ADD COLUMN nan_count INTEGER"),
        QStringLiteral("ALTER TABLE events ADD COLUMN location_nan INTEGER"),
        QStringLiteral(R"(CREATE TABLE numerics_gemm_inputs (
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            step INTEGER NOT NULL,
            ordinal INTEGER NOT NULL,
            layer_index INTEGER NOT NULL,
            layer TEXT NOT NULL,
            pass TEXT NOT NULL CHECK (pass IN ('fprop', 'dgrad', 'wgrad')),
            operand TEXT NOT NULL CHECK (operand IN ('activation', 'weight', 'gradient')),
            format TEXT NOT NULL,
            elements INTEGER NOT NULL,
            blocks INTEGER NOT NULL,
            clipped_blocks INTEGER NOT NULL,
            nan_scale_blocks INTEGER NOT NULL,
            flushed INTEGER NOT NULL,
            non_finite INTEGER NOT NULL,
            nan_count INTEGER NOT NULL,
            signal_energy REAL NOT NULL,
            noise_energy REAL,
            scale_exponents BLOB NOT NULL,
            PRIMARY KEY (run_id, step, ordinal)) WITHOUT ROWID)"),
    },
    // 7: data-parallel runs (issue 20) as facts rather than text: how many ranks trained the run
    // (filled in for runs recorded before from their config, where an N-rank run recorded
    // distributed.world_size), each rank's throughput and all-reduce time, and which rank an
    // overflow started on.
    {
        QStringLiteral("ALTER TABLE runs ADD COLUMN world_size INTEGER NOT NULL DEFAULT 1"),
        QStringLiteral(R"(UPDATE runs SET world_size = json_extract(config_json, '$.distributed.world_size')
            WHERE json_valid(config_json) AND json_extract(config_json, '$.distributed.world_size') > 1)"),
        QStringLiteral("ALTER TABLE events ADD COLUMN first_rank INTEGER"),
        QStringLiteral(R"(CREATE TABLE run_ranks (
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            rank INTEGER NOT NULL,
            train_seconds REAL NOT NULL,
            samples_per_second REAL NOT NULL,
            allreduce_seconds REAL NOT NULL,
            PRIMARY KEY (run_id, rank)) WITHOUT ROWID)"),
    },
    // 8: what a data-parallel run's 16-bit all-reduce did, per step rather than as run totals in
    // the finished event's text: values the division before the sum flushed to zero, and values
    // the sum overflowed (NULL: not a run that all-reduces in its 16-bit type, or recorded before).
    {
        QStringLiteral("ALTER TABLE steps ADD COLUMN allreduce_flushed INTEGER"),
        QStringLiteral("ALTER TABLE steps ADD COLUMN allreduce_overflowed INTEGER"),
    },
    // 9: the fingerprint of the data a run trained and was tested on (engine/data/
    // data_fingerprint.h), so that runs which did not see the same data can be told apart
    // (NULL: recorded before).
    {
        QStringLiteral("ALTER TABLE runs ADD COLUMN data_fingerprint TEXT"),
    },
    // 10: the model file an imported model's run trained (model.onnx): its bytes, once per
    // content (keyed by their SHA-256), so that the run can be trained again after the file moved,
    // and per run the path it was read from and its hash (NULL: a layer-list model, or recorded
    // before).
    {
        QStringLiteral(R"(CREATE TABLE model_files (
            sha256 TEXT PRIMARY KEY,
            size_bytes INTEGER NOT NULL,
            bytes BLOB NOT NULL))"),
        QStringLiteral("ALTER TABLE runs ADD COLUMN model_source TEXT"),
        QStringLiteral("ALTER TABLE runs ADD COLUMN model_sha256 TEXT REFERENCES model_files (sha256)"),
    },
    shadowErrorsMigration(),
    forkLineageMigration(),
    validationMigration(),
}};

int userVersion(const Connection& connection)
{
    return connection.scalar(QStringLiteral("PRAGMA user_version"), QStringLiteral("reading the schema version"))
        .toInt();
}

// Read-only checks: nothing is written before they pass.
void refuseForeignOrNewer(const Connection& connection, int version)
{
    const QString& path = connection.path();
    if (version > kSchemaVersion) {
        throw StorageError(StorageError::Kind::TooNew, path,
                           QStringLiteral("database schema version %1 is newer than this build "
                                          "of Mantissa supports (%2); upgrade Mantissa")
                               .arg(version)
                               .arg(kSchemaVersion));
    }
    const int applicationId =
        connection.scalar(QStringLiteral("PRAGMA application_id"), QStringLiteral("reading the application id"))
            .toInt();
    QStringList tables;
    if (version == 0) {
        QSqlQuery query = connection.exec(QStringLiteral("SELECT name FROM sqlite_master WHERE type = 'table' "
                                                         "AND name NOT LIKE 'sqlite_%' ORDER BY name"),
                                          QStringLiteral("listing tables"));
        while (query.next())
            tables << query.value(0).toString();
    }
    if ((applicationId != 0 && applicationId != kApplicationId) || !tables.isEmpty()) {
        const QString what = tables.isEmpty() ? QStringLiteral("application id %1").arg(applicationId)
                                              : QStringLiteral("tables %1").arg(tables.join(QStringLiteral(", ")));
        throw StorageError(StorageError::Kind::NotMantissa, path,
                           QStringLiteral("is an SQLite database of another application (%1), "
                                          "not a Mantissa run database; it was left untouched; "
                                          "choose another file with --db or MANTISSA_DB")
                               .arg(what));
    }
}

void quickCheck(const Connection& connection)
{
    QSqlQuery query =
        connection.exec(QStringLiteral("PRAGMA quick_check(5)"), QStringLiteral("checking the database's integrity"));
    QStringList problems;
    while (query.next()) {
        const QString line = query.value(0).toString();
        if (line != QStringLiteral("ok"))
            problems << line;
    }
    if (!problems.isEmpty()) {
        throw StorageError(StorageError::Kind::Corrupt, connection.path(),
                           QStringLiteral("the database is corrupt (PRAGMA quick_check: %1); "
                                          "restore it from a backup (Mantissa does not modify it)")
                               .arg(problems.join(QStringLiteral("; "))));
    }
}

void setPragmas(const Connection& connection)
{
    const QString mode =
        connection.scalar(QStringLiteral("PRAGMA journal_mode = WAL"), QStringLiteral("switching to WAL mode"))
            .toString();
    if (mode.compare(QStringLiteral("wal"), Qt::CaseInsensitive) != 0) {
        throw StorageError(StorageError::Kind::Sql, connection.path(),
                           QStringLiteral("cannot switch the database to WAL mode (it stays in "
                                          "\"%1\" mode); is it on a network file system?")
                               .arg(mode));
    }
    // In WAL mode NORMAL loses no committed transaction when the process dies (only on
    // power loss or an OS crash), and spares an fsync per commit.
    connection.exec(QStringLiteral("PRAGMA synchronous = NORMAL"), QStringLiteral("setting synchronous"));
    connection.exec(QStringLiteral("PRAGMA foreign_keys = ON"), QStringLiteral("enabling foreign keys"));
}

void migrate(const Connection& connection)
{
    Transaction transaction(connection, QStringLiteral("migrating the schema"));
    // Another process may have migrated between our first look and the lock.
    const int version = userVersion(connection);
    refuseForeignOrNewer(connection, version);
    for (int next = version + 1; next <= kSchemaVersion; ++next) {
        for (const QString& statement : kMigrations[next - 1]) {
            connection.exec(statement, QStringLiteral("migrating the schema to version %1").arg(next));
        }
    }
    connection.exec(QStringLiteral("PRAGMA user_version = %1").arg(kSchemaVersion),
                    QStringLiteral("setting the schema version"));
    connection.exec(QStringLiteral("PRAGMA application_id = %1").arg(kApplicationId),
                    QStringLiteral("setting the application id"));
    transaction.commit();
}

} // namespace

void prepareDatabase(const Connection& connection, IntegrityCheck check)
{
    const int version = userVersion(connection);
    refuseForeignOrNewer(connection, version);
    if (check == IntegrityCheck::Quick)
        quickCheck(connection);
    setPragmas(connection);
    if (version < kSchemaVersion)
        migrate(connection);
}

} // namespace mantissa::storage
