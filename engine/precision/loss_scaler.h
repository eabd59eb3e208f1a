#pragma once
// Loss scaling: none, static, or dynamic (PyTorch GradScaler semantics, plus DeepSpeed's
// hysteresis). The scaler only decides the scale; whether a step is skipped is decided
// by the gradients' finiteness, which the Trainer measures after unscaling.
#include "engine/backend/step_scalars.h"
#include "engine/precision/loss_scale_spec.h"
#include "engine/precision/precision_policy.h"

#include <cstdint>
#include <string>

namespace mantissa {

struct ScaleUpdate {
    float before = 1, after = 1;
    bool changed() const { return before != after; }
};

// What a checkpoint needs to resume the scaler exactly.
struct LossScalerState {
    float scale = 1;
    std::int64_t goodSteps = 0; // finite steps since the last growth or overflow
    int hysteresisLeft = 1;     // overflows still tolerated before backing off
};

class LossScaler {
public:
    enum class Kind { None, Static, Dynamic };

    // Resolves "auto" by the mode's policy (PrecisionPolicy::resolveLossScale) and validates
    // the spec (ConfigError naming the field).
    LossScaler(const LossScaleSpec& spec, PrecisionMode mode);

    Kind kind() const { return m_kind; }
    float scale() const { return m_state.scale; }
    // Call once per step with whether any gradient was non-finite.
    ScaleUpdate update(bool foundNonFinite);

    // The rule as the backends apply it on the device (Backend::updateLossScale).
    ScaleRule rule() const;

    LossScalerState state() const { return m_state; }
    void restore(const LossScalerState& state) { m_state = state; }
    // "dynamic (init 65536, x2 every 2000, x0.5 on overflow, hysteresis 1)"
    std::string describe() const;

private:
    Kind m_kind;
    LossScaleSpec m_spec;
    LossScalerState m_state;
};

} // namespace mantissa
