#pragma once
// precision.loss_scale of the run config. It lives with the precision policy, which says what
// "auto" means per mode, so that the config and the loss scaler both depend on it and not on
// each other.
#include "engine/precision/precision_policy.h"

#include <cstdint>

namespace mantissa {

// The largest growth_interval and hysteresis: the devices keep the scaler's counters in fp32,
// exact up to 2^24. LossScaler refuses more and the UI offers no more.
inline constexpr std::int64_t kMaxLossScaleCount = std::int64_t{1} << 24;

struct LossScaleSpec {
    LossScaleType type = LossScaleType::Auto; // auto: PrecisionPolicy::resolveLossScale
    float value = 128;                        // static
    float initial = 65536;                    // dynamic: 2^16
    float growthFactor = 2, backoffFactor = 0.5f;
    std::int64_t growthInterval = 2000;
    int hysteresis = 1; // consecutive overflows before backing off (PyTorch 1, DeepSpeed 2)
    float minScale = 1.0f / 65536.0f, maxScale = 16777216.0f; // 2^-16 .. 2^24
};

} // namespace mantissa
