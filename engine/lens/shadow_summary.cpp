#include "engine/lens/shadow_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>

namespace mantissa {

double ShadowTensorSummary::meanSqnrDb() const
{
    if (std::isnan(meanRelativeRms))
        return meanRelativeRms;
    return meanRelativeRms == 0 ? std::numeric_limits<double>::infinity() : -20.0 * std::log10(meanRelativeRms);
}

std::string formatRelativeRms(double relativeRms)
{
    if (std::isnan(relativeRms))
        return "nan";
    if (relativeRms == 0 || std::isinf(relativeRms))
        return relativeRms == 0 ? "0" : "inf";
    char text[32];
    std::snprintf(text, sizeof text, "%.2e", relativeRms);
    return text;
}

std::string formatCosine(double cosine)
{
    if (std::isnan(cosine))
        return "nan";
    char text[32];
    std::snprintf(text, sizeof text, "%.7f", cosine);
    return text;
}

std::string formatSqnrDb(double sqnrDb)
{
    if (std::isnan(sqnrDb))
        return "nan";
    if (std::isinf(sqnrDb))
        return sqnrDb > 0 ? "inf dB" : "-inf dB";
    char text[32];
    std::snprintf(text, sizeof text, "%.1f dB", sqnrDb);
    return text;
}

std::vector<ShadowTensorSummary> rankShadowTensors(const std::vector<ShadowRecord>& records,
                                                   std::optional<ShadowTensor> kind)
{
    std::vector<ShadowTensorSummary> all;
    std::map<std::tuple<ShadowTensor, std::string>, std::size_t> index;
    for (const ShadowRecord& r : records)
        for (const ShadowError& e : r.errors) {
            if (kind && e.kind != *kind)
                continue;
            const auto [at, added] = index.try_emplace({e.kind, e.tensor}, all.size());
            if (added) {
                ShadowTensorSummary s;
                s.layer = e.layer;
                s.tensor = e.tensor;
                s.kind = e.kind;
                all.push_back(s);
            }
            ShadowTensorSummary& s = all[at->second];
            ++s.steps;
            const double rel = e.energies.relativeRms();
            if (std::isnan(rel)) {
                ++s.nonFiniteSteps;
                continue;
            }
            s.meanRelativeRms += rel; // summed here, divided below
            s.meanCosine += e.energies.cosine();
            if (e.energies.count > 0) {
                s.meanReferenceRms += std::sqrt(e.energies.reference / static_cast<double>(e.energies.count));
                s.meanComparedRms += std::sqrt(e.energies.compared / static_cast<double>(e.energies.count));
            }
            if (s.steps - s.nonFiniteSteps == 1 || rel > s.worstRelativeRms) {
                s.worstRelativeRms = rel;
                s.worstStep = r.step;
            }
        }
    for (ShadowTensorSummary& s : all) {
        const int measured = s.steps - s.nonFiniteSteps;
        if (measured == 0) {
            s.meanRelativeRms = s.worstRelativeRms = s.meanCosine = s.meanReferenceRms = s.meanComparedRms =
                std::numeric_limits<double>::quiet_NaN();
            continue;
        }
        s.meanRelativeRms /= measured;
        s.meanCosine /= measured;
        s.meanReferenceRms /= measured;
        s.meanComparedRms /= measured;
    }
    std::stable_sort(all.begin(), all.end(), [](const ShadowTensorSummary& a, const ShadowTensorSummary& b) {
        const bool aMeasured = !std::isnan(a.meanRelativeRms), bMeasured = !std::isnan(b.meanRelativeRms);
        if (aMeasured != bMeasured)
            return aMeasured;
        return aMeasured && a.meanRelativeRms > b.meanRelativeRms;
    });
    return all;
}

} // namespace mantissa
