#pragma once
// The sweep editor: any grid over the config being edited. Axes are precision modes, loss
// scales, learning rates, batch sizes or any config key by its path, each with a comma-separated
// list of values; then the seeds (a count N for seeds 0 to N-1, or a list) and the runs at once.
// The dialog writes the sweep spec file format (docs/sweeps.md) and checks it on every edit with
// the engine's parseSweepSpec and expandSweep, so an error names the axis, the key, the value and
// the run exactly as `mantissa-cli sweep` would; OK is enabled only for a spec that expands.
#include "engine/config/run_config.h"
#include "engine/sweep/sweep_spec.h"

#include <QDialog>

#include <optional>

class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QTableWidget;

namespace mantissa::ui {

class SweepEditor : public QDialog {
    Q_OBJECT
public:
    enum class AxisKind { Precisions, LossScales, LearningRates, BatchSizes, ConfigKey };

    explicit SweepEditor(const RunConfig& base, QWidget* parent = nullptr);

    // An axis row; `key` only for ConfigKey, `values` as typed ("fp32, mixed-fp16").
    void addAxis(AxisKind kind, const QString& values, const QString& key = {});
    void setSeeds(const QString& seeds); // "8" or "0, 1, 2"
    void setName(const QString& name);
    int jobs() const; // 0: one per core

    // The spec as JSON text (the spec file format) and its check: the spec when it expands,
    // else nullopt with the message in problem().
    QString specJson() const;
    std::optional<SweepSpec> spec() const;
    QString problem() const { return m_problem; }
    QLabel* statusLabel() const { return m_status; }
    QTableWidget* axesTable() const { return m_axes; }

private:
    void revalidate();
    void removeSelectedAxis();

    RunConfig m_base;
    QLineEdit* m_name;
    QTableWidget* m_axes;
    QLineEdit* m_seeds;
    QSpinBox* m_jobs;
    QLabel* m_status;
    QDialogButtonBox* m_buttons;
    std::optional<SweepSpec> m_spec;
    QString m_problem;
};

} // namespace mantissa::ui
