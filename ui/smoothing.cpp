#include "ui/smoothing.h"

#include <cmath>
#include <limits>

namespace mantissa::ui {

double EmaSmoother::add(double value)
{
    if (!std::isfinite(value))
        return std::numeric_limits<double>::quiet_NaN();
    m_average = m_weight * m_average + (1 - m_weight) * value;
    m_debias *= m_weight;
    return m_debias < 1 ? m_average / (1 - m_debias) : value;
}

void EmaSmoother::reset()
{
    m_average = 0;
    m_debias = 1;
}

QVector<double> smoothed(const QVector<double>& values, double weight)
{
    EmaSmoother smoother(weight);
    QVector<double> out;
    out.reserve(values.size());
    for (double v : values)
        out.push_back(smoother.add(v));
    return out;
}

} // namespace mantissa::ui
