// A layer's fields, one row each (config_field.h), in LayerField's order, then "precision".
// Which kinds take which field is layer_kind.cpp's; a row's `applies` asks it where the writer
// puts a field only into the layers that take it.
#include "engine/config/field_value_types.h"
#include "engine/config/run_config.h"

#include <array>

namespace mantissa {

namespace {

template <LayerField F>
bool takes(const LayerSpec& layer)
{
    return layerTakesField(layer.type, F);
}

using L = LayerSpec;
constexpr double kMaxWidth = 1 << 24;

// Written only where set: "units", "inputs" and "filters" mean nothing at 0, "bias" and "tied"
// only when they differ from a plain layer, so that every layer stays short.
const std::array kLayerFields{
    row<&L::units>({.path = "units",
                    .label = "units",
                    .description = "Output features of a linear or embedding; an MLP's hidden width (0 in a "
                                   "transformer: 4 x width).",
                    .minimum = 0,
                    .maximum = kMaxWidth,
                    .write = WriteRule::UnlessDefault}),
    row<&L::inputs>({.path = "inputs",
                     .label = "inputs",
                     .description = "Input features a linear expects (0 = whatever arrives); catches shape drift.",
                     .minimum = 0,
                     .maximum = kMaxWidth,
                     .write = WriteRule::UnlessDefault,
                     .shown = WriteRule::UnlessDefault}),
    row<&L::filters>({.path = "filters",
                      .label = "filters",
                      .description = "Output channels of a convolution.",
                      .minimum = 0,
                      .maximum = 65536,
                      .write = WriteRule::UnlessDefault}),
    row<&L::kernel>({.path = "kernel",
                     .label = "kernel",
                     .description = "Window size of a convolution or a pool; a patch embedding's patch size.",
                     .minimum = 1,
                     .maximum = 1024,
                     .applies = takes<LayerField::Kernel>}),
    row<&L::stride>({.path = "stride",
                     .label = "stride",
                     .description = "Window step; 0 = 1 for a convolution, the kernel for a pool.",
                     .minimum = 0,
                     .maximum = 1024,
                     .write = WriteRule::UnlessDefault,
                     .applies = takes<LayerField::Stride>}),
    row<&L::padding>({.path = "padding",
                      .label = "padding",
                      .description = "Zeros added on each side of the image.",
                      .minimum = 0,
                      .maximum = 1024,
                      .applies = takes<LayerField::Padding>}),
    row<&L::bias>({.path = "bias",
                   .label = "bias",
                   .description = "Whether a linear, convolution, norm or projection adds a bias.",
                   .write = WriteRule::UnlessDefault,
                   .shown = WriteRule::UnlessDefault}),
    row<&L::activation>({.path = "activation",
                         .label = "activation",
                         .description = "An activation fused after a linear or convolution.",
                         .write = WriteRule::UnlessDefault,
                         .shown = WriteRule::UnlessDefault}),
    row<&L::rate>({.path = "rate",
                   .label = "rate",
                   .description = "The probability that dropout zeroes a value.",
                   .minimum = 0,
                   .maximum = 0.99,
                   .applies = takes<LayerField::Rate>}),
    row<&L::epsilon>({.path = "epsilon",
                      .label = "epsilon",
                      .description = "Added to a norm's variance.",
                      .minimum = 0,
                      .maximum = 1,
                      .applies = takes<LayerField::Epsilon>}),
    row<&L::momentum>({.path = "momentum",
                       .label = "momentum",
                       .description = "Update rate of a batch norm's running statistics.",
                       .minimum = 0,
                       .maximum = 1,
                       .applies = takes<LayerField::Momentum>}),
    row<&L::init>({.path = "init",
                   .label = "init",
                   .description = "Weight initialisation: \"\" (by activation), normal:STD, uniform:A, zeros, ones.",
                   .write = WriteRule::UnlessDefault,
                   .shown = WriteRule::UnlessDefault}),
    row<&L::shortcut>({.path = "shortcut",
                       .label = "shortcut",
                       .description = "How a residual block adds its input back.",
                       .applies = takes<LayerField::Shortcut>}),
    row<&L::vocabulary>({.path = "vocabulary",
                         .label = "vocabulary",
                         .description = "Token ids a token embedding knows: 0 to vocabulary - 1.",
                         .minimum = 0,
                         .maximum = kMaxWidth,
                         .applies = takes<LayerField::Vocabulary>}),
    row<&L::heads>({.path = "heads",
                    .label = "heads",
                    .description = "Attention heads; they must divide the width.",
                    .minimum = 1,
                    .maximum = 4096,
                    .applies = takes<LayerField::Heads>}),
    row<&L::length>({.path = "length",
                     .label = "length",
                     .unit = "tokens",
                     .description = "Positions a positional embedding holds (0 = the input's sequence length).",
                     .minimum = 0,
                     .maximum = 1 << 20,
                     .applies = takes<LayerField::Length>}),
    row<&L::causal>({.path = "causal",
                     .label = "causal",
                     .description = "Whether each token attends only to itself and the tokens before it.",
                     .applies = takes<LayerField::Causal>}),
    row<&L::norm>({.path = "norm",
                   .label = "norm",
                   .description = "The normalisation of a transformer block.",
                   .applies = takes<LayerField::Norm>}),
    row<&L::softmax>({.path = "softmax",
                      .label = "softmax",
                      .description = "Where attention scores and their softmax live: fp32, or the compute dtype.",
                      .shown = WriteRule::UnlessDefault,
                      .applies = takes<LayerField::Softmax>}),
    row<&L::statistics>({.path = "statistics",
                         .label = "statistics",
                         .description = "Where a norm computes mean and variance: fp32, or the compute dtype.",
                         .shown = WriteRule::UnlessDefault,
                         .applies = takes<LayerField::Statistics>}),
    row<&L::attentionDropout>({.path = "attention_dropout",
                               .label = "attention dropout",
                               .description = "The probability that attention drops a weight while training.",
                               .minimum = 0,
                               .maximum = 0.99,
                               .shown = WriteRule::UnlessDefault,
                               .applies = takes<LayerField::AttentionDropout>}),
    row<&L::tied>({.path = "tied",
                   .label = "tied",
                   .description = "A linear output head that shares the token embedding's table as its weight.",
                   .write = WriteRule::UnlessDefault,
                   .shown = WriteRule::UnlessDefault}),
    row<&L::precision>({.path = "precision",
                        .label = "precision",
                        .description = "The layer's format: a compute type (fp32, fp16, bf16) or a recipe whose "
                                       "quantisation its GEMMs take (fp8-hybrid ... nvfp4), for every operand role, "
                                       "or {\"inputs\", \"weights\", \"gradients\"} each its own; auto follows the "
                                       "run's mode (or the enclosing block's).",
                        .write = WriteRule::UnlessDefault}),
};

static_assert(kLayerFields.size() == static_cast<std::size_t>(LayerField::Tied) + 2,
              "one row per LayerField, in its order, then precision");

} // namespace

std::span<const LayerSpecField> layerSpecFields() { return kLayerFields; }

const LayerSpecField* findLayerSpecField(std::string_view key)
{
    for (const LayerSpecField& field : kLayerFields)
        if (field.path == key)
            return &field;
    return nullptr;
}

const LayerSpecField& layerSpecField(LayerField field) { return kLayerFields[static_cast<std::size_t>(field)]; }

std::string layerParamsText(const LayerSpec& layer)
{
    std::string text;
    for (LayerField kindField : layerFields(layer.type)) {
        const LayerSpecField& field = layerSpecField(kindField);
        if (field.shown == WriteRule::Always || !field.isDefault(layer))
            text += (text.empty() ? "" : ", ") + std::string(field.path) + "=" + field.text(layer);
    }
    if (layer.type == LayerKind::Residual)
        text += (text.empty() ? "" : ", ") + std::to_string(layer.body.size()) +
                (layer.body.size() == 1 ? " layer" : " layers");
    return text;
}

std::string layerSummary(const LayerSpec& layer)
{
    std::string text(enumKey(layer.type));
    if (const std::string params = layerParamsText(layer); !params.empty())
        text += " " + params;
    if (!layer.precision.isAuto())
        text += " [" + layerFormatText(layer.precision) + "]";
    return text;
}

std::optional<LayerField> parseLayerField(std::string_view key)
{
    for (std::size_t i = 0; i + 1 < kLayerFields.size(); ++i)
        if (kLayerFields[i].path == key)
            return static_cast<LayerField>(i);
    return std::nullopt;
}

} // namespace mantissa
