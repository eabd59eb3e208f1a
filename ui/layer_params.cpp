#include "ui/layer_params.h"

#include "engine/model/layers/activation_layer.h"
#include "engine/util/format_number.h"
#include "ui/enum_combo.h"

#include <QRegularExpression>

namespace mantissa::ui {

QStringList layerTypeNames()
{
    return {"linear",  "conv2d",  "batchnorm", "relu",    "gelu",    "tanh",
            "sigmoid", "maxpool", "avgpool",   "dropout", "flatten", "residual"};
}

QStringList layerParamKeys(const std::string& type)
{
    if (type == "linear")
        return {"units", "activation", "bias", "inputs", "init"};
    if (type == "conv2d")
        return {"filters", "kernel", "stride", "padding", "activation", "bias", "init"};
    if (type == "maxpool" || type == "avgpool")
        return {"kernel", "stride", "padding"};
    if (type == "dropout")
        return {"rate"};
    if (type == "batchnorm")
        return {"epsilon", "momentum"};
    if (type == "residual")
        return {"shortcut"};
    return {};
}

namespace {

QString valueOf(const LayerSpec& l, const QString& key)
{
    auto number = [](double v) { return QString::fromStdString(formatNumber(v)); };
    if (key == "units")
        return QString::number(l.units);
    if (key == "inputs")
        return QString::number(l.inputs);
    if (key == "filters")
        return QString::number(l.filters);
    if (key == "kernel")
        return QString::number(l.kernel);
    if (key == "stride")
        return QString::number(l.stride);
    if (key == "padding")
        return QString::number(l.padding);
    if (key == "bias")
        return l.bias ? "true" : "false";
    if (key == "activation")
        return l.activation.empty() ? "none" : QString::fromStdString(l.activation);
    if (key == "rate")
        return number(l.rate);
    if (key == "epsilon")
        return number(l.epsilon);
    if (key == "momentum")
        return number(l.momentum);
    if (key == "init")
        return QString::fromStdString(l.init);
    if (key == "shortcut")
        return QString::fromStdString(l.shortcut);
    return {};
}

// Keys at their default are left out of the cell so that it shows what was chosen.
bool isWorthShowing(const LayerSpec& l, const QString& key)
{
    if (key == "bias")
        return !l.bias;
    if (key == "inputs")
        return l.inputs != 0;
    if (key == "init")
        return !l.init.empty();
    if (key == "activation")
        return !l.activation.empty();
    return true;
}

QString setValue(LayerSpec& l, const QString& key, const QString& value)
{
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
    if (key == "units")
        return integer(l.units, 1);
    if (key == "inputs")
        return integer(l.inputs, 0);
    if (key == "filters")
        return integer(l.filters, 1);
    if (key == "kernel")
        return integer(l.kernel, 1);
    if (key == "stride")
        return integer(l.stride, 1);
    if (key == "padding")
        return integer(l.padding, 0);
    if (key == "rate")
        return real(l.rate, 0, 0.99);
    if (key == "epsilon")
        return real(l.epsilon, 0, 1);
    if (key == "momentum")
        return real(l.momentum, 0, 1);
    if (key == "bias") {
        if (value != "true" && value != "false")
            return QObject::tr("bias must be true or false, got \"%1\"").arg(value);
        l.bias = value == "true";
        return {};
    }
    if (key == "activation") {
        const QStringList known = QStringList{"none"} + enumKeys<Activation>();
        if (!known.contains(value))
            return QObject::tr("activation must be one of %1, got \"%2\"").arg(known.join(", "), value);
        l.activation = value == "none" ? std::string() : value.toStdString();
        return {};
    }
    if (key == "init") {
        l.init = value.toStdString();
        return {};
    }
    if (key == "shortcut") {
        if (value != "identity" && value != "projection")
            return QObject::tr("shortcut must be identity or projection, got \"%1\"").arg(value);
        l.shortcut = value.toStdString();
        return {};
    }
    return QObject::tr("unknown key \"%1\"").arg(key);
}

} // namespace

QString formatLayerParams(const LayerSpec& layer)
{
    QStringList parts;
    for (const QString& key : layerParamKeys(layer.type))
        if (isWorthShowing(layer, key))
            parts << key + "=" + valueOf(layer, key);
    if (layer.type == "residual")
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
        if (!keys.contains(key)) {
            return keys.isEmpty() ? QObject::tr("a %1 layer has no parameters").arg(QString::fromStdString(layer.type))
                                  : QObject::tr("a %1 layer has no \"%2\"; it takes %3")
                                        .arg(QString::fromStdString(layer.type), key, keys.join(", "));
        }
        const QString error = setValue(edited, key, part.mid(eq + 1).trimmed());
        if (!error.isEmpty())
            return error;
    }
    layer = edited;
    return {};
}

LayerSpec defaultLayer(const std::string& type)
{
    LayerSpec layer;
    layer.type = type;
    if (type == "linear")
        layer.units = 128;
    if (type == "conv2d")
        layer.filters = 32;
    if (type == "maxpool" || type == "avgpool") {
        layer.kernel = 2;
        layer.stride = 2;
    }
    return layer;
}

} // namespace mantissa::ui
