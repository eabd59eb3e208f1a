#pragma once
// Base of the settings panels: shows the document's config in widgets and turns each
// widget edit into one undoable document edit, merged per field.
#include "engine/config/run_config.h"
#include "ui/enum_combo.h"

#include <QWidget>

#include <functional>

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
    NumberSpinBox* addNumber(QFormLayout* form, const QString& label, const QString& key, double minimum,
                             double maximum, std::function<void(RunConfig&, double)> set);
    QSpinBox* addInteger(QFormLayout* form, const QString& label, const QString& key, int minimum, int maximum,
                         std::function<void(RunConfig&, int)> set);

    ConfigDocument* document() const { return m_document; }

private:
    QComboBox* addComboRow(QFormLayout* form, const QString& label, const QString& key);

    ConfigDocument* m_document;
};

} // namespace mantissa::ui
