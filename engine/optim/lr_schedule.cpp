#include "engine/optim/lr_schedule.h"

#include "engine/util/check.h"
#include "engine/util/format_number.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace mantissa {

namespace {

// PyTorch OneCycleLR's defaults: start at max/div_factor, end at start/final_div_factor.
constexpr double kOneCycleDiv = 25.0;
constexpr double kOneCycleFinalDiv = 1e4;

void require(bool ok, const std::string& field, const std::string& problem)
{
    if (!ok)
        throw ConfigError(field + ": " + problem);
}

bool finite(float v) { return std::isfinite(v); }

std::string listOf(const std::vector<int>& values)
{
    std::string s = "[";
    for (std::size_t i = 0; i < values.size(); ++i)
        s += (i ? ", " : "") + std::to_string(values[i]);
    return s + "]";
}

// Cosine interpolation from `from` (pct 0) to `to` (pct 1), as PyTorch's _annealing_cos.
double annealCos(double from, double to, double pct)
{
    return to + (from - to) / 2.0 * (std::cos(std::numbers::pi * pct) + 1.0);
}

} // namespace

void LrSchedule::validate(const ScheduleSpec& spec, float baseLr)
{
    require(finite(baseLr) && baseLr > 0, "optimizer.lr", "must be > 0, got " + formatNumber(baseLr));
    require(spec.warmupSteps >= 0, "schedule.warmupSteps", "must be >= 0, got " + std::to_string(spec.warmupSteps));
    switch (spec.type) {
    case ScheduleKind::Constant: break;
    case ScheduleKind::Step: {
        require(finite(spec.gamma) && spec.gamma > 0, "schedule.gamma", "must be > 0, got " + formatNumber(spec.gamma));
        bool increasing = true;
        for (std::size_t i = 0; i < spec.milestones.size(); ++i)
            increasing = increasing && spec.milestones[i] > (i ? spec.milestones[i - 1] : 0);
        require(increasing, "schedule.milestones",
                "epochs must be positive and strictly increasing, got " + listOf(spec.milestones));
        break;
    }
    case ScheduleKind::Cosine:
        require(finite(spec.minLr) && spec.minLr >= 0, "schedule.minLr",
                "must be >= 0, got " + formatNumber(spec.minLr));
        require(spec.minLr <= baseLr, "schedule.minLr",
                formatNumber(spec.minLr) + " is above the base learning rate optimizer.lr = " + formatNumber(baseLr));
        break;
    case ScheduleKind::OneCycle:
        require(finite(spec.maxLr) && spec.maxLr >= 0, "schedule.maxLr",
                "must be >= 0 (0 = 10 x optimizer.lr), got " + formatNumber(spec.maxLr));
        require(spec.pctStart > 0 && spec.pctStart < 1, "schedule.pctStart",
                "must lie in (0, 1), got " + formatNumber(spec.pctStart));
        break;
    }
}

LrSchedule::LrSchedule(const ScheduleSpec& spec, float baseLr) : m_spec(spec), m_baseLr(baseLr)
{
    validate(spec, baseLr);
    m_kind = spec.type;
}

float LrSchedule::peakRate() const
{
    if (m_kind != ScheduleKind::OneCycle)
        return m_baseLr;
    return m_spec.maxLr > 0 ? m_spec.maxLr : 10.0f * m_baseLr;
}

float LrSchedule::rate(std::int64_t step, std::int64_t epoch, std::int64_t /*stepsPerEpoch*/,
                       std::int64_t totalSteps) const
{
    MANTISSA_ASSERT(step >= 0 && epoch >= 0);
    const float lr = scheduledRate(step, epoch, totalSteps);
    if (m_spec.warmupSteps <= 0 || step >= m_spec.warmupSteps)
        return lr;
    return static_cast<float>(static_cast<double>(lr) * static_cast<double>(step + 1) /
                              static_cast<double>(m_spec.warmupSteps));
}

float LrSchedule::scheduledRate(std::int64_t step, std::int64_t epoch, std::int64_t totalSteps) const
{
    switch (m_kind) {
    case ScheduleKind::Constant: return m_baseLr;
    case ScheduleKind::Step: {
        const auto passed =
            std::count_if(m_spec.milestones.begin(), m_spec.milestones.end(), [epoch](int m) { return epoch >= m; });
        return static_cast<float>(m_baseLr * std::pow(static_cast<double>(m_spec.gamma), static_cast<double>(passed)));
    }
    case ScheduleKind::Cosine: {
        MANTISSA_ASSERT(totalSteps > 0);
        const double t = static_cast<double>(std::min(step, totalSteps)) / static_cast<double>(totalSteps);
        return static_cast<float>(annealCos(m_baseLr, m_spec.minLr, t));
    }
    case ScheduleKind::OneCycle: return oneCycleRate(step, totalSteps);
    }
    return m_baseLr;
}

// PyTorch OneCycleLR (three_phase=False): phase one ends at step pctStart*T - 1, phase two at
// T - 1, each a cosine between its end points. Steps past the end stay at the final rate
// (PyTorch raises there; a run whose step count grew by a rounding step should not).
float LrSchedule::oneCycleRate(std::int64_t step, std::int64_t totalSteps) const
{
    MANTISSA_ASSERT(totalSteps > 0);
    const double peak = peakRate();
    const double initial = peak / kOneCycleDiv;
    const double last = initial / kOneCycleFinalDiv;
    const double t = static_cast<double>(std::min(step, totalSteps - 1));
    const double riseEnd = static_cast<double>(m_spec.pctStart) * static_cast<double>(totalSteps) - 1.0;
    const double fallEnd = static_cast<double>(totalSteps) - 1.0;
    if (t <= riseEnd) {
        // riseEnd is 0 when the rise is a single step; that step runs at the initial rate.
        const double pct = riseEnd > 0 ? t / riseEnd : 0.0;
        return static_cast<float>(annealCos(initial, peak, pct));
    }
    const double span = fallEnd - riseEnd;
    const double pct = span > 0 ? (t - riseEnd) / span : 1.0;
    return static_cast<float>(annealCos(peak, last, pct));
}

} // namespace mantissa
