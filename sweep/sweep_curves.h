#pragma once
// Per-step mean curves with a band over the seeds of a configuration: the curve the
// Comparison tab and a sweep's report draw for it, the band min to max or the mean's 95%
// interval (Mantissa::stats, the same t interval as the statistics table).
#include <QList>
#include <QVector>

namespace mantissa::sweep {

enum class BandKind { MinMax, ConfidenceInterval };

// One run's curve: a value per key (step or epoch), keys ascending.
struct Curve {
    QVector<double> key, value;
};

struct BandCurve {
    QVector<double> key, mean, low, high;
    QVector<int> n; // runs with a finite value at the key
    bool isEmpty() const { return key.isEmpty(); }
};

// At every key of any run: the mean over the runs with a finite value there (a diverged
// step's NaN or infinity does not enter it) and the band. With one value the band is the
// value; keys without any finite value are left out.
BandCurve bandCurve(const QList<Curve>& runs, BandKind kind);

} // namespace mantissa::sweep
