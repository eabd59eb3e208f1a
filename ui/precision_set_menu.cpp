#include "ui/precision_set_menu.h"

#include "ui/enum_combo.h"

#include <QMouseEvent>

#include <algorithm>

namespace mantissa::ui {

PrecisionMode comparedPrecision(PrecisionMode configured)
{
    return configured == PrecisionMode::Fp32 ? PrecisionMode::MixedFp16 : configured;
}

QList<RunConfig> comparisonConfigs(const RunConfig& config, const QList<PrecisionMode>& modes)
{
    QList<RunConfig> configs;
    for (PrecisionMode mode : modes) {
        RunConfig c = config;
        c.precision = mode;
        // fp32 needs no scaling (keep the reference honest); another mode's default is its own.
        if (mode == PrecisionMode::Fp32 || mode != config.precision)
            c.lossScale.type = LossScaleType::Auto;
        configs << c;
    }
    return configs;
}

PrecisionSetMenu::PrecisionSetMenu(QWidget* parent) : QMenu(tr("Precisions to compare"), parent)
{
    setObjectName("comparePrecisionsMenu");
    setToolTipsVisible(true);
    addSection(tr("Compare these precisions"));
    m_config = addAction(tr("The config's mode (mixed-fp16 for fp32)"));
    m_config->setData(QString::fromLatin1(kConfigKey));
    m_config->setToolTip(tr("Whatever the Precision tab is set to"));
    addSeparator();
    for (const EnumEntry<PrecisionMode>& entry : enumEntries<PrecisionMode>()) {
        QAction* action = addAction(fromView(entry.displayName) + QStringLiteral("  (") + fromView(entry.key) + ")");
        action->setData(fromView(entry.key));
        action->setToolTip(fromView(entry.description));
        m_modes << action;
    }
    for (QAction* action : QList<QAction*>{m_config} + m_modes) {
        action->setCheckable(true);
        connect(action, &QAction::toggled, this, &PrecisionSetMenu::changed);
    }
    setCheckedKeys({QString::fromLatin1(kConfigKey), QStringLiteral("fp32")});
}

QAction* PrecisionSetMenu::modeAction(PrecisionMode mode) const
{
    const auto entries = enumEntries<PrecisionMode>();
    const auto it = std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return e.value == mode; });
    return m_modes.value(static_cast<qsizetype>(it - entries.begin()));
}

QList<PrecisionMode> PrecisionSetMenu::modes(PrecisionMode configured) const
{
    QList<PrecisionMode> result;
    for (const EnumEntry<PrecisionMode>& entry : enumEntries<PrecisionMode>())
        if (modeAction(entry.value)->isChecked() ||
            (m_config->isChecked() && entry.value == comparedPrecision(configured)))
            result << entry.value;
    return result;
}

QStringList PrecisionSetMenu::checkedKeys() const
{
    QStringList keys;
    for (const QAction* action : actions())
        if (action->isCheckable() && action->isChecked())
            keys << action->data().toString();
    return keys;
}

void PrecisionSetMenu::setCheckedKeys(const QStringList& keys)
{
    {
        const QSignalBlocker blocker(this);
        for (QAction* action : actions())
            if (action->isCheckable()) {
                const QSignalBlocker actionBlocker(action);
                action->setChecked(keys.contains(action->data().toString()));
            }
    }
    emit changed();
}

void PrecisionSetMenu::mouseReleaseEvent(QMouseEvent* event)
{
    QAction* action = actionAt(event->position().toPoint());
    if (action && action->isCheckable() && action->isEnabled()) {
        action->trigger();
        return;
    }
    QMenu::mouseReleaseEvent(event);
}

} // namespace mantissa::ui
