#pragma once
// Where a run's weights come from and when it saves them: fresh (from the seed) or a stored
// run's checkpoint (training.init_from, set by the run browser's "Start from its weights"),
// and how often a recorded run saves a checkpoint (training.checkpoint_every_epochs).
#include "ui/config_form.h"

class QLabel;
class QPushButton;
class QSpinBox;

namespace mantissa::ui {

class WeightsPanel : public ConfigForm {
    Q_OBJECT
public:
    explicit WeightsPanel(ConfigDocument* document, QWidget* parent = nullptr);

protected:
    void load(const RunConfig& config) override;

private:
    QLabel* m_initialWeights;
    QPushButton* m_fresh;
    QSpinBox* m_checkpointEvery;
};

} // namespace mantissa::ui
