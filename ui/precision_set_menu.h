#pragma once
// The precisions "Compare precisions" trains side by side (issue 17): the menu beside the
// button, one checkable entry per precision mode of the engine's table plus "the config's
// mode". The default, fp32 and the config's mode, is the comparison the button always made;
// ticking more (bf16, fp8-hybrid, mxfp4, nvfp4, ...) compares them all in one click with the
// same seed and data order. The choice travels with the workbench's layout state, so a host
// that saves it (QSettings) remembers it.
#include "engine/config/run_config.h"

#include <QList>
#include <QMenu>
#include <QStringList>

namespace mantissa::ui {

// The precision "Compare precisions" sets against fp32 by default: the config's own, or
// mixed-fp16 for an fp32 config.
PrecisionMode comparedPrecision(PrecisionMode configured);

// One config per mode, copies of `config` that differ only in the precision: same seed, so
// the same initial weights and data order. A mode other than the config's own gets the loss
// scaling its mode needs (auto), and so does fp32 always; the config's own keeps its settings.
QList<RunConfig> comparisonConfigs(const RunConfig& config, const QList<PrecisionMode>& modes);

class PrecisionSetMenu : public QMenu {
    Q_OBJECT
public:
    // The key of "the config's mode" in checkedKeys().
    static constexpr const char* kConfigKey = "config";

    explicit PrecisionSetMenu(QWidget* parent = nullptr);

    // The modes to compare for a config in `configured`: the ticked ones and, when its entry is
    // ticked, comparedPrecision(configured); in the engine's order (fp32 first), each once.
    QList<PrecisionMode> modes(PrecisionMode configured) const;
    // "config", "fp32", "mxfp4", ...: the ticked entries. setCheckedKeys ignores a key it does
    // not know (a mode a newer version had), so a saved choice never fails to load.
    QStringList checkedKeys() const;
    void setCheckedKeys(const QStringList& keys);
    QAction* configAction() const { return m_config; }
    QAction* modeAction(PrecisionMode mode) const;

signals:
    void changed();

protected:
    // Ticking an entry keeps the menu open: a set takes several clicks.
    void mouseReleaseEvent(QMouseEvent* event) override;

private:
    QAction* m_config;
    QList<QAction*> m_modes; // in the engine's order
};

} // namespace mantissa::ui
