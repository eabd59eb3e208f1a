#pragma once
// The kinds of layer a model lists (a layer's "type") and the kinds of a residual block's
// shortcut, with their tables of keys, display names and descriptions (engine/util/enum_table.h),
// which the parser, the layer factory, the UI's model editor, the CLI, reports and
// docs/config.md all follow (issue 15: they compared strings and listed the types by hand).
//
// Adding a kind of layer: its enumerator here, its table entry and its fields in layer_kind.cpp,
// and its case in every switch over LayerKind, which the compiler points out (they have no
// default for that reason): the layer factory, the editor's defaults, the summaries.
#include "engine/util/enum_table.h"

#include <cstdint>
#include <span>
#include <string_view>

namespace mantissa {

enum class LayerKind : std::uint8_t {
    Linear,
    Conv2d,
    BatchNorm,
    Relu,
    Gelu,
    Tanh,
    Sigmoid,
    MaxPool,
    AvgPool,
    Dropout,
    Flatten,
    Residual,
    LayerNorm,
    RmsNorm,
    TokenEmbedding,
    PositionalEmbedding,
    PatchEmbedding,
    Attention,
    Mlp,
    Transformer,
};

enum class ShortcutKind : std::uint8_t { Identity, Projection }; // model.layers[].shortcut of a residual
// model.layers[].norm of a transformer block: which normalisation its two norms are.
enum class NormKind : std::uint8_t { LayerNorm, RmsNorm };
// Where a layer's internal reduction runs (a norm's "statistics", attention's "softmax"): fp32,
// as everyone does, or the layer's compute dtype, to reproduce what goes wrong when it does not.
enum class InternalPrecision : std::uint8_t { Fp32, Compute };

template <>
std::span<const EnumEntry<LayerKind>> enumEntries<LayerKind>();
template <>
std::span<const EnumEntry<ShortcutKind>> enumEntries<ShortcutKind>();
template <>
std::span<const EnumEntry<NormKind>> enumEntries<NormKind>();
template <>
std::span<const EnumEntry<InternalPrecision>> enumEntries<InternalPrecision>();

// The fields of a layer spec that only some kinds take; their keys, ranges and descriptions are
// the rows of config_field.h's layerSpecFields(), in this order.
enum class LayerField : std::uint8_t {
    Units,
    Inputs,
    Filters,
    Kernel,
    Stride,
    Padding,
    Bias,
    Activation,
    Rate,
    Epsilon,
    Momentum,
    Init,
    Shortcut,
    Vocabulary,
    Heads,
    Length,
    Causal,
    Norm,
    Softmax,
    Statistics,
    AttentionDropout,
    Tied,
};

// The fields a layer of `kind` takes, in the order the model editor shows them: units,
// activation, bias, inputs, init for a linear; none for an activation or a flatten. (Every
// kind also takes "type" and "precision", and a residual its "layers".)
std::span<const LayerField> layerFields(LayerKind kind);
bool layerTakesField(LayerKind kind, LayerField field);

} // namespace mantissa
