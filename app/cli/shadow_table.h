#pragma once
// `mantissa-cli numerics RUN --shadow`: the shadow error track's table at one shadowed step
// (every layer's output, input gradient and weight gradients against the fp32 pass) and the
// tensors that erred most over the run.
#include "engine/observe/records.h"

#include <QString>

#include <vector>

namespace mantissa::cli {

// Prints the table of `records[at]`, only `layer`'s rows when not empty (a layer or tensor
// name); false when no row matched.
bool printShadowStep(const std::vector<ShadowRecord>& records, std::size_t at, const QString& layer);
// Prints the `count` tensors with the largest mean relative error over every shadowed step.
void printWorstShadowTensors(const std::vector<ShadowRecord>& records, std::size_t count);

} // namespace mantissa::cli
