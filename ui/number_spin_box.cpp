#include "ui/number_spin_box.h"

#include <cmath>

namespace mantissa::ui {

NumberSpinBox::NumberSpinBox(double minimum, double maximum, QWidget* parent) : QDoubleSpinBox(parent)
{
    setDecimals(12); // the value itself keeps full precision; textFromValue decides the look
    setRange(minimum, maximum);
    setKeyboardTracking(false);
}

QString NumberSpinBox::textFromValue(double value) const { return QString::number(value, 'g', 6); }

double NumberSpinBox::valueFromText(const QString& text) const { return text.trimmed().toDouble(); }

QValidator::State NumberSpinBox::validate(QString& text, int&) const
{
    const QString t = text.trimmed();
    if (t.isEmpty() || t == "-" || t.endsWith('e') || t.endsWith("e-") || t.endsWith('.'))
        return QValidator::Intermediate;
    bool ok = false;
    const double v = t.toDouble(&ok);
    if (!ok)
        return QValidator::Invalid;
    return v >= minimum() && v <= maximum() ? QValidator::Acceptable : QValidator::Intermediate;
}

void NumberSpinBox::stepBy(int steps)
{
    if (!m_multiplicative) {
        QDoubleSpinBox::stepBy(steps);
        return;
    }
    setValue(value() * std::pow(2.0, steps));
}

} // namespace mantissa::ui
