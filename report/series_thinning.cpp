#include "report/series_thinning.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mantissa::report {

XySeries thinMinMax(const QList<double>& keys, const QList<double>& values, int maxPoints)
{
    XySeries out;
    const qsizetype n = std::min(keys.size(), values.size());
    if (n <= maxPoints || maxPoints < 2) {
        for (qsizetype i = 0; i < n; ++i) {
            if (!std::isinf(values[i])) { // inf cannot be drawn; NaN leaves a gap
                out.keys << keys[i];
                out.values << values[i];
            }
        }
        return out;
    }
    const qsizetype buckets = maxPoints / 2;
    for (qsizetype b = 0; b < buckets; ++b) {
        const qsizetype begin = n * b / buckets, end = n * (b + 1) / buckets;
        qsizetype lo = -1, hi = -1;
        for (qsizetype i = begin; i < end; ++i) {
            if (!std::isfinite(values[i]))
                continue;
            if (lo < 0 || values[i] < values[lo])
                lo = i;
            if (hi < 0 || values[i] > values[hi])
                hi = i;
        }
        if (lo < 0) {
            out.keys << keys[begin];
            out.values << std::numeric_limits<double>::quiet_NaN();
            continue;
        }
        const qsizetype first = std::min(lo, hi), second = std::max(lo, hi);
        out.keys << keys[first];
        out.values << values[first];
        if (second != first) {
            out.keys << keys[second];
            out.values << values[second];
        }
    }
    return out;
}

XySeries thinMean(const QList<double>& keys, const QList<double>& values, int buckets)
{
    XySeries out;
    const qsizetype n = std::min(keys.size(), values.size());
    if (n == 0 || buckets < 1)
        return out;
    const qsizetype count = std::min<qsizetype>(buckets, n);
    for (qsizetype b = 0; b < count; ++b) {
        const qsizetype begin = n * b / count, end = n * (b + 1) / count;
        double keySum = 0, valueSum = 0;
        qsizetype finite = 0;
        for (qsizetype i = begin; i < end; ++i) {
            keySum += keys[i];
            if (std::isfinite(values[i])) {
                valueSum += values[i];
                ++finite;
            }
        }
        out.keys << keySum / double(end - begin);
        out.values << (finite ? valueSum / double(finite) : std::numeric_limits<double>::quiet_NaN());
    }
    return out;
}

QList<double> movingMean(const QList<double>& values, int window)
{
    const qsizetype n = values.size();
    // Prefix sums of the finite values and of their count: O(n) for any window.
    QList<double> sum(n + 1, 0.0), count(n + 1, 0.0);
    for (qsizetype i = 0; i < n; ++i) {
        const bool finite = std::isfinite(values[i]);
        sum[i + 1] = sum[i] + (finite ? values[i] : 0.0);
        count[i + 1] = count[i] + (finite ? 1.0 : 0.0);
    }
    const qsizetype half = std::max(window, 1) / 2;
    QList<double> out;
    out.reserve(n);
    for (qsizetype i = 0; i < n; ++i) {
        const qsizetype lo = std::max<qsizetype>(0, i - half), hi = std::min(n, i + half + 1);
        const double c = count[hi] - count[lo];
        out << (c > 0 ? (sum[hi] - sum[lo]) / c : std::numeric_limits<double>::quiet_NaN());
    }
    return out;
}

XySeries changePoints(const QList<double>& keys, const QList<double>& values)
{
    XySeries out;
    const qsizetype n = std::min(keys.size(), values.size());
    for (qsizetype i = 0; i < n; ++i) {
        const bool changed = i == 0 || values[i] != values[i - 1];
        if (changed || i == n - 1) {
            out.keys << keys[i];
            out.values << values[i];
        }
    }
    return out;
}

} // namespace mantissa::report
