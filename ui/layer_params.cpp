#include "ui/layer_params.h"

#include "engine/model/layers/activation_layer.h"
#include "engine/util/format_number.h"
#include "ui/enum_combo.h"

#include <QRegularExpression>

#include <type_traits>

namespace mantissa::ui {

QStringList layerParamKeys(LayerKind type)
{
    QStringList keys;
    for (LayerField field : layerFields(type))
        keys << fromView(enumKey(field));
    return keys;
}

namespace {

QString valueOf(const LayerSpec& l, LayerField field)
{
    auto number = [](double v) { return QString::fromStdString(formatNumber(v)); };
    switch (field) {
    case LayerField::Units: return QString::number(l.units);
    case LayerField::Inputs: return QString::number(l.inputs);
    case LayerField::Filters: return QString::number(l.filters);
    case LayerField::Kernel: return QString::number(l.kernel);
    case LayerField::Stride: return QString::number(l.stride);
    case LayerField::Padding: return QString::number(l.padding);
    case LayerField::Bias: return l.bias ? "true" : "false";
    case LayerField::Activation: return l.activation ? fromView(enumKey(*l.activation)) : QStringLiteral("none");
    case LayerField::Rate: return number(l.rate);
    case LayerField::Epsilon: return number(l.epsilon);
    case LayerField::Momentum: return number(l.momentum);
    case LayerField::Init: return QString::fromStdString(l.init);
    case LayerField::Shortcut: return fromView(enumKey(l.shortcut));
    case LayerField::Vocabulary: return QString::number(l.vocabulary);
    case LayerField::Heads: return QString::number(l.heads);
    case LayerField::Length: return QString::number(l.length);
    case LayerField::Causal: return l.causal ? "true" : "false";
    case LayerField::Norm: return fromView(enumKey(l.norm));
    case LayerField::Softmax: return fromView(enumKey(l.softmax));
    case LayerField::Statistics: return fromView(enumKey(l.statistics));
    case LayerField::AttentionDropout: return number(l.attentionDropout);
    case LayerField::Tied: return l.tied ? "true" : "false";
    }
    return {};
}

// Keys at their default are left out of the cell so that it shows what was chosen.
bool isWorthShowing(const LayerSpec& l, LayerField field)
{
    switch (field) {
    case LayerField::Bias: return !l.bias;
    case LayerField::Inputs: return l.inputs != 0;
    case LayerField::Init: return !l.init.empty();
    case LayerField::Activation: return l.activation.has_value();
    case LayerField::Tied: return l.tied;
    case LayerField::Softmax: return l.softmax != InternalPrecision::Fp32;
    case LayerField::Statistics: return l.statistics != InternalPrecision::Fp32;
    case LayerField::AttentionDropout: return l.attentionDropout != 0.0f;
    default: return true; // the fields that define the layer, shown even at their default
    }
}

QString setValue(LayerSpec& l, LayerField field, const QString& value)
{
    const QString key = fromView(enumKey(field));
    bool ok = false;
    auto integer = [&](std::int64_t& target, std::int64_t minimum) -> QString {
        const qlonglong v = value.toLongLong(&ok);
        if (!ok || v < minimum)
            return QObject::tr("%1 must be an integer of at least %2, got \"%3\"").arg(key).arg(minimum).arg(value);
        target = v;
        return {};
    };
    auto real = [&](float& target, double minimum, double maximum) -> QString {
        const double v = value.toDouble(&ok);
        if (!ok || v < minimum || v > maximum)
            return QObject::tr("%1 must be a number in [%2, %3], got \"%4\"")
                .arg(key)
                .arg(minimum)
                .arg(maximum)
                .arg(value);
        target = static_cast<float>(v);
        return {};
    };
    auto boolean = [&](bool& target) -> QString {
        if (value != "true" && value != "false")
            return QObject::tr("%1 must be true or false, got \"%2\"").arg(key, value);
        target = value == "true";
        return {};
    };
    auto choice = [&](auto& target) -> QString {
        using E = std::remove_reference_t<decltype(target)>;
        const auto parsed = parseEnum<E>(value.toStdString());
        if (!parsed)
            return QObject::tr("%1 must be %2, got \"%3\"").arg(key, QString::fromStdString(enumKeyList<E>()), value);
        target = *parsed;
        return {};
    };
    switch (field) {
    case LayerField::Units: return integer(l.units, 1);
    case LayerField::Inputs: return integer(l.inputs, 0);
    case LayerField::Filters: return integer(l.filters, 1);
    case LayerField::Kernel: return integer(l.kernel, 1);
    case LayerField::Stride: return integer(l.stride, 1);
    case LayerField::Padding: return integer(l.padding, 0);
    case LayerField::Rate: return real(l.rate, 0, 0.99);
    case LayerField::Epsilon: return real(l.epsilon, 0, 1);
    case LayerField::Momentum: return real(l.momentum, 0, 1);
    case LayerField::Bias: return boolean(l.bias);
    case LayerField::Causal: return boolean(l.causal);
    case LayerField::Tied: return boolean(l.tied);
    case LayerField::Vocabulary: return integer(l.vocabulary, 1);
    case LayerField::Heads: return integer(l.heads, 1);
    case LayerField::Length: return integer(l.length, 0);
    case LayerField::AttentionDropout: return real(l.attentionDropout, 0, 0.99);
    case LayerField::Norm: return choice(l.norm);
    case LayerField::Softmax: return choice(l.softmax);
    case LayerField::Statistics: return choice(l.statistics);
    case LayerField::Activation: {
        const QStringList known = QStringList{"none"} + enumKeys<Activation>();
        if (!known.contains(value))
            return QObject::tr("activation must be one of %1, got \"%2\"").arg(known.join(", "), value);
        l.activation = value == "none" ? std::nullopt : parseEnum<Activation>(value.toStdString());
        return {};
    }
    case LayerField::Init: l.init = value.toStdString(); return {};
    case LayerField::Shortcut: {
        const auto shortcut = parseEnum<ShortcutKind>(value.toStdString());
        if (!shortcut)
            return QObject::tr("shortcut must be %1, got \"%2\"")
                .arg(QString::fromStdString(enumKeyList<ShortcutKind>()), value);
        l.shortcut = *shortcut;
        return {};
    }
    }
    return QObject::tr("unknown key \"%1\"").arg(key);
}

} // namespace

QString formatLayerParams(const LayerSpec& layer)
{
    QStringList parts;
    for (LayerField field : layerFields(layer.type))
        if (isWorthShowing(layer, field))
            parts << fromView(enumKey(field)) + "=" + valueOf(layer, field);
    if (layer.type == LayerKind::Residual)
        parts << QObject::tr("%n layer(s)", nullptr, static_cast<int>(layer.body.size()));
    return parts.join(", ");
}

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
        const auto field = parseEnum<LayerField>(key.toStdString());
        if (!field || !layerTakesField(layer.type, *field)) {
            const QString type = fromView(enumKey(layer.type));
            return keys.isEmpty()
                       ? QObject::tr("a %1 layer has no parameters").arg(type)
                       : QObject::tr("a %1 layer has no \"%2\"; it takes %3").arg(type, key, keys.join(", "));
        }
        const QString error = setValue(edited, *field, part.mid(eq + 1).trimmed());
        if (!error.isEmpty())
            return error;
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
