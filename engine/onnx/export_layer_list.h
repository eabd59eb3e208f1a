#pragma once
// A layer-list model (a preset, the model editor's) written as a new ONNX graph (opset 17) with
// its trained weights: linear layers as Gemm, convolutions as Conv, batch normalisation, pools,
// flatten, dropout, the activations (GELU in its erf form), residual blocks as their branches
// joined by Add, and the transformer layers as export_transformer.h writes them. Parameters keep
// their names as initializers and nodes their layers' names, so a file imported again names
// everything as the model did.
#include "engine/model/model.h"

#include <onnx/onnx_pb.h>

namespace mantissa::onnx_import {

// `model` holds the trained weights. Throws ConfigError naming the first layer that has no ONNX
// form here (an RMS norm, a positional table longer than the sequence).
onnx::ModelProto layerListToOnnx(Model& model, Backend& backend);

} // namespace mantissa::onnx_import
