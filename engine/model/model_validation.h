#pragma once
// Shape inference over a model spec, without allocating anything: the editor calls it on
// every edit, the Model calls it before building.
#include "engine/config/run_config.h"
#include "engine/tensor/shape.h"

#include <string>
#include <vector>

namespace mantissa {

// One part of a composite layer (a transformer block's norm1, attention, norm2, mlp).
struct LayerPartReport {
    LayerKind type = LayerKind::Linear;
    std::int64_t parameters = 0;
    std::int64_t flopsPerSample = 0;
    std::string name; // the full name model.precision_overrides addresses it by ("2.transformer.mlp")
};

struct LayerReport {
    int index = 0; // position in ModelSpec::layers
    LayerKind type = LayerKind::Linear;
    Shape inputShape, outputShape; // per sample; empty when the layer is invalid
    std::int64_t parameters = 0;
    std::int64_t flopsPerSample = 0;
    std::vector<std::pair<std::string, std::int64_t>> tensorCoreExtents;
    std::vector<LayerPartReport> parts; // what a composite layer is made of; empty otherwise
    std::string error;                  // empty when valid
};

struct ModelReport {
    std::vector<LayerReport> layers;
    std::string error;   // the first error, already prefixed: "layer 5 (linear): ..."
    int errorLayer = -1; // index of the first invalid layer, -1 when the model is valid
    std::int64_t totalParameters = 0;
    std::int64_t totalFlopsPerSample = 0;
    std::int64_t activationValuesPerSample = 0; // sum of every layer's output size
    bool valid() const { return error.empty(); }
};

// Never throws for spec errors: they are reported per layer.
ModelReport validateModel(const ModelSpec& spec);

} // namespace mantissa
