#include "cli/config_summary.h"

#include "engine/config/distributed_summary.h"
#include "engine/config/run_config.h"

#include <exception>

namespace mantissa::cli {

namespace {

template <typename E>
QString key(E value)
{
    const std::string_view text = enumKey(value);
    return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

QString shape(const std::vector<std::int64_t>& dims)
{
    QStringList parts;
    for (std::int64_t d : dims)
        parts << QString::number(d);
    return parts.join(u'x');
}

QString layerText(const LayerSpec& layer)
{
    QString text = key(layer.type);
    switch (layer.type) {
    case LayerKind::Linear: text += QStringLiteral(" %1").arg(layer.units); break;
    case LayerKind::Conv2d: text += QStringLiteral(" %1 %2x%2").arg(layer.filters).arg(layer.kernel); break;
    case LayerKind::Residual: text += QStringLiteral("(%1 layers)").arg(layer.body.size()); break;
    case LayerKind::TokenEmbedding: text += QStringLiteral(" %1x%2").arg(layer.vocabulary).arg(layer.units); break;
    case LayerKind::PatchEmbedding: text += QStringLiteral(" %1 %2x%2").arg(layer.units).arg(layer.kernel); break;
    case LayerKind::Mlp: text += QStringLiteral(" %1").arg(layer.units); break;
    case LayerKind::Attention:
    case LayerKind::Transformer:
        text += QStringLiteral(" %1 heads%2%3")
                    .arg(layer.heads)
                    .arg(layer.causal ? QStringLiteral(" causal") : QString())
                    .arg(layer.softmax == InternalPrecision::Compute ? QStringLiteral(" softmax=compute") : QString());
        break;
    case LayerKind::LayerNorm:
    case LayerKind::RmsNorm:
    case LayerKind::PositionalEmbedding:
    // The others' fields are their defaults often enough that the one-line summary leaves them out.
    case LayerKind::BatchNorm:
    case LayerKind::Relu:
    case LayerKind::Gelu:
    case LayerKind::Tanh:
    case LayerKind::Sigmoid:
    case LayerKind::MaxPool:
    case LayerKind::AvgPool:
    case LayerKind::Dropout:
    case LayerKind::Flatten: break;
    }
    if (layer.activation)
        text +=
            u' ' + QString::fromUtf8(enumKey(*layer.activation).data(), qsizetype(enumKey(*layer.activation).size()));
    if (layer.precision != LayerPrecision::Auto)
        text += QStringLiteral(" [%1]").arg(key(layer.precision));
    return text;
}

QString modelText(const ModelSpec& model)
{
    QStringList layers;
    for (const LayerSpec& layer : model.layers)
        layers << layerText(layer);
    return QStringLiteral("%1 -> %2 -> %3 classes")
        .arg(shape(model.input), layers.join(QStringLiteral(", ")))
        .arg(model.classes);
}

QString dataText(const DataSpec& data)
{
    QString text = key(data.dataset);
    if (data.dataset == DatasetKind::Synthetic)
        text += QStringLiteral(" (%1 train, %2 test)").arg(data.syntheticTrain).arg(data.syntheticTest);
    if (data.limitTrain > 0 || data.limitTest > 0)
        text += QStringLiteral(", limited to %1 train, %2 test")
                    .arg(data.limitTrain > 0 ? QString::number(data.limitTrain) : QStringLiteral("all"))
                    .arg(data.limitTest > 0 ? QString::number(data.limitTest) : QStringLiteral("all"));
    if (data.validationSplit > 0)
        text += QStringLiteral(", validation split %1").arg(double(data.validationSplit));
    return text;
}

QString optimizerText(const OptimizerSpec& optimizer, const ScheduleSpec& schedule)
{
    QString text = QStringLiteral("%1 lr %2").arg(key(optimizer.type)).arg(double(optimizer.lr));
    if (optimizer.type == OptimizerKind::Sgd && optimizer.momentum > 0)
        text += QStringLiteral(" momentum %1%2")
                    .arg(double(optimizer.momentum))
                    .arg(optimizer.nesterov ? " (nesterov)" : "");
    if (optimizer.weightDecay > 0)
        text += QStringLiteral(" weight decay %1").arg(double(optimizer.weightDecay));
    if (optimizer.gradClipNorm > 0)
        text += QStringLiteral(" clip %1").arg(double(optimizer.gradClipNorm));
    if (schedule.type != ScheduleKind::Constant)
        text += QStringLiteral(", %1 schedule").arg(key(schedule.type));
    if (schedule.warmupSteps > 0)
        text += QStringLiteral(", %1 warm-up steps").arg(schedule.warmupSteps);
    return text;
}

QString precisionText(const RunConfig& config)
{
    QString text = key(config.precision) + QStringLiteral(", loss scaling ") + key(config.lossScale.type);
    const LossScaleType scaling = PrecisionPolicy(config.precision).resolveLossScale(config.lossScale.type);
    if (config.lossScale.type == LossScaleType::Auto)
        text += QStringLiteral(": %1").arg(key(scaling));
    if (scaling == LossScaleType::Static)
        text += QStringLiteral(" %1").arg(double(config.lossScale.value));
    else if (scaling == LossScaleType::Dynamic)
        text += QStringLiteral(" (initial %1, growth every %2 steps)")
                    .arg(double(config.lossScale.initial))
                    .arg(config.lossScale.growthInterval);
    return text;
}

QString trainingText(const TrainingSpec& training)
{
    QString text = QStringLiteral("batch %1, %2 epoch%3")
                       .arg(training.batchSize)
                       .arg(training.epochs)
                       .arg(training.epochs == 1 ? "" : "s");
    if (training.maxSteps > 0)
        text += QStringLiteral(", at most %1 steps").arg(training.maxSteps);
    text += QStringLiteral(", seed %1, device %2").arg(training.seed).arg(QString::fromStdString(training.device));
    return text;
}

} // namespace

QList<QPair<QString, QString>> summarizeConfig(const QString& configJson)
{
    try {
        const RunConfig config = parseRunConfig(configJson.toStdString(), "the stored config");
        QList<QPair<QString, QString>> lines{
            {QStringLiteral("model"), modelText(config.model)},
            {QStringLiteral("data"), dataText(config.data)},
            {QStringLiteral("optimizer"), optimizerText(config.optimizer, config.schedule)},
            {QStringLiteral("precision"), precisionText(config)},
            {QStringLiteral("training"), trainingText(config.training)},
        };
        if (config.distributed.worldSize > 1)
            lines.append(
                {QStringLiteral("distributed"), QString::fromStdString(describeDistributed(config.distributed))});
        return lines;
    } catch (const std::exception& error) {
        return {{QStringLiteral("config"), QStringLiteral("not readable by this build (%1); `show --config` prints it")
                                               .arg(QString::fromLocal8Bit(error.what()))}};
    }
}

} // namespace mantissa::cli
