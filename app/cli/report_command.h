#pragma once
// `mantissa-cli report RUN [RUN...] -o FILE.pdf|.html|.md|.csv [--baseline RUN] [--db FILE]`

namespace mantissa::cli {

// Runs the report command in a QApplication of its own: the plots are QCustomPlot
// widgets drawn offscreen, which a QCoreApplication cannot host. Call it from main()
// before any application object exists; argv[1] is "report". Returns the exit code:
// 0 written, 2 bad input (unknown run, unusable database, unwritable file).
int runReportCommand(int argc, char** argv);

} // namespace mantissa::cli
