#include "engine/numerics/shadow_error.h"

#include "engine/util/check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

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

namespace {

// One chunk's sums, in order.
ErrorEnergies measureChunk(const float* compared, const float* reference, std::size_t n, double unscale)
{
    ErrorEnergies e;
    e.count = static_cast<std::int64_t>(n);
    for (std::size_t i = 0; i < n; ++i) {
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

// Chunks of a fixed size, summed in chunk order: the same sums whatever the thread count.
constexpr std::size_t kChunk = 1 << 14;

} // namespace

ErrorEnergies measureError(std::span<const float> compared, std::span<const float> reference, double unscale)
{
    MANTISSA_ASSERT(compared.size() == reference.size());
    const std::size_t chunks = (compared.size() + kChunk - 1) / kChunk;
    std::vector<ErrorEnergies> parts(chunks);
#pragma omp parallel for schedule(static) if (chunks > 4)
    for (std::size_t k = 0; k < chunks; ++k) {
        const std::size_t begin = k * kChunk;
        parts[k] = measureChunk(compared.data() + begin, reference.data() + begin,
                                std::min(kChunk, compared.size() - begin), unscale);
    }
    ErrorEnergies e;
    for (const ErrorEnergies& p : parts) {
        e.count += p.count;
        e.nonFinite += p.nonFinite;
        e.reference += p.reference;
        e.compared += p.compared;
        e.error += p.error;
        e.dot += p.dot;
    }
    return e;
}

} // namespace mantissa
