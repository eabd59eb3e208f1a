#pragma once
// The layer factory's half for transformer layers (layer_factory.h is the other half): each
// checks its spec against the per-sample input shape and throws ConfigError naming the field
// and the fix, without the layer index (the caller adds it).
#include "engine/config/run_config.h"
#include "engine/model/layer.h"

namespace mantissa {

LayerPtr createRowNorm(const LayerSpec& spec, const Shape& in);
LayerPtr createTokenEmbedding(const LayerSpec& spec, const Shape& in);
LayerPtr createPositionalEmbedding(const LayerSpec& spec, const Shape& in);
LayerPtr createPatchEmbedding(const LayerSpec& spec, const Shape& in);
LayerPtr createAttention(const LayerSpec& spec, const Shape& in);
LayerPtr createMlp(const LayerSpec& spec, const Shape& in);
LayerPtr createTransformer(const LayerSpec& spec, const Shape& in);

} // namespace mantissa
