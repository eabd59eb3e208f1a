#include "ui/config_edit_command.h"

#include "ui/config_document.h"

namespace mantissa::ui {

ConfigEditCommand::ConfigEditCommand(ConfigDocument* document, RunConfig before, RunConfig after, const QString& text,
                                     QString mergeKey)
    : QUndoCommand(text), m_document(document), m_before(std::move(before)), m_after(std::move(after)),
      m_mergeKey(std::move(mergeKey))
{}

void ConfigEditCommand::undo()
{
    // Any preset or file load may change the rows; a cell edit never does.
    m_document->setConfigFromUndo(m_before, !sameLayerCount(m_before, m_after) || m_mergeKey.isEmpty());
}

void ConfigEditCommand::redo()
{
    m_document->setConfigFromUndo(m_after, !sameLayerCount(m_before, m_after) || m_mergeKey.isEmpty());
}

bool ConfigEditCommand::mergeWith(const QUndoCommand* other)
{
    const auto* next = dynamic_cast<const ConfigEditCommand*>(other);
    if (!next || next->m_mergeKey != m_mergeKey || m_mergeKey.isEmpty())
        return false;
    m_after = next->m_after;
    return true;
}

} // namespace mantissa::ui
