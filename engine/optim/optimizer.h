#pragma once
// SGD (momentum, Nesterov, weight decay), Adam and AdamW over a model's parameters, with
// PyTorch's semantics. The update itself is one multi-tensor backend call; this class owns
// the choice of algorithm, the state tensors and Adam's step counter.
#include "engine/backend/backend.h"
#include "engine/config/run_config.h"
#include "engine/model/parameter.h"

#include <cstdint>
#include <span>
#include <vector>

namespace mantissa {

class Optimizer {
public:
    // Throws ConfigError naming the field at fault (see validate()). `update`: the masters'
    // rounding and the state's dtype (precision.master_weights and optimizer_state); `seed`:
    // stochastic rounding's (training.seed).
    explicit Optimizer(const OptimizerSpec& spec, const UpdatePrecision& update = {}, std::uint64_t seed = 0);

    // Checks lr, momentum, nesterov, weightDecay, betas, epsilon and gradClipNorm.
    static void validate(const OptimizerSpec& spec);

    OptimizerKind kind() const { return m_kind; }
    const OptimizerSpec& spec() const { return m_spec; }
    // State tensors per parameter: 0 (plain SGD), 1 (SGD with momentum) or 2 (Adam, AdamW).
    int stateTensorCount() const { return stateTensorCount(m_spec); }
    static int stateTensorCount(const OptimizerSpec& spec);

    // Allocates each parameter's state1/state2 (as many as the algorithm needs) in the state's
    // dtype (optimizerStateDType) and, for Kahan masters, its compensation, and zero-fills them.
    // Call once, before the first step or a checkpoint load.
    void attach(Backend& backend, const std::vector<Parameter*>& params);

    // One update from each parameter's fp32Grad (already unscaled and clipped), queued on the
    // device with the rate and Adam's corrections from scalars.inputs, and skipped there when
    // the step's gradients were not finite: master and state are rounded to master's dtype, and
    // a working copy that does not share master's storage is refreshed from it. Does not advance
    // stepCount(): the caller does (stepTaken) once it has read that the step was not skipped.
    // `leftScaled`: the caller had unscaleAndCheckFinite leave the fp32Grad of every parameter
    // that readsScaledGradient() unwritten (Backend::unscalesInOptimizer), so the update reads
    // those gradients still scaled and unscales them itself.
    void queueStep(Backend& backend, std::span<Parameter* const> params, const StepScalars& scalars,
                   bool leftScaled = false);
    // Whether p's gradient is 16-bit with an fp32 copy of its own: the ones a step can read
    // still loss-scaled (OptimizerSlot::scaledGrad).
    static bool readsScaledGradient(const Parameter& p);
    // Adam's corrections for the next step taken after `inFlight` more steps the caller has
    // queued but not yet counted (what queueStep's inputs must hold).
    AdamCorrections nextCorrections(std::int64_t inFlight = 0) const;
    void stepTaken() { ++m_steps; }

    // Steps taken so far; Adam's bias correction uses it, so checkpoints store and restore it.
    std::int64_t stepCount() const { return m_steps; }
    void setStepCount(std::int64_t steps);

private:
    void buildSlots(std::span<Parameter* const> params, bool leftScaled);
    SgdSettings sgdSettings() const;
    AdamSettings adamSettings() const;

    OptimizerSpec m_spec;
    UpdatePrecision m_update;
    MasterStore m_store;
    OptimizerKind m_kind = OptimizerKind::Sgd;
    std::int64_t m_steps = 0;
    std::vector<OptimizerSlot> m_slots; // reused between steps
};

} // namespace mantissa
