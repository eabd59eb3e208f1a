#pragma once
// Replay of loss-scale policies over a recorded run: given each step's largest unscaled
// gradient magnitude (StepRecord::gradAmax), the scale history and skipped steps another
// scaler would have produced, so a user can pick a policy from evidence.
//
// A step overflows under scale S when gradAmax * S >= overflowAt (65520 for fp16: the
// smallest value that rounds to infinity) or gradAmax is not finite. Exact for steps the
// run completed, as far as the weight gradients decide (an activation gradient may
// overflow earlier than any weight gradient); steps the run itself skipped have no known
// magnitude (inf) and count as overflows under every policy. The weights a different
// policy would have produced are not replayed: the trace is the recorded run's.
#include "engine/config/run_config.h"

#include <string>
#include <vector>

namespace mantissa {

struct ScalerPolicy {
    std::string name;   // "pytorch", "deepspeed", "static 128", ...
    LossScaleSpec spec; // type "static" or "dynamic"
};

// PyTorch GradScaler defaults (init 2^16, x2 every 2000, x0.5, hysteresis 1); DeepSpeed
// (init 2^16, window 1000, hysteresis 2); static 128; static 512.
std::vector<ScalerPolicy> standardScalerPolicies();

struct ReplayResult {
    std::string policy;
    std::vector<float> scales; // the scale each step would have used
    std::int64_t skippedSteps = 0;
    float finalScale = 1; // after the last step
    float minScale = 1;   // smallest scale used
};

ReplayResult replayScaler(const std::vector<float>& gradAmax, const ScalerPolicy& policy, float overflowAt = 65520.0f);

} // namespace mantissa
