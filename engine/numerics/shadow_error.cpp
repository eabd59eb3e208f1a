#include "engine/numerics/shadow_error.h"

#include "engine/util/check.h"

#include <cmath>
#include <limits>

namespace mantissa {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

} // namespace

double ErrorEnergies::relativeRms() const
{
    if (nonFinite > 0)
        return kNaN;
    if (error == 0)
        return 0;
    return reference == 0 ? kInf : std::sqrt(error / reference);
}

double ErrorEnergies::cosine() const
{
    if (nonFinite > 0)
        return kNaN;
    if (reference == 0 || compared == 0)
        return reference == compared ? 1.0 : 0.0;
    return dot / std::sqrt(reference * compared);
}

double ErrorEnergies::sqnrDb() const
{
    if (nonFinite > 0)
        return kNaN;
    if (error == 0)
        return kInf;
    return reference == 0 ? -kInf : 10.0 * std::log10(reference / error);
}

ErrorEnergies measureError(std::span<const float> compared, std::span<const float> reference, double unscale)
{
    MANTISSA_ASSERT(compared.size() == reference.size());
    ErrorEnergies e;
    e.count = static_cast<std::int64_t>(compared.size());
    for (std::size_t i = 0; i < compared.size(); ++i) {
        const double c = static_cast<double>(compared[i]) * unscale;
        const double r = reference[i];
        if (!std::isfinite(c) || !std::isfinite(r)) {
            ++e.nonFinite;
            continue;
        }
        e.reference += r * r;
        e.compared += c * c;
        e.error += (c - r) * (c - r);
        e.dot += c * r;
    }
    return e;
}

} // namespace mantissa
