#pragma once
// Ctrl-C while training: the active run stops at the next step boundary, so its summary
// and every recorded step are still written and the run ends "stopped" rather than
// "interrupted". A comparison also skips the runs it has not started.
namespace mantissa {
class Trainer;
}

namespace mantissa::cli {

// Installs the SIGINT handler for its lifetime (one at a time); restores the default after.
class InterruptHandler {
public:
    InterruptHandler();
    ~InterruptHandler();
    InterruptHandler(const InterruptHandler&) = delete;
    InterruptHandler& operator=(const InterruptHandler&) = delete;

    // The trainer that SIGINT stops; nullptr between runs.
    static void setActiveTrainer(Trainer* trainer);
    // Whether SIGINT arrived since the handler was installed.
    static bool interrupted();
};

} // namespace mantissa::cli
