#include "cli/config_summary.h"

#include "engine/config/config_field.h"
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

QString modelText(const ModelSpec& model)
{
    if (!model.onnx.empty())
        return QStringLiteral("%1 -> ONNX model %2 -> %3 classes")
            .arg(shape(model.input), QString::fromStdString(model.onnx))
            .arg(model.classes);
    QStringList layers;
    for (const LayerSpec& layer : model.layers)
        layers << QString::fromStdString(layerSummary(layer));
    return QStringLiteral("%1 -> %2 -> %3 classes")
        .arg(shape(model.input), layers.join(QStringLiteral(", ")))
        .arg(model.classes);
}

QString dataText(const DataSpec& data)
{
    QString text = key(data.dataset);
    if (data.dataset == DatasetKind::Synthetic)
        text += QStringLiteral(" (%1 train, %2 test)").arg(data.syntheticTrain).arg(data.syntheticTest);
    if (data.dataset == DatasetKind::Files)
        text += QStringLiteral(" %1 (%2)").arg(QString::fromStdString(data.path), key(data.format));
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
