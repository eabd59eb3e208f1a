#include "engine/optim/optimizer.h"

#include "engine/util/check.h"
#include "engine/util/format_number.h"

#include <cmath>

namespace mantissa {

namespace {

void require(bool ok, const std::string& field, const std::string& problem)
{
    if (!ok)
        throw ConfigError(field + ": " + problem);
}

// NaN fails every comparison, so these reject it along with the out-of-range values.
bool inUnitInterval(float v) { return v >= 0 && v < 1; }

} // namespace

void Optimizer::validate(const OptimizerSpec& spec)
{
    require(std::isfinite(spec.lr) && spec.lr > 0, "optimizer.lr", "must be > 0, got " + formatNumber(spec.lr));
    require(std::isfinite(spec.weightDecay) && spec.weightDecay >= 0, "optimizer.weightDecay",
            "must be >= 0, got " + formatNumber(spec.weightDecay));
    require(std::isfinite(spec.gradClipNorm) && spec.gradClipNorm >= 0, "optimizer.gradClipNorm",
            "must be >= 0 (0 = no clipping), got " + formatNumber(spec.gradClipNorm));
    if (spec.type == OptimizerKind::Sgd) {
        require(inUnitInterval(spec.momentum), "optimizer.momentum",
                formatNumber(spec.momentum) + " is outside [0, 1)");
        require(!spec.nesterov || spec.momentum > 0, "optimizer.nesterov",
                "Nesterov momentum needs optimizer.momentum > 0");
        return;
    }
    require(!spec.nesterov, "optimizer.nesterov", "applies to sgd only, not " + std::string(enumKey(spec.type)));
    require(inUnitInterval(spec.beta1), "optimizer.beta1", formatNumber(spec.beta1) + " is outside [0, 1)");
    require(inUnitInterval(spec.beta2), "optimizer.beta2", formatNumber(spec.beta2) + " is outside [0, 1)");
    require(std::isfinite(spec.epsilon) && spec.epsilon > 0, "optimizer.epsilon",
            "must be > 0, got " + formatNumber(spec.epsilon));
}

Optimizer::Optimizer(const OptimizerSpec& spec, const UpdatePrecision& update, std::uint64_t seed)
    : m_spec(spec), m_update(update), m_store{masterRounding(update.masters), seed}
{
    validate(spec);
    m_kind = spec.type;
}

int Optimizer::stateTensorCount(const OptimizerSpec& spec)
{
    if (spec.type != OptimizerKind::Sgd)
        return 2;
    return spec.momentum > 0 ? 1 : 0;
}

void Optimizer::attach(Backend& backend, const std::vector<Parameter*>& params)
{
    const int count = stateTensorCount();
    for (Parameter* p : params) {
        MANTISSA_ASSERT(p && p->master.defined());
        // By default the state lives in master's dtype: fp32 in mixed precision, 16-bit in the
        // pure modes, where it is part of what those modes save and what they lose.
        const DType stateType = optimizerStateDType(m_update.state, p->master.dtype());
        Tensor* states[] = {&p->state1, &p->state2};
        for (int i = 0; i < 2; ++i) {
            if (i < count) {
                *states[i] = backend.empty(p->master.shape(), stateType);
                backend.fill(*states[i], 0.0f);
            } else {
                *states[i] = Tensor();
            }
        }
        p->compensation = Tensor();
        if (hasCompensation(m_update.masters)) {
            MANTISSA_ASSERT(p->master.dtype() == DType::BF16); // masterDType gives Kahan bf16 masters
            p->compensation = backend.empty(p->master.shape(), kCompensationDType);
            backend.fill(p->compensation, 0.0f);
        }
    }
}

bool Optimizer::readsScaledGradient(const Parameter& p)
{
    return p.grad.defined() && p.grad.dtype() != DType::F32 && !p.fp32Grad.sharesStorageWith(p.grad);
}

void Optimizer::buildSlots(std::span<Parameter* const> params, bool leftScaled)
{
    m_slots.clear();
    m_slots.reserve(params.size());
    const int count = stateTensorCount();
    for (Parameter* p : params) {
        MANTISSA_ASSERT(p->fp32Grad.defined() && p->fp32Grad.dtype() == DType::F32 &&
                        p->fp32Grad.numel() == p->master.numel());
        MANTISSA_ASSERT(count < 1 || p->state1.numel() == p->master.numel()); // attach() ran
        MANTISSA_ASSERT(count < 2 || p->state2.numel() == p->master.numel());
        OptimizerSlot slot;
        slot.master = &p->master;
        slot.grad = &p->fp32Grad;
        slot.state1 = count >= 1 ? &p->state1 : nullptr;
        slot.state2 = count >= 2 ? &p->state2 : nullptr;
        // A working copy that is master itself needs no refresh; a separate one does.
        const bool separate = p->working.defined() && !p->working.sharesStorageWith(p->master);
        slot.working = separate ? &p->working : nullptr;
        slot.decay = p->decay;
        if (leftScaled && readsScaledGradient(*p))
            slot.scaledGrad = &p->grad;
        slot.compensation = p->compensation.defined() ? &p->compensation : nullptr;
        slot.index = static_cast<std::uint32_t>(m_slots.size());
        m_slots.push_back(slot);
    }
}

SgdSettings Optimizer::sgdSettings() const { return {m_spec.momentum, m_spec.weightDecay, m_spec.nesterov, m_store}; }

AdamSettings Optimizer::adamSettings() const
{
    AdamSettings s;
    s.beta1 = m_spec.beta1;
    s.beta2 = m_spec.beta2;
    s.epsilon = m_spec.epsilon;
    s.weightDecay = m_spec.weightDecay;
    s.decoupledDecay = m_kind == OptimizerKind::AdamW;
    s.store = m_store;
    return s;
}

void Optimizer::queueStep(Backend& backend, std::span<Parameter* const> params, const StepScalars& scalars,
                          bool leftScaled)
{
    buildSlots(params, leftScaled);
    if (m_kind == OptimizerKind::Sgd)
        backend.sgdStep(m_slots, sgdSettings(), scalars);
    else
        backend.adamStep(m_slots, adamSettings(), scalars);
}

AdamCorrections Optimizer::nextCorrections(std::int64_t inFlight) const
{
    return m_kind == OptimizerKind::Sgd ? AdamCorrections{} : adamCorrections(adamSettings(), m_steps + 1 + inFlight);
}

void Optimizer::setStepCount(std::int64_t steps)
{
    MANTISSA_ASSERT(steps >= 0);
    m_steps = steps;
}

} // namespace mantissa
