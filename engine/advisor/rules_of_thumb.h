#pragma once
// The rules of thumb the precision advisor is measured against (docs/advisor.md), each as the
// per-layer formats it gives a model for one low format:
// - "keep-first-last": every GEMM layer low but the first (with those reading the same input)
//   and the last, which stay as the baseline has them; the engine's own keep_first_last
//   decides which (gemm_coverage.h; Megatron-LM's --first-last-layers-bf16, the MX recipe);
// - "keep-last-16%": the last 16% of the GEMM layers (rounded up) stay, the others go low
//   (NVIDIA's NVFP4 pretraining recipe);
// - "multiples-of-16": a layer goes low only where every width its GEMMs' blocks run along is a
//   multiple of 16 (the shape filter of accelerate and torchao).
// A layer the format cannot take (the probe's misfit) stays high under every rule.
#include "engine/advisor/precision_probe.h"

#include <string>
#include <vector>

namespace mantissa {

struct RuleOfThumb {
    std::string name;             // "keep-first-last"
    std::vector<std::string> low; // the layers it puts in the format, in the model's order
};

// `fits`: per layer of `layers`, whether the model takes `format` there.
// `keptByFirstLast`: the layers the engine's keep_first_last keeps (gemmCoverage's).
std::vector<RuleOfThumb> rulesOfThumb(const std::vector<AdvisorLayer>& layers, const std::vector<bool>& fits,
                                      const std::vector<std::string>& keptByFirstLast);

// The layers keep_first_last keeps in `spec`, as the engine's coverage of a recipe run says.
std::vector<std::string> layersKeptFirstAndLast(const ModelSpec& spec);

} // namespace mantissa
