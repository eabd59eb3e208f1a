// Throughput of RunWriter: writes N step rows (default 1,000,000) to a fresh database
// and prints rows per second, first alone, then with a reader on another thread polling
// for new rows every 50 ms as the GUI's run monitor does. Target: >= 200,000 rows/s.
//
//   storage_write_bench [ROWS] [DIRECTORY]   (DIRECTORY defaults to a temporary one)
#include "storage/run_store.h"
#include "storage/run_writer.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QThread>

#include <atomic>
#include <cstdio>
#include <thread>

using namespace mantissa;
using namespace mantissa::storage;

namespace {

// What a run that reports nothing but its end gives the writer, which fills in the rest.
RunSummary finishedRun()
{
    RunSummary summary;
    summary.status = RunStatus::Finished;
    return summary;
}

StepRecord syntheticStep(qint64 n)
{
    StepRecord s;
    s.step = n;
    s.epoch = int(1 + n / 469);
    s.loss = 2.3f / (1.0f + float(n) * 1e-4f);
    s.learningRate = 0.05f;
    s.lossScale = 65536.0f;
    s.skipped = n % 2000 == 0;
    s.gradNorm = 1.0f + float(n % 17) * 0.01f;
    s.samplesPerSecond = 25000.0f + float(n % 100);
    s.elapsedSeconds = double(n) * 0.005;
    return s;
}

struct ReaderStats {
    qint64 polls = 0, rows = 0, slowestPollMs = 0;
};

// A reader with its own connection, polling for rows it has not seen yet.
void pollUntilDone(const QString& path, qint64 runId, const std::atomic<bool>& done, ReaderStats& stats)
{
    RunStore store(path);
    qint64 last = 0;
    for (;;) {
        const bool finished = done.load();
        QElapsedTimer timer;
        timer.start();
        const StepSeries fresh = store.steps(runId, last);
        stats.slowestPollMs = std::max(stats.slowestPollMs, timer.elapsed());
        ++stats.polls;
        stats.rows += fresh.size();
        if (!fresh.isEmpty())
            last = qint64(fresh.step.back());
        if (finished && fresh.isEmpty())
            return;
        QThread::msleep(50);
    }
}

bool runOnce(const QString& path, qint64 rows, bool withReader)
{
    RunStore store(path);
    NewRun run;
    run.preset = QStringLiteral("bench");
    run.precision = withReader ? QStringLiteral("with-reader") : QStringLiteral("alone");
    run.configJson = QStringLiteral("{}");
    const qint64 runId = store.createRun(run);

    std::atomic<bool> done{false};
    ReaderStats stats;
    std::thread reader;
    if (withReader)
        reader = std::thread([&] { pollUntilDone(path, runId, done, stats); });

    QElapsedTimer timer;
    timer.start();
    RunWriter writer(path, runId);
    for (qint64 n = 1; n <= rows; ++n)
        writer.onStep(syntheticStep(n));
    writer.finish(finishedRun());
    const double seconds = double(timer.nsecsElapsed()) * 1e-9;
    done = true;
    if (reader.joinable())
        reader.join();

    if (writer.failed()) {
        std::fprintf(stderr, "writer failed: %s\n", qPrintable(writer.errorMessage()));
        return false;
    }
    std::printf("%-12s %9lld rows in %6.3f s = %9.0f rows/s, %lld commits\n", withReader ? "with reader" : "alone",
                rows, seconds, double(rows) / seconds, writer.commitCount());
    if (withReader) {
        std::printf("%-12s %9lld rows read in %lld polls, slowest poll %lld ms\n", "", stats.rows, stats.polls,
                    stats.slowestPollMs);
    }
    return true;
}

} // namespace

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    const qint64 rows = argc > 1 ? QByteArray(argv[1]).toLongLong() : 1000000;
    QTemporaryDir temporary;
    const QString directory = argc > 2 ? QString::fromLocal8Bit(argv[2]) : temporary.path();
    const QString path = QDir(directory).filePath(QStringLiteral("storage_write_bench.sqlite"));
    for (const QString& suffix : {QString(), QStringLiteral("-wal"), QStringLiteral("-shm")})
        QFile::remove(path + suffix);
    try {
        if (!runOnce(path, rows, false) || !runOnce(path, rows, true))
            return 1;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "%s\n", error.what());
        return 1;
    }
    std::printf("database: %s, %.1f MiB\n", qPrintable(path), double(QFileInfo(path).size()) / (1024.0 * 1024.0));
    return 0;
}
