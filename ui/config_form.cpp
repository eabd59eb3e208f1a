#include "ui/config_form.h"

#include "ui/config_document.h"
#include "ui/number_spin_box.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSpinBox>

#include <algorithm>
#include <limits>

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
    for (const auto& [widget, field] : m_fields)
        showField(widget, *field, m_document->config());
    load(m_document->config());
}

QComboBox* ConfigForm::addComboRow(QFormLayout* form, const QString& label, const QString& key)
{
    auto* combo = new QComboBox;
    combo->setObjectName(key);
    form->addRow(label, combo);
    return combo;
}

QWidget* ConfigForm::addField(QFormLayout* form, std::string_view path)
{
    const RunField& field = runConfigField(path);
    const RunField* row = &field; // a row of the engine's static table: it outlives every widget
    const QString key = fromView(field.path);
    const QString label = fromView(field.label);
    QString tip = fromView(field.description);
    if (field.hasRange())
        tip += tr(" Legal: %1.").arg(QString::fromStdString(field.rangeText()));
    const QString suffix = field.unit.empty() ? QString() : QLatin1Char(' ') + fromView(field.unit);
    // Qt's spin boxes hold ints: a range beyond them is cut to what the widget can show.
    const auto toInt = [](double v) {
        return static_cast<int>(
            std::clamp(v, double(std::numeric_limits<int>::min()), double(std::numeric_limits<int>::max())));
    };
    const auto setText = [this, key, row](const std::string& text) {
        try {
            edit(key, [&](RunConfig& c) { row->setText(c, text, std::string(row->path)); });
        } catch (const ConfigError&) {
            reload(); // refused: the widget shows the field's value again
        }
    };
    QWidget* widget = nullptr;
    switch (field.kind()) {
    case FieldKind::Integer: {
        auto* spin = new QSpinBox;
        spin->setRange(toInt(field.minimum), toInt(field.maximum));
        spin->setKeyboardTracking(false);
        spin->setSuffix(suffix);
        connect(spin, &QSpinBox::valueChanged, this,
                [this, key, row](int value) { edit(key, [&](RunConfig& c) { row->setNumber(c, value); }); });
        widget = spin;
        break;
    }
    case FieldKind::Real: {
        auto* spin = new NumberSpinBox(field.minimum, field.maximum);
        spin->setSuffix(suffix);
        connect(spin, &QDoubleSpinBox::valueChanged, this,
                [this, key, row](double value) { edit(key, [&](RunConfig& c) { row->setNumber(c, value); }); });
        widget = spin;
        break;
    }
    case FieldKind::Boolean: {
        auto* check = new QCheckBox(label);
        connect(check, &QCheckBox::toggled, this,
                [this, key, row](bool on) { edit(key, [&](RunConfig& c) { row->setNumber(c, on ? 1 : 0); }); });
        widget = check;
        break;
    }
    case FieldKind::Choice: {
        auto* combo = new QComboBox;
        for (const FieldChoice& choice : field.choices()) {
            combo->addItem(fromView(choice.displayName), fromView(choice.key));
            combo->setItemData(combo->count() - 1, fromView(choice.description), Qt::ToolTipRole);
        }
        connect(combo, &QComboBox::currentIndexChanged, this, [combo, setText](int index) {
            if (index >= 0)
                setText(combo->itemData(index).toString().toStdString());
        });
        widget = combo;
        break;
    }
    case FieldKind::Text:
    case FieldKind::IntegerList: {
        auto* line = new QLineEdit;
        connect(line, &QLineEdit::editingFinished, this,
                [line, setText] { setText(line->text().trimmed().toStdString()); });
        widget = line;
        break;
    }
    }
    widget->setObjectName(key);
    widget->setToolTip(tip);
    if (field.kind() == FieldKind::Boolean)
        form->addRow(QString(), widget);
    else
        form->addRow(label, widget);
    m_fields.emplace_back(widget, &field);
    return widget;
}

void ConfigForm::showField(QWidget* widget, const RunField& field, const RunConfig& config)
{
    if (auto* spin = qobject_cast<QSpinBox*>(widget))
        spin->setValue(static_cast<int>(field.number(config)));
    else if (auto* number = qobject_cast<QDoubleSpinBox*>(widget))
        number->setValue(field.number(config));
    else if (auto* check = qobject_cast<QCheckBox*>(widget))
        check->setChecked(field.number(config) != 0);
    else if (auto* combo = qobject_cast<QComboBox*>(widget))
        combo->setCurrentIndex(combo->findData(QString::fromStdString(field.text(config))));
    else if (auto* line = qobject_cast<QLineEdit*>(widget))
        line->setText(QString::fromStdString(field.text(config)));
}

} // namespace mantissa::ui
