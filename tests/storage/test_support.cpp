#include "test_support.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QSqlError>
#include <QSqlQuery>

#include <atomic>
#include <cmath>
#include <limits>

#include <unistd.h>

namespace mantissa::storage::test {

StepRecord makeStep(qint64 step)
{
    StepRecord s;
    s.step = step;
    s.epoch = int(1 + (step - 1) / 1000);
    s.loss = 2.0f / (1.0f + float(step) * 0.001f);
    s.learningRate = 0.05f * float(1 + step % 3);
    s.lossScale = float(1 << (10 + step % 7));
    s.skipped = step % 97 == 0;
    s.gradNorm = s.skipped ? std::numeric_limits<float>::quiet_NaN() : 1.0f + float(step % 11) / 8.0f;
    s.samplesPerSecond = 1000.0f + float(step % 13);
    s.elapsedSeconds = double(step) * 0.001;
    return s;
}

EpochRecord makeEpoch(int epoch)
{
    EpochRecord e;
    e.epoch = epoch;
    e.trainLoss = 1.0f / float(epoch);
    e.trainAccuracy = 0.5f + 0.01f * float(epoch);
    e.testLoss = 1.5f / float(epoch);
    e.testAccuracy = 0.4f + 0.01f * float(epoch);
    e.wallSeconds = 10.0 * epoch;
    return e;
}

EventRecord makeOverflow(qint64 step)
{
    EventRecord e;
    e.kind = EventKind::Overflow;
    e.step = step;
    e.scaleBefore = 65536;
    e.scaleAfter = 32768;
    e.parameter = "layer" + std::to_string(step % 4) + ".weight";
    return e;
}

namespace {

bool same(double stored, double expected) { return (std::isnan(stored) && std::isnan(expected)) || stored == expected; }

} // namespace

bool stepRowMatches(const StepSeries& s, qsizetype row, QString* why)
{
    const StepRecord e = makeStep(qint64(s.step[row]));
    const struct {
        const char* name;
        double stored, expected;
    } columns[] = {
        {"epoch", s.epoch[row], double(e.epoch)},
        {"loss", s.loss[row], double(e.loss)},
        {"learning_rate", s.learningRate[row], double(e.learningRate)},
        {"loss_scale", s.lossScale[row], double(e.lossScale)},
        {"skipped", s.skipped[row] ? 1.0 : 0.0, e.skipped ? 1.0 : 0.0},
        {"grad_norm", s.gradNorm[row], double(e.gradNorm)},
        {"samples_per_second", s.samplesPerSecond[row], double(e.samplesPerSecond)},
        {"elapsed_seconds", s.elapsedSeconds[row], e.elapsedSeconds},
    };
    for (const auto& c : columns) {
        if (!same(c.stored, c.expected)) {
            if (why) {
                *why = QStringLiteral("step %1: %2 is %3, expected %4")
                           .arg(s.step[row])
                           .arg(QLatin1String(c.name))
                           .arg(c.stored)
                           .arg(c.expected);
            }
            return false;
        }
    }
    return true;
}

bool isIntactPrefix(const StepSeries& series, QString* why)
{
    for (qsizetype row = 0; row < series.size(); ++row) {
        if (series.step[row] != double(row + 1)) {
            *why = QStringLiteral("row %1 holds step %2, expected %3").arg(row).arg(series.step[row]).arg(row + 1);
            return false;
        }
        if (!stepRowMatches(series, row, why))
            return false;
    }
    return true;
}

NewRun sampleRun(const QString& preset, const QString& precision)
{
    NewRun run;
    run.preset = preset;
    run.precision = precision;
    run.configJson =
        QStringLiteral(R"({"name": "%1", "precision": "%2", "training": {"seed": 42}})").arg(preset, precision);
    run.device = QStringLiteral("cpu: test");
    return run;
}

RunSummary finishedSummary()
{
    RunSummary summary;
    summary.status = RunStatus::Finished;
    return summary;
}

RawDatabase::RawDatabase(const QString& path)
{
    static std::atomic<int> counter{0};
    m_name = QStringLiteral("test-raw-%1").arg(++counter);
    m_db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), m_name);
    m_db.setDatabaseName(path);
    m_db.open();
}

RawDatabase::~RawDatabase()
{
    m_db.close();
    m_db = QSqlDatabase();
    QSqlDatabase::removeDatabase(m_name);
}

bool RawDatabase::exec(const QString& sql, QString* error)
{
    QSqlQuery query(m_db);
    const bool ok = query.exec(sql);
    if (!ok && error)
        *error = query.lastError().text();
    return ok;
}

QVariant RawDatabase::scalar(const QString& sql)
{
    QSqlQuery query(m_db);
    return query.exec(sql) && query.next() ? query.value(0) : QVariant();
}

FileSnapshot snapshot(const QString& path)
{
    QFile file(path);
    FileSnapshot s;
    if (file.open(QIODevice::ReadOnly))
        s.bytes = file.readAll();
    s.modified = QFileInfo(path).lastModified();
    return s;
}

bool isRoot() { return ::geteuid() == 0; }

namespace {

bool canCreateFileIn(const QString& directory)
{
    QFile probe(QDir(directory).filePath(QStringLiteral("probe")));
    const bool created = probe.open(QIODevice::WriteOnly);
    if (created)
        probe.remove();
    return created;
}

} // namespace

ReadOnlyDirectory readOnlyDirectory(const QString& path)
{
    QDir().mkpath(path);
    if (!isRoot()) {
        return {path, QStringLiteral("chmod 0555"), true,
                [path] {
                    QFile::setPermissions(path, QFile::ReadOwner | QFile::ExeOwner | QFile::ReadGroup |
                                                    QFile::ExeGroup | QFile::ReadOther | QFile::ExeOther);
                },
                [path] { QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner); }};
    }
    if (QProcess::execute(QStringLiteral("chattr"), {QStringLiteral("+i"), path}) == 0) {
        const bool works = !canCreateFileIn(path);
        QProcess::execute(QStringLiteral("chattr"), {QStringLiteral("-i"), path});
        if (works) {
            return {path, QStringLiteral("chattr +i"), true,
                    [path] {
                        QProcess::execute(QStringLiteral("chattr"), {QStringLiteral("+i"), path});
                    },
                    [path] {
                        QProcess::execute(QStringLiteral("chattr"), {QStringLiteral("-i"), path});
                    }};
        }
    }
    if (!canCreateFileIn(QStringLiteral("/proc")))
        return {QStringLiteral("/proc"), QStringLiteral("/proc"), false, [] {}};
    return {};
}

} // namespace mantissa::storage::test
