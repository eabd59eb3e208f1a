// report_sample_database PATH: writes the synthetic sample runs (fp32 and mixed-fp16 in one
// comparison group, and an interrupted mixed-fp16 run) into a new database at PATH.
#include "synthetic_runs.h"

#include "engine/util/check.h"

#include <QFile>
#include <QString>

#include <cstdio>

int main(int argc, char** argv)
{
    if (argc != 2) {
        std::fputs("usage: report_sample_database PATH\n", stderr);
        return 2;
    }
    const QString path = QString::fromLocal8Bit(argv[1]);
    if (QFile::exists(path)) {
        std::fprintf(stderr, "report_sample_database: %s exists; give a new path\n", argv[1]);
        return 2;
    }
    try {
        const mantissa::report::test::SampleDatabase sample = mantissa::report::test::writeSampleDatabase(path);
        std::printf("fp32 %lld, mixed-fp16 %lld, interrupted %lld\n", static_cast<long long>(sample.fp32),
                    static_cast<long long>(sample.mixed), static_cast<long long>(sample.interrupted));
        return 0;
    } catch (const mantissa::Error& e) {
        std::fprintf(stderr, "report_sample_database: %s\n", e.what());
        return 1;
    }
}
