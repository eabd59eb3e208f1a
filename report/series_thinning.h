#pragma once
// Fewer points to draw: a million-step run would make a PDF of tens of megabytes and an
// unreadable smear, while a page is a few hundred points wide. Each reduction keeps what
// a reader looks for in its kind of curve.
#include <QList>

namespace mantissa::report {

struct XySeries {
    QList<double> keys, values;
};

// The lowest and the highest value of each of about maxPoints/2 runs of consecutive
// points, in their order: spikes (a loss jump at an overflow) survive, noise keeps its
// envelope. Non-finite values are dropped; an all-NaN run becomes one NaN (a gap).
XySeries thinMinMax(const QList<double>& keys, const QList<double>& values, int maxPoints);

// The mean key and mean finite value of each of `buckets` runs of consecutive points:
// for rates, whose per-step noise hides the trend.
XySeries thinMean(const QList<double>& keys, const QList<double>& values, int buckets);

// The mean of the finite values within `window` points centred on each point: a batch's
// loss is noisy, and the trend is what two precisions are compared on.
QList<double> movingMean(const QList<double>& values, int window);

// A step function reduced to the points where its value changes, and the last point:
// drawn as a left step line it is the same curve.
XySeries changePoints(const QList<double>& keys, const QList<double>& values);

} // namespace mantissa::report
