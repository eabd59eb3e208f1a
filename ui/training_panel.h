#pragma once
// Optimizer, learning-rate schedule, batch size, duration, seed, device and dataset.
#include "ui/config_form.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace mantissa::ui {

class TrainingPanel : public ConfigForm {
    Q_OBJECT
public:
    explicit TrainingPanel(ConfigDocument* document, QWidget* parent = nullptr);

    // The note shown under the batch size (empty when the batch is a multiple of 8).
    QString batchNote() const;

protected:
    void load(const RunConfig& config) override;

private:
    QWidget* buildOptimizer();
    QWidget* buildSchedule();
    QWidget* buildTraining();
    QWidget* buildData();
    void fillDevices();

    // Optimizer
    QComboBox* m_optimizer;
    NumberSpinBox* m_lr;
    NumberSpinBox* m_momentum;
    QCheckBox* m_nesterov;
    NumberSpinBox* m_weightDecay;
    NumberSpinBox* m_beta1;
    NumberSpinBox* m_beta2;
    NumberSpinBox* m_epsilon;
    NumberSpinBox* m_clip;
    // Schedule
    QComboBox* m_schedule;
    QLineEdit* m_milestones;
    NumberSpinBox* m_gamma;
    QSpinBox* m_warmup;
    NumberSpinBox* m_minLr;
    NumberSpinBox* m_maxLr;
    NumberSpinBox* m_pctStart;
    // Training
    QSpinBox* m_batch;
    QLabel* m_batchNote;
    QSpinBox* m_epochs;
    QSpinBox* m_maxSteps;
    QSpinBox* m_numericsEvery;
    QSpinBox* m_shadowEvery;
    QSpinBox* m_seed;
    QComboBox* m_device;
    QSpinBox* m_threads;
    // Data
    QComboBox* m_dataset;
    QLineEdit* m_directory;
    QLineEdit* m_path;
    QComboBox* m_format;
    QSpinBox* m_limitTrain;
    QSpinBox* m_limitTest;
    NumberSpinBox* m_validation;
};

} // namespace mantissa::ui
