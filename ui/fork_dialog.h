#pragma once
// "Fork from here…": the settings a fork of a recorded run changes before it continues the
// run's training state saved after a step (mantissa-cli fork does the same): the precision mode
// (a recipe is a precision mode), the master weights, the optimizer state's format and the
// learning rate, each an editor made from the engine's row for the field (ConfigForm::addField),
// so that the dialog offers exactly the values the engine accepts. The rest of the parent's
// config stays. The engine's rules decide whether the fork can start (validateRunConfig, and
// forkShapeChange: a fork keeps its parent's model shape); while one refuses, the dialog says why
// and "Start fork" is disabled.
#include "engine/config/run_config.h"

#include <QDialog>

#include <string_view>
#include <vector>

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;

namespace mantissa::ui {

class ConfigDocument;
class NumberSpinBox;

class ForkDialog : public QDialog {
    Q_OBJECT
public:
    // `parent` is the parent run's config; `heading` says which run and step ("Fork mlp-nvfp4-1
    // (#3) after step 400, the saved state nearest where you clicked").
    ForkDialog(RunConfig parentConfig, const QString& heading, QWidget* parent = nullptr);

    // The config fields the dialog edits, in its order.
    static const std::vector<std::string_view>& fields();

    // The parent's config with the dialog's changes.
    RunConfig config() const;
    // The fork's name; empty for a generated one.
    QString runName() const;
    // Why the engine refuses the fork as it stands; empty when it can start.
    QString problem() const { return m_problemText; }
    // The dialog's config before checking it, for a test to ask the dialog about a config the
    // editors cannot make (a changed model, say): what problem() would say of it.
    void setConfig(const RunConfig& config);

    // The editor of config field `path` (one of fields()).
    QWidget* fieldEditor(std::string_view path) const;
    QComboBox* precisionBox() const;
    QComboBox* masterWeightsBox() const;
    QComboBox* optimizerStateBox() const;
    NumberSpinBox* learningRateBox() const;
    QLineEdit* nameEdit() const { return m_name; }
    QLabel* problemLabel() const { return m_problem; }
    QPushButton* startButton() const { return m_start; }

private:
    void check();

    RunConfig m_parentConfig;
    ConfigDocument* m_document;
    QLineEdit* m_name;
    QLabel* m_problem;
    QPushButton* m_start;
    QString m_problemText;
};

} // namespace mantissa::ui
