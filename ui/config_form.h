#pragma once
// Base of the settings panels: shows the document's config in widgets and turns each
// widget edit into one undoable document edit, merged per field.
#include "engine/config/run_config.h"

#include <QWidget>

#include <functional>

class QComboBox;
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
    QComboBox* addCombo(QFormLayout* form, const QString& label, const QString& key, const QStringList& items,
                        std::function<void(RunConfig&, const QString&)> set);
    NumberSpinBox* addNumber(QFormLayout* form, const QString& label, const QString& key, double minimum,
                             double maximum, std::function<void(RunConfig&, double)> set);
    QSpinBox* addInteger(QFormLayout* form, const QString& label, const QString& key, int minimum, int maximum,
                         std::function<void(RunConfig&, int)> set);

    ConfigDocument* document() const { return m_document; }

private:
    ConfigDocument* m_document;
};

} // namespace mantissa::ui
