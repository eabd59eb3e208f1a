#pragma once
// Builds one layer from its spec for a known per-sample input shape. Shape checks live
// here, beside the layer types, so the validator, the model and the editor agree.
#include "engine/config/run_config.h"
#include "engine/model/layer.h"

namespace mantissa {

// Throws ConfigError describing the mismatch (without the layer index; the caller adds it).
// `inputPerSample` excludes the batch: {C, H, W} or {features}.
LayerPtr createLayer(const LayerSpec& spec, const Shape& inputPerSample);

// Per-sample output shape of a created layer.
Shape perSampleOutput(const Layer& layer, const Shape& inputPerSample);

} // namespace mantissa
