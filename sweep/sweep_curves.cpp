#include "sweep/sweep_curves.h"

#include "stats/sample_statistics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace mantissa::sweep {

BandCurve bandCurve(const QList<Curve>& runs, BandKind kind)
{
    std::map<double, std::vector<double>> byKey;
    for (const Curve& run : runs)
        for (qsizetype i = 0; i < std::min(run.key.size(), run.value.size()); ++i)
            if (std::isfinite(run.value[i]))
                byKey[run.key[i]].push_back(run.value[i]);
    BandCurve band;
    for (const auto& [key, values] : byKey) {
        const stats::SampleSummary s = stats::summarize(values);
        double low = s.mean, high = s.mean;
        if (s.n >= 2 && kind == BandKind::ConfidenceInterval) {
            low = s.ciLow;
            high = s.ciHigh;
        } else if (s.n >= 2) {
            const auto [min, max] = std::minmax_element(values.begin(), values.end());
            low = *min;
            high = *max;
        }
        band.key << key;
        band.mean << s.mean;
        band.low << low;
        band.high << high;
        band.n << s.n;
    }
    return band;
}

} // namespace mantissa::sweep
