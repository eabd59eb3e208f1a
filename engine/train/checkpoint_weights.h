#pragma once
// A checkpoint's weights (fp32 masters and buffers) into a model built outside a Trainer: what
// inference (text_sampler.h) needs. The file format is checkpoint.cpp's.
#include "engine/model/model.h"

#include <string>

namespace mantissa {

// Throws IoError naming `path`: unreadable, not a checkpoint, or saved from another model
// (the tensor and both shapes). The working copies are refreshed from the loaded masters.
void loadCheckpointWeights(Model& model, Backend& backend, const std::string& path);

} // namespace mantissa
