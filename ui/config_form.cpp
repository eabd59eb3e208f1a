#include "ui/config_form.h"

#include "ui/config_document.h"
#include "ui/number_spin_box.h"

#include <QComboBox>
#include <QFormLayout>
#include <QSignalBlocker>
#include <QSpinBox>

namespace mantissa::ui {

ConfigForm::ConfigForm(ConfigDocument* document, QWidget* parent) : QWidget(parent), m_document(document)
{
    connect(document, &ConfigDocument::changed, this, &ConfigForm::reload);
}

void ConfigForm::edit(const QString& key, const std::function<void(RunConfig&)>& mutate)
{
    RunConfig next = m_document->config();
    mutate(next);
    m_document->apply(next, tr("Change %1").arg(key), "form/" + key);
}

void ConfigForm::reload()
{
    // Block every child's signals while the values are set: they are not user edits.
    const QList<QWidget*> children = findChildren<QWidget*>();
    std::vector<std::unique_ptr<QSignalBlocker>> blockers;
    blockers.reserve(static_cast<std::size_t>(children.size()));
    for (QWidget* child : children)
        blockers.push_back(std::make_unique<QSignalBlocker>(child));
    load(m_document->config());
}

QComboBox* ConfigForm::addComboRow(QFormLayout* form, const QString& label, const QString& key)
{
    auto* combo = new QComboBox;
    combo->setObjectName(key);
    form->addRow(label, combo);
    return combo;
}

NumberSpinBox* ConfigForm::addNumber(QFormLayout* form, const QString& label, const QString& key, double minimum,
                                     double maximum, std::function<void(RunConfig&, double)> set)
{
    auto* spin = new NumberSpinBox(minimum, maximum);
    spin->setObjectName(key);
    connect(spin, &QDoubleSpinBox::valueChanged, this,
            [this, key, set](double value) { edit(key, [&](RunConfig& c) { set(c, value); }); });
    form->addRow(label, spin);
    return spin;
}

QSpinBox* ConfigForm::addInteger(QFormLayout* form, const QString& label, const QString& key, int minimum, int maximum,
                                 std::function<void(RunConfig&, int)> set)
{
    auto* spin = new QSpinBox;
    spin->setObjectName(key);
    spin->setRange(minimum, maximum);
    spin->setKeyboardTracking(false);
    connect(spin, &QSpinBox::valueChanged, this,
            [this, key, set](int value) { edit(key, [&](RunConfig& c) { set(c, value); }); });
    form->addRow(label, spin);
    return spin;
}

} // namespace mantissa::ui
