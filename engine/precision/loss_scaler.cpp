#include "engine/precision/loss_scaler.h"

#include "engine/backend/dynamic_scale_rule.h"
#include "engine/util/check.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace mantissa {

namespace {

void require(bool ok, const std::string& field, const std::string& what)
{
    if (!ok)
        throw ConfigError("precision.loss_scale." + field + " " + what);
}

} // namespace

LossScaler::LossScaler(const LossScaleSpec& spec, PrecisionMode mode) : m_spec(spec)
{
    switch (PrecisionPolicy(mode).resolveLossScale(spec.type)) {
    case LossScaleType::None:
        m_kind = Kind::None;
        m_state.scale = 1;
        break;
    case LossScaleType::Static:
        require(std::isfinite(spec.value) && spec.value > 0, "value", "must be a positive number");
        m_kind = Kind::Static;
        m_state.scale = spec.value;
        break;
    case LossScaleType::Dynamic:
        require(spec.initial > 0 && std::isfinite(spec.initial), "initial", "must be a positive number");
        require(spec.growthFactor > 1, "growth_factor", "must be greater than 1");
        require(spec.backoffFactor > 0 && spec.backoffFactor < 1, "backoff_factor", "must be between 0 and 1");
        require(spec.growthInterval >= 1 && spec.growthInterval <= kMaxLossScaleCount, "growth_interval",
                "must be between 1 and " + std::to_string(kMaxLossScaleCount));
        require(spec.hysteresis >= 1 && spec.hysteresis <= kMaxLossScaleCount, "hysteresis",
                "must be between 1 and " + std::to_string(kMaxLossScaleCount));
        require(spec.minScale > 0 && spec.minScale <= spec.maxScale, "min", "must be positive and not above max");
        m_kind = Kind::Dynamic;
        m_state.scale = std::clamp(spec.initial, spec.minScale, spec.maxScale);
        m_state.hysteresisLeft = spec.hysteresis;
        break;
    case LossScaleType::Auto: MANTISSA_ASSERT(false && "the policy resolves auto to a concrete type");
    }
}

ScaleUpdate LossScaler::update(bool foundNonFinite)
{
    ScaleUpdate u{m_state.scale, m_state.scale};
    if (m_kind != Kind::Dynamic)
        return u;
    applyDynamicScaleRule(m_spec, foundNonFinite, m_state.scale, m_state.goodSteps, m_state.hysteresisLeft);
    u.after = m_state.scale;
    return u;
}

ScaleRule LossScaler::rule() const
{
    ScaleRule r;
    r.dynamic = m_kind == Kind::Dynamic;
    r.growthFactor = m_spec.growthFactor;
    r.backoffFactor = m_spec.backoffFactor;
    r.growthInterval = static_cast<float>(m_spec.growthInterval);
    r.hysteresis = static_cast<float>(m_spec.hysteresis);
    r.minScale = m_spec.minScale;
    r.maxScale = m_spec.maxScale;
    return r;
}

std::string LossScaler::describe() const
{
    std::ostringstream out;
    switch (m_kind) {
    case Kind::None: return "none";
    case Kind::Static: out << "static " << m_state.scale; break;
    case Kind::Dynamic:
        out << "dynamic (initial " << m_spec.initial << ", x" << m_spec.growthFactor << " every "
            << m_spec.growthInterval << " steps, x" << m_spec.backoffFactor << " on overflow, hysteresis "
            << m_spec.hysteresis << ")";
        break;
    }
    return out.str();
}

} // namespace mantissa
