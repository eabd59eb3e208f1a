#include "engine/config/layer_kind.h"

#include <algorithm>
#include <array>

namespace mantissa {

namespace {

constexpr std::array kLayerKinds{
    EnumEntry<LayerKind>{LayerKind::Linear, "linear", "Linear", "Fully connected: every output sees every input."},
    EnumEntry<LayerKind>{LayerKind::Conv2d, "conv2d", "Convolution 2D", "A bank of filters slid over an image."},
    EnumEntry<LayerKind>{LayerKind::BatchNorm, "batchnorm", "Batch norm",
                         "Normalises each channel over the batch; its statistics stay fp32."},
    EnumEntry<LayerKind>{LayerKind::Relu, "relu", "ReLU", "max(0, x)."},
    EnumEntry<LayerKind>{LayerKind::Gelu, "gelu", "GELU", "x times the normal CDF of x (the exact erf form)."},
    EnumEntry<LayerKind>{LayerKind::Tanh, "tanh", "tanh", "Hyperbolic tangent."},
    EnumEntry<LayerKind>{LayerKind::Sigmoid, "sigmoid", "sigmoid", "1 / (1 + e^-x)."},
    EnumEntry<LayerKind>{LayerKind::MaxPool, "maxpool", "Max pool", "The largest value of each window."},
    EnumEntry<LayerKind>{LayerKind::AvgPool, "avgpool", "Average pool", "The mean of each window."},
    EnumEntry<LayerKind>{LayerKind::Dropout, "dropout", "Dropout",
                         "Zeroes each value with probability rate while training."},
    EnumEntry<LayerKind>{LayerKind::Flatten, "flatten", "Flatten", "Turns an image into a vector of features."},
    EnumEntry<LayerKind>{LayerKind::Residual, "residual", "Residual block",
                         "Adds the block's input (through its shortcut) to the output of its layers."},
    EnumEntry<LayerKind>{LayerKind::LayerNorm, "layernorm", "Layer norm",
                         "Normalises each token's features to zero mean and unit variance, with a gain and a bias."},
    EnumEntry<LayerKind>{LayerKind::RmsNorm, "rmsnorm", "RMS norm",
                         "Divides each token's features by their root mean square, with a gain."},
    EnumEntry<LayerKind>{LayerKind::TokenEmbedding, "token_embedding", "Token embedding",
                         "Turns token ids [tokens] into learned vectors [tokens, units]."},
    EnumEntry<LayerKind>{LayerKind::PositionalEmbedding, "positional_embedding", "Positional embedding",
                         "Adds a learned vector for each position of the sequence."},
    EnumEntry<LayerKind>{LayerKind::PatchEmbedding, "patch_embedding", "Patch embedding",
                         "Cuts an image into kernel x kernel patches and projects each to a token of units features."},
    EnumEntry<LayerKind>{LayerKind::Attention, "attention", "Self-attention",
                         "Multi-head scaled dot-product self-attention over the tokens, causal or not."},
    EnumEntry<LayerKind>{LayerKind::Mlp, "mlp", "MLP block",
                         "Linear to units features, GELU, linear back to the input's width."},
    EnumEntry<LayerKind>{LayerKind::Transformer, "transformer", "Transformer block",
                         "Pre-norm block: x + attention(norm(x)), then x + mlp(norm(x))."},
};

constexpr std::array kShortcutKinds{
    EnumEntry<ShortcutKind>{ShortcutKind::Identity, "identity", "identity",
                            "Adds the input as it is; the layers must keep its shape."},
    EnumEntry<ShortcutKind>{ShortcutKind::Projection, "projection", "projection",
                            "Maps the input to the layers' output shape by a strided 1x1 convolution or a linear."},
};

constexpr std::array kNormKinds{
    EnumEntry<NormKind>{NormKind::LayerNorm, "layernorm", "layer norm", "Mean and variance, gain and bias."},
    EnumEntry<NormKind>{NormKind::RmsNorm, "rmsnorm", "RMS norm", "Root mean square and gain."},
};

constexpr std::array kInternalPrecisions{
    EnumEntry<InternalPrecision>{InternalPrecision::Fp32, "fp32", "fp32", "In fp32 whatever the compute dtype."},
    EnumEntry<InternalPrecision>{InternalPrecision::Compute, "compute", "compute dtype",
                                 "In the layer's compute dtype, every step rounded: to show what goes wrong."},
};

constexpr std::array kLinearFields{LayerField::Units,  LayerField::Activation, LayerField::Bias,
                                   LayerField::Inputs, LayerField::Init,       LayerField::Tied};
constexpr std::array kConvFields{LayerField::Filters,    LayerField::Kernel, LayerField::Stride, LayerField::Padding,
                                 LayerField::Activation, LayerField::Bias,   LayerField::Init};
constexpr std::array kBatchNormFields{LayerField::Epsilon, LayerField::Momentum};
constexpr std::array kPoolFields{LayerField::Kernel, LayerField::Stride, LayerField::Padding};
constexpr std::array kDropoutFields{LayerField::Rate};
constexpr std::array kResidualFields{LayerField::Shortcut};
constexpr std::array kLayerNormFields{LayerField::Epsilon, LayerField::Bias, LayerField::Statistics};
constexpr std::array kRmsNormFields{LayerField::Epsilon, LayerField::Statistics};
constexpr std::array kTokenEmbeddingFields{LayerField::Vocabulary, LayerField::Units, LayerField::Init};
constexpr std::array kPositionalEmbeddingFields{LayerField::Length, LayerField::Init};
constexpr std::array kPatchEmbeddingFields{LayerField::Units, LayerField::Kernel, LayerField::Bias, LayerField::Init};
constexpr std::array kAttentionFields{LayerField::Heads, LayerField::Causal, LayerField::Softmax,
                                      LayerField::AttentionDropout, LayerField::Bias};
constexpr std::array kMlpFields{LayerField::Units, LayerField::Bias};
constexpr std::array kTransformerFields{LayerField::Heads,   LayerField::Units,           LayerField::Causal,
                                        LayerField::Norm,    LayerField::Softmax,         LayerField::Statistics,
                                        LayerField::Epsilon, LayerField::AttentionDropout};

} // namespace

template <>
std::span<const EnumEntry<LayerKind>> enumEntries<LayerKind>()
{
    return kLayerKinds;
}

template <>
std::span<const EnumEntry<ShortcutKind>> enumEntries<ShortcutKind>()
{
    return kShortcutKinds;
}

template <>
std::span<const EnumEntry<NormKind>> enumEntries<NormKind>()
{
    return kNormKinds;
}

template <>
std::span<const EnumEntry<InternalPrecision>> enumEntries<InternalPrecision>()
{
    return kInternalPrecisions;
}

std::span<const LayerField> layerFields(LayerKind kind)
{
    switch (kind) {
    case LayerKind::Linear: return kLinearFields;
    case LayerKind::Conv2d: return kConvFields;
    case LayerKind::BatchNorm: return kBatchNormFields;
    case LayerKind::MaxPool:
    case LayerKind::AvgPool: return kPoolFields;
    case LayerKind::Dropout: return kDropoutFields;
    case LayerKind::Residual: return kResidualFields;
    case LayerKind::LayerNorm: return kLayerNormFields;
    case LayerKind::RmsNorm: return kRmsNormFields;
    case LayerKind::TokenEmbedding: return kTokenEmbeddingFields;
    case LayerKind::PositionalEmbedding: return kPositionalEmbeddingFields;
    case LayerKind::PatchEmbedding: return kPatchEmbeddingFields;
    case LayerKind::Attention: return kAttentionFields;
    case LayerKind::Mlp: return kMlpFields;
    case LayerKind::Transformer: return kTransformerFields;
    case LayerKind::Relu:
    case LayerKind::Gelu:
    case LayerKind::Tanh:
    case LayerKind::Sigmoid:
    case LayerKind::Flatten: return {};
    }
    assertionFailed("LayerKind missing from layerFields", __FILE__, __LINE__);
}

bool layerTakesField(LayerKind kind, LayerField field)
{
    const auto fields = layerFields(kind);
    return std::find(fields.begin(), fields.end(), field) != fields.end();
}

} // namespace mantissa
