#pragma once
// A layer-list model (a preset, the model editor's) written as a new ONNX graph with its trained
// weights: linear layers as Gemm, convolutions as Conv, batch normalisation, pools, flatten,
// dropout, the activations, and residual blocks as their branches joined by Add. Parameters keep
// their names as initializers and nodes their layers' names, so a file imported again names
// everything as the model did.
#include "engine/model/model.h"

#include <onnx/onnx_pb.h>

namespace mantissa::onnx_import {

// `model` holds the trained weights. Throws ConfigError naming the first layer that has no ONNX
// form here yet (the transformer layers, normalisation over rows, embeddings, a tied or
// sequence-wise linear layer, GELU).
onnx::ModelProto layerListToOnnx(Model& model, Backend& backend);

} // namespace mantissa::onnx_import
