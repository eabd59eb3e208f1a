#pragma once
// Exponential moving average for noisy per-step curves, debiased like TensorBoard's so the
// first points are not dragged towards zero. Non-finite values (a forward overflow) are
// passed through as NaN, which QCustomPlot draws as a gap, and do not enter the average.
#include <QVector>

namespace mantissa::ui {

class EmaSmoother {
public:
    explicit EmaSmoother(double weight = 0.6) : m_weight(weight) {}
    double add(double value);
    void reset();
    double weight() const { return m_weight; }

private:
    double m_weight;
    double m_average = 0;
    double m_debias = 1; // weight^n: the share of the zero start still in the average
};

QVector<double> smoothed(const QVector<double>& values, double weight);

} // namespace mantissa::ui
