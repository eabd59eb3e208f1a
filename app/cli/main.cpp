// mantissa-cli: headless training and run management.
#include "cli/report_command.h"
#include "cli/train_command.h"

#include <QCoreApplication>

#include <cstdio>
#include <cstring>

namespace {

void printUsage()
{
    std::fputs("usage: mantissa-cli COMMAND [options]\n\n"
               "commands:\n"
               "  train (--preset NAME | CONFIG.json) [options]   train a model (train --help for options)\n"
               "  report RUN [RUN...] -o FILE.pdf|.html|.md|.csv  write a report of runs (report --help)\n",
               stderr);
}

} // namespace

int main(int argc, char** argv)
{
    if (argc > 1 && std::strcmp(argv[1], "report") == 0) // needs a QApplication, not a QCoreApplication
        return mantissa::cli::runReportCommand(argc, argv);
    QCoreApplication app(argc, argv);
    QCoreApplication::setOrganizationName("Mantissa");
    QCoreApplication::setApplicationName("mantissa");
    QCoreApplication::setApplicationVersion(MANTISSA_VERSION);
    QStringList arguments = QCoreApplication::arguments();
    if (arguments.size() < 2 || arguments[1] == "--help" || arguments[1] == "-h") {
        printUsage();
        return arguments.size() < 2 ? 2 : 0;
    }
    const QString command = arguments.takeAt(1);
    if (command == "train")
        return mantissa::cli::runTrainCommand(arguments);
    std::fprintf(stderr, "mantissa-cli: unknown command \"%s\"\n", qPrintable(command));
    printUsage();
    return 2;
}
