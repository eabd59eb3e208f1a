#pragma once
// The run config being edited, shared by the model editor and the precision/training panels.
// Every edit goes through apply(), which pushes an undoable snapshot onto the undo stack, so
// undo covers the layer table and the forms alike; validation reruns after every change.
#include "engine/config/run_config.h"
#include "engine/model/model_validation.h"

#include <QObject>
#include <QString>
#include <QUndoStack>

namespace mantissa::ui {

class ConfigDocument : public QObject {
    Q_OBJECT
public:
    explicit ConfigDocument(QObject* parent = nullptr);

    const RunConfig& config() const { return m_config; }
    const ModelReport& report() const { return m_report; }
    QUndoStack* undoStack() { return &m_undoStack; }

    // Pushes an undoable edit. Consecutive edits with the same non-empty mergeKey (one
    // table cell, one spin box) merge into one undo step, so typing "1024" is one undo.
    void apply(const RunConfig& next, const QString& description, const QString& mergeKey = {});
    // Replaces the whole config (preset, opened file) as one undoable step.
    void load(const RunConfig& next, const QString& description);

    // Why the config cannot be run, or empty when it can: the model validator's message,
    // or a setting the trainer would refuse.
    QString runBlocker() const;

    // Used by the undo command only: sets the config without pushing a command.
    void setConfigFromUndo(const RunConfig& config, bool layersRestructured);

signals:
    // layersRestructured: rows were added, removed or moved (views reset their rows).
    void changed(bool layersRestructured);

private:
    RunConfig m_config;
    ModelReport m_report;
    QUndoStack m_undoStack;
};

// Whether two configs have the same layer list shape (count only; cell edits keep rows).
bool sameLayerCount(const RunConfig& a, const RunConfig& b);

} // namespace mantissa::ui
