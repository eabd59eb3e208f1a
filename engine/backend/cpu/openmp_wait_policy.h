#pragma once
// How the CPU backend's OpenMP threads wait between parallel regions. libgomp (which oneDNN
// and our loops share) spins at every barrier by default, up to 300,000 iterations, before
// it sleeps. On an idle machine that shaves a wake-up off each region; on a busy one (a GUI
// plotting live, a second sweep worker, a compiler) the spinning thread holds the core its
// partner needs to reach the barrier, and a step takes several times as long: measured on
// the 2-core development machine under a parallel build, mlp fp32 ran at 1,174 samples/s
// spinning and 7,285 waiting passively (bench/engine_throughput, 2 threads). Idle, spinning
// wins: mlp mixed-bf16 20,922 against 17,002 passive, vit-tiny 2,652 against 1,806.
#include <string>

namespace mantissa::cpu {

enum class WaitPolicyChoice {
    Passive,    // always: the GUI, whose own thread must get the cores while a run trains
    WhenLoaded, // only when the machine is already busy as the program starts (1-minute load
                // average at least the number of cores): the CLI and benchmarks
};

// Call first thing in main(). libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, when it
// is loaded, before main runs, so setting them later changes nothing: when neither is set and
// `choice` asks for it, this sets OMP_WAIT_POLICY=passive and re-executes the program
// (/proc/self/exe, same arguments). A user's own setting is left alone, as is everything when
// the re-exec fails.
void adoptOpenMpWaitPolicy(char** argv, WaitPolicyChoice choice);

// The rule WhenLoaded applies, apart for testing.
bool machineIsBusy(double loadAverage, unsigned cores);

// The policy this process runs with, for the backend's description: "passive", "active",
// "spin count N" or "spinning (libgomp's default)".
std::string openMpWaitPolicy();

} // namespace mantissa::cpu
