// Child process of crash_recovery_test: creates a run in the database given as argv[1],
// prints "ready <run id>" once the first rows are committed, then writes makeStep(1),
// makeStep(2), ... (an epoch every 100000 steps, an overflow every 50000) until it is
// killed. Epochs and events commit at once; in between, commits come every 50 ms.
#include "storage/run_store.h"
#include "storage/run_writer.h"
#include "test_support.h"

#include <QCoreApplication>
#include <QThread>

#include <cstdio>

using namespace mantissa;
using namespace mantissa::storage;
using namespace mantissa::storage::test;

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    if (argc != 2) {
        std::fprintf(stderr, "usage: storage_crash_writer DATABASE\n");
        return 2;
    }
    const QString path = QString::fromLocal8Bit(argv[1]);
    try {
        qint64 id = 0;
        {
            RunStore store(path);
            id = store.createRun(sampleRun(QStringLiteral("crash"), QStringLiteral("fp32")));
        }
        WriterOptions options;
        options.commitIntervalMs = 50; // many commits, so the kill often lands inside one
        RunWriter writer(path, id, options);
        for (qint64 n = 1;; ++n) {
            writer.onStep(makeStep(n));
            if (n % 100000 == 0)
                writer.onEpoch(makeEpoch(int(n / 100000)));
            if (n % 50000 == 0)
                writer.onEvent(makeOverflow(n));
            if (n == 1) {
                writer.flush();
                std::printf("ready %lld\n", id);
                std::fflush(stdout);
            }
            if (writer.failed()) {
                std::fprintf(stderr, "%s\n", qPrintable(writer.errorMessage()));
                return 1;
            }
            if (n % 100 == 0)
                QThread::usleep(200); // keep the database small and leave the other core free
        }
    } catch (const std::exception& error) {
        std::fprintf(stderr, "%s\n", error.what());
        return 1;
    }
}
