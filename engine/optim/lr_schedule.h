#pragma once
// Learning-rate schedules: constant, step decay, cosine annealing and one-cycle, each
// optionally multiplied by a linear warm-up. Pure functions of the clock, so a resumed run
// gets exactly the rates it would have had.
#include "engine/config/run_config.h"

#include <cstdint>

namespace mantissa {

class LrSchedule {
public:
    // Throws ConfigError naming the field at fault (see validate()).
    LrSchedule(const ScheduleSpec& spec, float baseLr);

    // Checks `spec` for the schedule it names, and `baseLr` (optimizer.lr).
    static void validate(const ScheduleSpec& spec, float baseLr);

    ScheduleKind kind() const { return m_kind; }
    const ScheduleSpec& spec() const { return m_spec; }
    // The highest rate the schedule reaches: maxLr for one-cycle, the base rate otherwise.
    float peakRate() const;

    // The rate for optimizer step `step` (0-based over the whole run), which falls in epoch
    // `epoch` (0-based); `totalSteps` is the length of the run (cosine and one-cycle need it,
    // > 0 for them). `stepsPerEpoch` completes the clock; the step decay reads `epoch`.
    //  - constant:  lr
    //  - step:      lr * gamma^(number of milestones <= epoch)  (PyTorch MultiStepLR per epoch)
    //  - cosine:    minLr + (lr - minLr) * (1 + cos(pi * step / totalSteps)) / 2
    //  - one-cycle: PyTorch OneCycleLR (cosine annealing, two phases): from maxLr/25 up to maxLr
    //               over pctStart * totalSteps steps, then down to maxLr/25/1e4 at the last step
    //  - warm-up:   the above times min(1, (step + 1) / warmupSteps), so the first step already
    //               moves and step warmupSteps-1 runs at the full rate.
    float rate(std::int64_t step, std::int64_t epoch, std::int64_t stepsPerEpoch, std::int64_t totalSteps) const;

private:
    float scheduledRate(std::int64_t step, std::int64_t epoch, std::int64_t totalSteps) const;
    float oneCycleRate(std::int64_t step, std::int64_t totalSteps) const;

    ScheduleSpec m_spec;
    ScheduleKind m_kind = ScheduleKind::Constant;
    float m_baseLr = 0;
};

} // namespace mantissa
