#include "engine/backend/cpu/openmp_wait_policy.h"

#include <cstdlib>
#include <strings.h>
#include <thread>
#include <unistd.h>

namespace mantissa::cpu {

namespace {

const char* setting(const char* name)
{
    const char* value = std::getenv(name);
    return value && *value ? value : nullptr;
}

} // namespace

bool machineIsBusy(double loadAverage, unsigned cores) { return cores > 0 && loadAverage >= cores; }

void adoptOpenMpWaitPolicy(char** argv, WaitPolicyChoice choice)
{
    if (setting("OMP_WAIT_POLICY") || setting("GOMP_SPINCOUNT") || !argv || !argv[0])
        return;
    if (choice == WaitPolicyChoice::WhenLoaded) {
        double load[1] = {0};
        if (::getloadavg(load, 1) != 1 || !machineIsBusy(load[0], std::thread::hardware_concurrency()))
            return;
    }
    // The variable set is also what stops a second re-exec.
    if (::setenv("OMP_WAIT_POLICY", "passive", 1) != 0)
        return;
    ::execv("/proc/self/exe", argv);
    // Still here: no /proc, or exec refused. Run on with libgomp's default, and do not claim
    // a policy the runtime never read.
    ::unsetenv("OMP_WAIT_POLICY");
}

std::string openMpWaitPolicy()
{
    if (const char* spin = setting("GOMP_SPINCOUNT"))
        return std::string("spin count ") + spin;
    if (const char* policy = setting("OMP_WAIT_POLICY"))
        return ::strcasecmp(policy, "passive") == 0  ? "passive"
               : ::strcasecmp(policy, "active") == 0 ? "active"
                                                     : std::string("OMP_WAIT_POLICY=") + policy;
    return "spinning (libgomp's default)";
}

} // namespace mantissa::cpu
