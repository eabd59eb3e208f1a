#include "cli/report_command.h"

#include "engine/util/build_identity.h"
#include "report/report_writer.h"
#include "storage/database_path.h"
#include "sweep/sweep_results.h"

#include <QApplication>
#include <QCommandLineParser>

#include <cstdio>
#include <cstring>

namespace mantissa::cli {

namespace {

using namespace mantissa::report;

constexpr int kExitOk = 0;
constexpr int kExitBadInput = 2;

int fail(const QString& message)
{
    std::fprintf(stderr, "mantissa-cli report: %s\n", qPrintable(message));
    return kExitBadInput;
}

} // namespace

void useOffscreenPlatformUnlessSet()
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
}

bool commandDrawsPlots(int argc, char** argv)
{
    if (argc < 2 || std::strcmp(argv[1], "advise") != 0)
        return false;
    for (int i = 2; i < argc; ++i)
        if (std::strncmp(argv[i], "--report", 8) == 0)
            return true;
    return false;
}

int runReportCommand(int argc, char** argv)
{
    useOffscreenPlatformUnlessSet();
    QApplication app(argc, argv);
    QApplication::setOrganizationName("Mantissa");
    QApplication::setApplicationName("mantissa");
    QApplication::setApplicationVersion(QString::fromStdString(mantissa::buildIdentity()));
    QStringList arguments = QApplication::arguments();
    arguments.removeAt(1); // "report"

    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Write a report of one run, or a comparison of several: PDF, a self-contained HTML file, "
        "Markdown with PNG plots beside it, or CSV of every step and epoch (FILE.csv and FILE-epochs.csv). "
        "The format follows the output file's suffix. Runs that repeat a configuration with other seeds (a "
        "sweep's) add the statistics over the seeds and the mean curves with bands.");
    parser.addHelpOption();
    parser.addPositionalArgument("runs", "Runs to report, by id or name; the first is the baseline of a comparison.",
                                 "RUN [RUN...]");
    parser.addOption({{"o", "output"}, "The report file: .pdf, .html, .md or .csv.", "FILE"});
    parser.addOption({"sweep", "Report a sweep: the outcome of each of its runs (instead of RUN...).", "ID"});
    parser.addOption({"baseline", "The run the others are compared with (added if not listed).", "RUN"});
    parser.addOption({"db", "The run database (default: $MANTISSA_DB, else the per-user database).", "FILE"});
    if (!parser.parse(arguments))
        return fail(parser.errorText());
    if (parser.isSet("help")) {
        std::fputs(qPrintable(parser.helpText()), stdout);
        return kExitOk;
    }
    const QStringList runs = parser.positionalArguments();
    if (runs.isEmpty() && !parser.isSet("sweep"))
        return fail(QStringLiteral("name at least one run (id or name); mantissa-cli report --help for usage"));
    const QString output = parser.value("output");
    if (output.isEmpty())
        return fail(QStringLiteral("give the report file with -o FILE.pdf|.html|.md|.csv"));
    const std::optional<ReportFormat> format = reportFormatForPath(output);
    if (!format)
        return fail(QStringLiteral("%1: unknown report format; use a .pdf, .html, .md or .csv file").arg(output));

    try {
        RunStore store(resolveDatabasePath(parser.value("db")));
        QList<qint64> ids;
        for (const QString& run : runs)
            ids << store.findRun(run).id; // by id or name; StorageError names an unknown one
        if (parser.isSet("sweep")) {
            bool ok = false;
            const qint64 sweepId = parser.value("sweep").toLongLong(&ok);
            if (!ok)
                return fail(QStringLiteral("--sweep expects a sweep id, got \"%1\"").arg(parser.value("sweep")));
            for (const sweep::ConfigurationResults& r : sweep::loadStoredSweep(store, sweepId).results)
                for (const RunInfo& run : r.runs)
                    ids << run.id;
            if (ids.isEmpty())
                return fail(QStringLiteral("sweep %1 has no runs yet").arg(sweepId));
        }
        std::optional<qint64> baseline;
        if (parser.isSet("baseline"))
            baseline = store.findRun(parser.value("baseline")).id;
        const ReportData data = loadReportData(store, ids, baseline);
        for (const QString& file : writeReport(store, data, output, *format))
            std::printf("%s\n", qPrintable(file));
        return kExitOk;
    } catch (const Error& e) {
        return fail(QString::fromUtf8(e.what()));
    }
}

} // namespace mantissa::cli
