#pragma once
// Shared by the storage tests and the crash-writer helper: deterministic records (so a
// reader can check every stored value without knowing what was written), raw SQL access
// for building and inspecting databases by hand, and file snapshots.
#include "engine/observe/records.h"
#include "storage/run_types.h"

#include <QByteArray>
#include <QDateTime>
#include <QSqlDatabase>
#include <QString>
#include <QVariant>

#include <functional>

namespace mantissa::storage::test {

// Step n of a synthetic run: every 97th step is skipped (NaN grad norm), every value is
// a function of n.
StepRecord makeStep(qint64 step);
EpochRecord makeEpoch(int epoch);
EventRecord makeOverflow(qint64 step);

// Whether row `row` of `series` holds exactly makeStep(series.step[row]). On mismatch,
// `why` says which column.
bool stepRowMatches(const StepSeries& series, qsizetype row, QString* why = nullptr);
// Steps 1..n contiguous and matching makeStep; `why` explains the first problem.
bool isIntactPrefix(const StepSeries& series, QString* why);

NewRun sampleRun(const QString& preset = QStringLiteral("mlp"),
                 const QString& precision = QStringLiteral("mixed-fp16"));
// The engine's summary of a finished run that reports nothing else: the store fills in what
// it saw (RunWriter) or leaves it NULL (RunStore::finishRun).
RunSummary finishedSummary();

// A plain QSqlDatabase connection, for SQL a test writes by hand.
class RawDatabase {
public:
    explicit RawDatabase(const QString& path);
    ~RawDatabase();
    RawDatabase(const RawDatabase&) = delete;
    RawDatabase& operator=(const RawDatabase&) = delete;

    bool exec(const QString& sql, QString* error = nullptr);
    QVariant scalar(const QString& sql);
    QSqlDatabase& database() { return m_db; }

private:
    QString m_name;
    QSqlDatabase m_db;
};

struct FileSnapshot {
    QByteArray bytes;
    QDateTime modified;
    bool operator==(const FileSnapshot&) const = default;
};
FileSnapshot snapshot(const QString& path);

// A directory this process cannot create files in. Tests run as root in CI, and root
// ignores permission bits, so as root the directory is made immutable (chattr +i), and
// failing that /proc stands in, where no one can create files. An empty path: no way here.
struct ReadOnlyDirectory {
    QString path;
    QString technique;
    bool canHoldDatabase = true; // false for /proc: no database can be put there first
    std::function<void()> makeReadOnly;
    std::function<void()> restore = [] {};
};
ReadOnlyDirectory readOnlyDirectory(const QString& path);

bool isRoot();

} // namespace mantissa::storage::test
