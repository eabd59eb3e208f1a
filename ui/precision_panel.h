#pragma once
// Precision mode, the master weights and optimizer state, a sub-16-bit recipe's options and
// formats (recipe_panel.h) and loss scaling (none, static, dynamic with its growth/backoff policy).
#include "ui/config_form.h"

class QComboBox;
class QLabel;
class QSpinBox;

namespace mantissa::ui {

class RecipePanel;

class PrecisionPanel : public ConfigForm {
    Q_OBJECT
public:
    explicit PrecisionPanel(ConfigDocument* document, QWidget* parent = nullptr);

    // Shown while the mode is a sub-16-bit recipe.
    RecipePanel* recipePanel() const { return m_recipe; }

protected:
    void load(const RunConfig& config) override;

private:
    QComboBox* m_mode;
    QLabel* m_modeNote;
    QComboBox* m_cpuKernels;
    QLabel* m_kernelNote; // which kernels the mode's compute type takes on this CPU
    QLabel* m_updateNote; // the masters' rounding and the bytes each parameter takes
    RecipePanel* m_recipe;
    QComboBox* m_scaleType;
    QLabel* m_scaleNote;
    NumberSpinBox* m_static;
    NumberSpinBox* m_initial;
    NumberSpinBox* m_growth;
    NumberSpinBox* m_backoff;
    QSpinBox* m_interval;
    QSpinBox* m_hysteresis;
    NumberSpinBox* m_min;
    NumberSpinBox* m_max;
};

} // namespace mantissa::ui
