#pragma once
// Every layer's backward against central finite differences of its forward, on any backend:
// the CPU suite (layer_gradient_test) and the GPU suite (gpu/cuda_gradient_test) run the
// same cases through the same check, so the two cannot drift apart.
#include "engine/backend/backend.h"
#include "engine/config/run_config.h"
#include "engine/tensor/shape.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace mantissa::test {

enum class InputKind {
    Normal,       // standard normal
    AwayFromZero, // |x| >= 0.1: ReLU's kink is never within a step
    Distinct,     // a permutation of values 0.05 apart: max-pool windows have no near-ties
    TokenIds,     // whole numbers in [0, spec.vocabulary): no dx to check
};

struct GradientCase {
    std::string name;
    LayerSpec spec;
    Shape input; // per sample
    std::int64_t batch = 3;
    InputKind inputKind = InputKind::Normal;
};

// Test names in CTest show the case name instead of the bytes of the struct.
void PrintTo(const GradientCase& c, std::ostream* os);

// Linear, activations, flatten, convolutions, batch norm, pools, dropout and residual blocks.
const std::vector<GradientCase>& layerGradientCases();
// Norms, embeddings, attention, MLP and transformer blocks (issue 18): CPU only until the
// CUDA backend has their ops (it reports them unsupported).
const std::vector<GradientCase>& transformerGradientCases();

// Builds the case's layer in fp32 on `backend`, runs one forward and backward, and compares
// dx and every parameter gradient with central differences of the forward. Mismatches are
// reported through GoogleTest (ADD_FAILURE), at most five per tensor.
void checkLayerGradients(Backend& backend, const GradientCase& c);

} // namespace mantissa::test
