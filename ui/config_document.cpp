#include "ui/config_document.h"

#include "engine/data/dataset.h"
#include "ui/config_edit_command.h"

namespace mantissa::ui {

ConfigDocument::ConfigDocument(QObject* parent) : QObject(parent) { m_report = validateModel(m_config.model); }

void ConfigDocument::apply(const RunConfig& next, const QString& description, const QString& mergeKey)
{
    m_undoStack.push(new ConfigEditCommand(this, m_config, next, description, mergeKey));
}

void ConfigDocument::load(const RunConfig& next, const QString& description) { apply(next, description); }

void ConfigDocument::setConfigFromUndo(const RunConfig& config, bool layersRestructured)
{
    m_config = config;
    m_report = validateModel(m_config.model);
    emit changed(layersRestructured);
}

QString ConfigDocument::runBlocker() const
{
    // The engine's rules, asked rather than restated: the model, each field's range, and
    // whether the model takes the data.
    if (!m_report.valid())
        return QString::fromStdString(m_report.error);
    try {
        validateRunConfig(m_config, "the config");
    } catch (const ConfigError& e) {
        return QString::fromUtf8(e.what());
    }
    if (const std::optional<std::string> mismatch = dataModelMismatch(m_config))
        return QString::fromStdString(*mismatch);
    return {};
}

bool sameLayerCount(const RunConfig& a, const RunConfig& b) { return a.model.layers.size() == b.model.layers.size(); }

} // namespace mantissa::ui
