#pragma once
// `mantissa-cli report RUN [RUN...] -o FILE.pdf|.html|.md|.csv [--baseline RUN] [--db FILE]`

namespace mantissa::cli {

// Runs the report command in a QApplication of its own: the plots are QCustomPlot
// widgets drawn offscreen, which a QCoreApplication cannot host. Call it from main()
// before any application object exists; argv[1] is "report". Returns the exit code:
// 0 written, 2 bad input (unknown run, unusable database, unwritable file).
int runReportCommand(int argc, char** argv);

// Reports never show a window: the offscreen platform renders the same fonts and pixels without
// a display, so commands that draw plots work over ssh and in CI. An explicit QT_QPA_PLATFORM
// still wins. Call before the QApplication exists.
void useOffscreenPlatformUnlessSet();

// Whether the command line asks for plots besides `report` (advise --report): main() then makes
// a QApplication rather than a QCoreApplication.
bool commandDrawsPlots(int argc, char** argv);

} // namespace mantissa::cli
