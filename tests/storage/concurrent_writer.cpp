// Child process of sweep_store_test: one of several processes writing the same run database
// at once, as the workers of a local sweep do. Creates `runs` runs one after the other and
// writes makeStep(1..steps) into each, committing every few milliseconds so that the
// processes' transactions keep meeting, then finishes them. Prints "done" and exits 0, or
// prints the error and exits 1.
#include "storage/run_store.h"
#include "storage/run_writer.h"
#include "test_support.h"

#include <QCoreApplication>

#include <cstdio>

using namespace mantissa;
using namespace mantissa::storage;
using namespace mantissa::storage::test;

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    if (argc != 5) {
        std::fprintf(stderr, "usage: storage_concurrent_writer DATABASE NAME RUNS STEPS\n");
        return 2;
    }
    const QString path = QString::fromLocal8Bit(argv[1]);
    const QString name = QString::fromLocal8Bit(argv[2]);
    const int runs = std::atoi(argv[3]);
    const int steps = std::atoi(argv[4]);
    try {
        RunStore store(path);
        for (int r = 0; r < runs; ++r) {
            NewRun run = sampleRun();
            run.name = QStringLiteral("%1-%2").arg(name).arg(r);
            const qint64 id = store.createRun(run);
            WriterOptions options;
            options.commitIntervalMs = 2;
            RunWriter writer(path, id, options);
            for (qint64 n = 1; n <= steps; ++n) {
                writer.onStep(makeStep(n));
                if (n % 100 == 0)
                    writer.onEpoch(makeEpoch(int(n / 100)));
            }
            if (!writer.finish(finishedSummary())) {
                std::fprintf(stderr, "%s\n", qPrintable(writer.errorMessage()));
                return 1;
            }
        }
    } catch (const std::exception& error) {
        std::fprintf(stderr, "%s\n", error.what());
        return 1;
    }
    std::printf("done\n");
    return 0;
}
