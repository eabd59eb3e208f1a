#include "ui/layer_params.h"

#include "engine/config/config_field.h"
#include "engine/model/layers/activation_layer.h"
#include "ui/enum_combo.h"

#include <QRegularExpression>

namespace mantissa::ui {

QStringList layerParamKeys(LayerKind type)
{
    QStringList keys;
    for (LayerField field : layerFields(type))
        keys << fromView(layerSpecField(field).path);
    return keys;
}

QString formatLayerParams(const LayerSpec& layer) { return QString::fromStdString(layerParamsText(layer)); }

QString parseLayerParams(const QString& text, LayerSpec& layer)
{
    const QStringList keys = layerParamKeys(layer.type);
    LayerSpec edited = layer;
    static const QRegularExpression separators("[,;\\s]+");
    for (const QString& part : text.split(separators, Qt::SkipEmptyParts)) {
        if (part.endsWith("layer") || part.endsWith("layers") || part.at(0).isDigit())
            continue; // the residual body count is informative only
        const qsizetype eq = part.indexOf('=');
        if (eq <= 0)
            return QObject::tr("\"%1\" is not key=value").arg(part);
        const QString key = part.left(eq).trimmed();
        const auto field = parseLayerField(key.toStdString());
        if (!field || !layerTakesField(layer.type, *field)) {
            const QString type = fromView(enumKey(layer.type));
            return keys.isEmpty()
                       ? QObject::tr("a %1 layer has no parameters").arg(type)
                       : QObject::tr("a %1 layer has no \"%2\"; it takes %3").arg(type, key, keys.join(", "));
        }
        try {
            layerSpecField(*field).setText(edited, part.mid(eq + 1).trimmed().toStdString(), key.toStdString());
        } catch (const ConfigError& error) {
            return QString::fromStdString(error.what());
        }
    }
    layer = edited;
    return {};
}

LayerSpec defaultLayer(LayerKind type)
{
    LayerSpec layer;
    layer.type = type;
    switch (type) {
    case LayerKind::Linear: layer.units = 128; break;
    case LayerKind::Conv2d: layer.filters = 32; break;
    case LayerKind::MaxPool:
    case LayerKind::AvgPool:
        layer.kernel = 2;
        layer.stride = 2;
        break;
    case LayerKind::BatchNorm:
    case LayerKind::Relu:
    case LayerKind::Gelu:
    case LayerKind::Tanh:
    case LayerKind::Sigmoid:
    case LayerKind::Dropout:
    case LayerKind::Flatten:
    case LayerKind::Residual:
    case LayerKind::LayerNorm:
    case LayerKind::RmsNorm:
    case LayerKind::PositionalEmbedding: break; // the spec's defaults
    case LayerKind::TokenEmbedding:
        layer.vocabulary = 256; // bytes
        layer.units = 128;
        break;
    case LayerKind::PatchEmbedding:
        layer.units = 64;
        layer.kernel = 7;
        break;
    case LayerKind::Mlp: layer.units = 512; break;
    case LayerKind::Attention:
    case LayerKind::Transformer: layer.heads = 4; break;
    }
    return layer;
}

} // namespace mantissa::ui
