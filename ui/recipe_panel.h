#pragma once
// The precision panel's part for the sub-16-bit recipes (issue 17), shown only while the mode
// is one: the recipe's options (precision.recipe in docs/config.md), each edit one undo step
// like every form, and a table of the formats the recipe gives activations, weights and
// gradients with their ranges, beside the range the tensors measured in the last recorded run
// of the same model that sampled its statistics (RecipeFormatTableModel). Before such a run
// the table says the tensors are not measured yet rather than guess.
#include "ui/config_form.h"
#include "ui/recipe_measurement.h"

#include <optional>
#include <string>

class QLabel;
class QGroupBox;
class QTableView;

namespace mantissa::ui {

class RecipeFormatTableModel;

class RecipePanel : public ConfigForm {
    Q_OBJECT
public:
    explicit RecipePanel(ConfigDocument* document, QWidget* parent = nullptr);

    // A recorded run's tensors, measured at its last sampled step. The table shows them while
    // the config trains the same model; the latest measurement replaces the one before.
    void setMeasurement(RecipeMeasurement measurement);
    const std::optional<RecipeMeasurement>& measurement() const { return m_measurement; }

    RecipeFormatTableModel* formatModel() const { return m_model; }
    QTableView* formatTable() const { return m_table; }
    QLabel* measuredNote() const { return m_measuredNote; }
    QLabel* coverageNote() const { return m_coverage; }

signals:
    // The note's link: show run `runId`'s GEMM inputs page in the Numerics tab.
    void numericsRequested(qint64 runId);

protected:
    void load(const RunConfig& config) override;

private:
    void showMeasurement(const RunConfig& config);
    // Which GEMMs the recipe quantises ("mxfp8: 25 of 25 GEMMs quantised"), or why none.
    void showCoverage(const RunConfig& config);

    QComboBox* m_scaleRule;
    QSpinBox* m_amaxHistory;
    QComboBox* m_stochastic;
    QComboBox* m_keepFirstLast;
    QComboBox* m_attention;
    QComboBox* m_passes;
    QComboBox* m_weightBlocks2d;
    QComboBox* m_powerOfTwo;
    QComboBox* m_hadamard;
    QLabel* m_note; // what the options' "auto" means for this recipe
    QLabel* m_coverage;
    RecipeFormatTableModel* m_model;
    QTableView* m_table;
    QLabel* m_measuredNote;
    std::optional<RecipeMeasurement> m_measurement;
    std::string m_measuredModel; // the measured run's model, as JSON, to match the config's
};

// The "model" object of `config`'s JSON: two configs train the same network when these match.
std::string modelJson(const RunConfig& config);

} // namespace mantissa::ui
