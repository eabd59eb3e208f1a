#pragma once
// A spin box for real settings that span many decades (learning rates of 1e-4, loss scales
// of 2^24): it shows numbers in their shortest form ("0.05", "1e-08", "1.67772e+07")
// instead of QDoubleSpinBox's fixed decimals, which would show 1e-8 as 0.000000.
#include <QDoubleSpinBox>

namespace mantissa::ui {

class NumberSpinBox : public QDoubleSpinBox {
    Q_OBJECT
public:
    NumberSpinBox(double minimum, double maximum, QWidget* parent = nullptr);

    QString textFromValue(double value) const override;
    double valueFromText(const QString& text) const override;
    QValidator::State validate(QString& text, int& pos) const override;
    // Steps multiply or divide by 2 for scale-like settings, add for the rest.
    void stepBy(int steps) override;
    void setMultiplicativeSteps(bool on) { m_multiplicative = on; }

private:
    bool m_multiplicative = false;
};

} // namespace mantissa::ui
