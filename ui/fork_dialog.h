#pragma once
// "Fork from here…": the settings a fork of a recorded run changes before it continues the
// run's training state saved after a step (mantissa-cli fork does the same): the precision
// (a recipe is a precision mode) and the learning rate. The rest of the parent's config stays.
#include "engine/config/run_config.h"

#include <QDialog>

class QComboBox;
class QLabel;
class QLineEdit;

namespace mantissa::ui {

class NumberSpinBox;

class ForkDialog : public QDialog {
    Q_OBJECT
public:
    // `parent` is the parent run's config; `heading` says which run and step ("Fork mlp-nvfp4-1
    // (#3) after step 400, the saved state nearest where you clicked").
    ForkDialog(RunConfig parentConfig, const QString& heading, QWidget* parent = nullptr);

    // The parent's config with the dialog's changes.
    RunConfig config() const;
    // The fork's name; empty for a generated one.
    QString runName() const;

    QComboBox* precisionBox() const { return m_precision; }
    NumberSpinBox* learningRateBox() const { return m_learningRate; }
    QLineEdit* nameEdit() const { return m_name; }

private:
    RunConfig m_parentConfig;
    QComboBox* m_precision;
    NumberSpinBox* m_learningRate;
    QLineEdit* m_name;
};

} // namespace mantissa::ui
