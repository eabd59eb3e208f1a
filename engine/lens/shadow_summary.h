#pragma once
// The shadow error track over a run (engine/lens/shadow_model.h): which tensors err most. One
// ranking, read by the CLI, the Numerics tab and reports alike.
#include "engine/observe/records.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace mantissa {

struct ShadowTensorSummary {
    std::string layer, tensor;
    ShadowTensor kind = ShadowTensor::Output;
    int steps = 0;          // shadowed steps with this tensor
    int nonFiniteSteps = 0; // of them, steps where it held Inf or NaN (no measure)
    // Over the other steps: the mean relative RMS error and the worst (largest) one with its
    // step, and the mean cosine; NaN when every step was non-finite.
    double meanRelativeRms = 0, worstRelativeRms = 0, meanCosine = 0;
    std::int64_t worstStep = 0;
    // The mean RMS of the fp32 pass's tensor and of the run's (gradients unscaled). A relative
    // error is only as meaningful as its reference: a gradient that is zero in exact arithmetic
    // (an attention key's bias: softmax ignores a shift common to every key) is fp32 rounding
    // noise in the reference, and any run's error is huge against it. These two say so.
    double meanReferenceRms = 0, meanComparedRms = 0;
    // The mean SQNR in dB, from the mean relative error (+Inf when every step was exact).
    double meanSqnrDb() const;
};

// Every tensor of `records` (optionally of one kind), the largest mean relative error first;
// tensors with only non-finite steps last, in the order first met.
std::vector<ShadowTensorSummary> rankShadowTensors(const std::vector<ShadowRecord>& records,
                                                   std::optional<ShadowTensor> kind = std::nullopt);

// The measures as the CLI, the GUI and reports print them: "3.12e-04", "nan" (a non-finite
// step); "0.9999987"; "70.1 dB", "inf dB", "nan".
std::string formatRelativeRms(double relativeRms);
std::string formatCosine(double cosine);
std::string formatSqnrDb(double sqnrDb);

} // namespace mantissa
