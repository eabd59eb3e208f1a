#pragma once
// The dynamic loss-scale rule (PyTorch's GradScaler, with DeepSpeed's hysteresis), written once
// for the host scaler (LossScaler::update), the CPU backend's step op and the CUDA kernel
// (MANTISSA_HD: nvcc compiles these same lines for the device). Each value is one
// multiplication, addition or comparison, rounded once on either side, so the three give the
// same scale bit for bit (loss_scaler_test, step_ops_test, cuda_parity_test).
#include "engine/util/host_device.h"

namespace mantissa {

// One step of the rule. `rule` has the fields of LossScaleSpec and ScaleRule (growthFactor,
// backoffFactor, growthInterval, hysteresis, minScale, maxScale); the counters are integers on
// the host and fp32 on the devices' step state (exact up to 2^24, which LossScaler checks).
template <typename Rule, typename Count, typename Hysteresis>
MANTISSA_HD void applyDynamicScaleRule(const Rule& rule, bool overflow, float& scale, Count& goodSteps,
                                       Hysteresis& hysteresisLeft)
{
    if (overflow) {
        goodSteps = 0;
        // Hysteresis tolerates a few overflows before backing off (DeepSpeed's delayed shift);
        // 1 backs off at once, which is PyTorch's behaviour.
        if (hysteresisLeft > 1) {
            hysteresisLeft = hysteresisLeft - 1;
        } else {
            const float backedOff = scale * rule.backoffFactor;
            scale = backedOff < rule.minScale ? rule.minScale : backedOff; // std::max(backedOff, min)
        }
        return;
    }
    goodSteps = goodSteps + 1;
    if (goodSteps >= rule.growthInterval) {
        goodSteps = 0;
        hysteresisLeft = rule.hysteresis;
        const float grown = scale * rule.growthFactor;
        scale = rule.maxScale < grown ? rule.maxScale : grown; // std::min(grown, max)
    }
}

} // namespace mantissa
