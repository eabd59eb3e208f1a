#pragma once
// One undoable edit of the run config, stored as before/after snapshots: a RunConfig is a
// few hundred bytes, so snapshots are cheaper to get right than per-field inverse edits.
#include "engine/config/run_config.h"

#include <QString>
#include <QUndoCommand>

namespace mantissa::ui {

class ConfigDocument;

class ConfigEditCommand : public QUndoCommand {
public:
    ConfigEditCommand(ConfigDocument* document, RunConfig before, RunConfig after, const QString& text,
                      QString mergeKey);

    void undo() override;
    void redo() override;
    // QUndoStack only tries to merge commands with the same id; the key decides.
    int id() const override { return m_mergeKey.isEmpty() ? -1 : 1; }
    bool mergeWith(const QUndoCommand* other) override;

private:
    ConfigDocument* m_document;
    RunConfig m_before, m_after;
    QString m_mergeKey;
};

} // namespace mantissa::ui
