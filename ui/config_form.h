#pragma once
// Base of the settings panels: shows the document's config in widgets and turns each
// widget edit into one undoable document edit, merged per field.
#include "engine/config/config_field.h"
#include "engine/config/run_config.h"
#include "ui/enum_combo.h"

#include <QWidget>

#include <functional>
#include <string_view>
#include <utility>
#include <vector>

class QFormLayout;
class QSpinBox;

namespace mantissa::ui {

class ConfigDocument;
class NumberSpinBox;

class ConfigForm : public QWidget {
    Q_OBJECT
public:
    explicit ConfigForm(ConfigDocument* document, QWidget* parent = nullptr);

protected:
    // Shows `config` in the widgets. Called with the widgets' signals blocked, so showing a
    // value never echoes back as an edit.
    virtual void load(const RunConfig& config) = 0;
    // Applies one field edit; `key` names the field so repeated edits merge into one undo.
    void edit(const QString& key, const std::function<void(RunConfig&)>& mutate);
    // Reloads every widget from the document (after an undo, a preset, a file).
    void reload();

    // Widget factories that wire the edit: each returns the widget, named `key` so tests
    // and the screenshot tool can find it.
    // A combo box over one of the engine's enums (ui/enum_combo.h): it lists exactly the values
    // the engine accepts, and `set` stores the one chosen.
    template <typename E>
    QComboBox* addEnumCombo(QFormLayout* form, const QString& label, const QString& key,
                            std::function<void(RunConfig&, E)> set)
    {
        QComboBox* combo = addComboRow(form, label, key);
        fillEnumCombo<E>(combo);
        connect(combo, &QComboBox::currentIndexChanged, this, [this, combo, key, set](int index) {
            if (index >= 0)
                edit(key, [&](RunConfig& c) { set(c, enumComboValue<E>(combo, index)); });
        });
        return combo;
    }
    // A row for the config field at `path`, made from the engine's row for it
    // (engine/config/config_field.h): its label, its description as the tooltip, its unit as
    // the suffix, its range as the widget's limits and its values as a combo's items. The
    // widget is a QSpinBox (integers), a NumberSpinBox (reals), a QCheckBox, a QComboBox
    // (choices) or a QLineEdit (text, lists of integers); reload() shows the field's value.
    QWidget* addField(QFormLayout* form, std::string_view path);
    template <typename Widget>
    Widget* addField(QFormLayout* form, std::string_view path)
    {
        auto* widget = qobject_cast<Widget*>(addField(form, path));
        Q_ASSERT(widget);
        return widget;
    }

    ConfigDocument* document() const { return m_document; }

private:
    QComboBox* addComboRow(QFormLayout* form, const QString& label, const QString& key);
    void showField(QWidget* widget, const RunField& field, const RunConfig& config);

    ConfigDocument* m_document;
    std::vector<std::pair<QWidget*, const RunField*>> m_fields; // the widgets addField made
};

} // namespace mantissa::ui
