#include "engine/model/transformer_factory.h"

#include "engine/model/layers/attention.h"
#include "engine/model/layers/mlp.h"
#include "engine/model/layers/patch_embedding.h"
#include "engine/model/layers/positional_embedding.h"
#include "engine/model/layers/row_norm.h"
#include "engine/model/layers/token_embedding.h"
#include "engine/model/layers/transformer_block.h"
#include "engine/util/format_number.h"

namespace mantissa {

namespace {

std::string number(std::int64_t v) { return std::to_string(v); }

// [tokens, features]: what attention, positions and transformer blocks take.
void requireTokens(const Shape& in)
{
    if (in.rank() != 2)
        throw ConfigError("expects tokens [tokens, features] but receives " + in.toString() +
                          "; start the model with a token_embedding (token ids) or a patch_embedding (images)");
}

// [features] or [tokens, features]: what norms and MLPs take.
void requireFeatures(const Shape& in)
{
    if (in.rank() != 1 && in.rank() != 2)
        throw ConfigError("expects [features] or [tokens, features] but receives " + in.toString());
}

void checkEpsilon(const LayerSpec& spec)
{
    if (!(spec.epsilon > 0.0f))
        throw ConfigError("epsilon must be positive (got " + formatNumber(spec.epsilon) + ")");
}

void checkHeads(const LayerSpec& spec, std::int64_t width)
{
    if (spec.heads <= 0)
        throw ConfigError("heads must be positive (got " + number(spec.heads) + ")");
    if (width % spec.heads != 0)
        throw ConfigError("heads " + number(spec.heads) + " do not divide the width " + number(width) +
                          "; each head takes width / heads features, so use a divisor of " + number(width));
    if (!(spec.attentionDropout >= 0.0f && spec.attentionDropout < 1.0f))
        throw ConfigError("attention_dropout must be in [0, 1) (got " + formatNumber(spec.attentionDropout) + ")");
}

std::int64_t tokensOf(const Shape& in) { return in.rank() == 2 ? in[0] : 1; }

RowNormKind rowNormKind(LayerKind kind)
{
    return kind == LayerKind::RmsNorm ? RowNormKind::RmsNorm : RowNormKind::LayerNorm;
}

} // namespace

LayerPtr createRowNorm(const LayerSpec& spec, const Shape& in)
{
    requireFeatures(in);
    checkEpsilon(spec);
    return std::make_unique<RowNorm>(rowNormKind(spec.type), in.dims().back(), in.numel(), spec.epsilon, spec.bias,
                                     spec.statistics);
}

LayerPtr createTokenEmbedding(const LayerSpec& spec, const Shape& in)
{
    if (in.rank() != 1)
        throw ConfigError("expects token ids [tokens] but receives " + in.toString() +
                          "; a token embedding comes first, on a model.input of [sequence length]");
    if (spec.vocabulary <= 0)
        throw ConfigError("vocabulary must be positive (got " + number(spec.vocabulary) +
                          "); it is the number of distinct token ids, 256 for bytes");
    if (spec.units <= 0)
        throw ConfigError("units (the embedding width) must be positive (got " + number(spec.units) + ")");
    return std::make_unique<TokenEmbedding>(spec.vocabulary, spec.units, spec.init);
}

LayerPtr createPositionalEmbedding(const LayerSpec& spec, const Shape& in)
{
    requireTokens(in);
    if (spec.length < 0)
        throw ConfigError("length must not be negative (got " + number(spec.length) +
                          "); 0 sizes the table to the sequence");
    const std::int64_t length = spec.length == 0 ? in[0] : spec.length;
    if (in[0] > length)
        throw ConfigError("receives sequences of " + number(in[0]) + " tokens but its table holds " + number(length) +
                          " positions; raise \"length\" to at least " + number(in[0]));
    return std::make_unique<PositionalEmbedding>(length, in[0], in[1], spec.init);
}

LayerPtr createPatchEmbedding(const LayerSpec& spec, const Shape& in)
{
    if (in.rank() != 3)
        throw ConfigError("expects an image [channels, height, width] but receives " + in.toString());
    if (spec.units <= 0)
        throw ConfigError("units (the token width) must be positive (got " + number(spec.units) + ")");
    if (spec.kernel <= 0)
        throw ConfigError("kernel (the patch size) must be positive (got " + number(spec.kernel) + ")");
    if (in[1] % spec.kernel != 0 || in[2] % spec.kernel != 0)
        throw ConfigError("patches of " + number(spec.kernel) + "x" + number(spec.kernel) + " do not tile a " +
                          number(in[1]) + "x" + number(in[2]) + " image; use a kernel that divides both extents");
    return std::make_unique<PatchEmbedding>(in, spec.units, spec.kernel, spec.bias, spec.init);
}

LayerPtr createAttention(const LayerSpec& spec, const Shape& in)
{
    requireTokens(in);
    checkHeads(spec, in[1]);
    return std::make_unique<Attention>(in[1], spec.heads, in[0], spec.causal, spec.softmax, spec.attentionDropout,
                                       spec.bias);
}

LayerPtr createMlp(const LayerSpec& spec, const Shape& in)
{
    requireFeatures(in);
    if (spec.units <= 0)
        throw ConfigError("units (the hidden width) must be positive (got " + number(spec.units) + ")");
    return std::make_unique<Mlp>(in.dims().back(), spec.units, tokensOf(in), spec.bias);
}

LayerPtr createTransformer(const LayerSpec& spec, const Shape& in)
{
    requireTokens(in);
    checkHeads(spec, in[1]);
    checkEpsilon(spec);
    if (spec.units < 0)
        throw ConfigError("units (the MLP's hidden width) must not be negative (got " + number(spec.units) +
                          "); 0 means four times the width");
    TransformerSettings s;
    s.width = in[1];
    s.tokens = in[0];
    s.heads = spec.heads;
    s.hidden = spec.units == 0 ? 4 * in[1] : spec.units;
    s.causal = spec.causal;
    s.norm = spec.norm == NormKind::RmsNorm ? RowNormKind::RmsNorm : RowNormKind::LayerNorm;
    s.softmax = spec.softmax;
    s.statistics = spec.statistics;
    s.epsilon = spec.epsilon;
    s.attentionDropout = spec.attentionDropout;
    return std::make_unique<TransformerBlock>(s);
}

} // namespace mantissa
