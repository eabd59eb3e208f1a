#include "ui/config_document.h"

#include "engine/data/text_corpus.h"
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
    if (!m_report.valid())
        return QString::fromStdString(m_report.error);
    const TrainingSpec& t = m_config.training;
    if (t.batchSize <= 0)
        return tr("training.batch_size must be positive");
    if (t.epochs <= 0 && t.maxSteps <= 0)
        return tr("set a number of epochs or a maximum number of steps");
    // The model's input must match the data it trains on; synthetic data carries its own shape.
    if (m_config.data.dataset == DatasetKind::Synthetic) {
        if (m_config.data.syntheticShape != m_config.model.input)
            return tr("data.synthetic_shape differs from model.input; set both to the same shape");
    } else if (m_config.data.dataset == DatasetKind::Text) {
        // A byte-level language model: a window of data.context byte ids in, a byte out per position.
        if (m_config.model.input != std::vector<std::int64_t>{m_config.data.context} ||
            m_config.model.classes != kByteVocabulary)
            return tr("text data gives windows of data.context = %1 bytes in 256 classes; set model.input to "
                      "[%1] and classes to 256")
                .arg(m_config.data.context);
    } else if (m_config.model.input != std::vector<std::int64_t>{1, 28, 28} || m_config.model.classes != 10) {
        return tr("%1 has 1x28x28 images in 10 classes; set model.input to [1, 28, 28] and classes to 10")
            .arg(QString::fromStdString(std::string(enumKey(m_config.data.dataset))));
    }
    return {};
}

bool sameLayerCount(const RunConfig& a, const RunConfig& b) { return a.model.layers.size() == b.model.layers.size(); }

} // namespace mantissa::ui
