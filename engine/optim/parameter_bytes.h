#pragma once
// The bytes each trainable value takes for its weights and the optimizer's state under a run's
// precision settings (precision.mode, master_weights, optimizer_state) and optimizer: what the
// model editor shows. The one place the formula lives:
//   master + working copy (when it does not share master's storage) + Kahan compensation
//   + optimizer state tensors x the state's size.
// Gradients are not counted: they come on top, in the compute dtype (plus an fp32 copy when
// that is 16-bit), whatever the master and state settings.
#include "engine/config/run_config.h"

#include <string>

namespace mantissa {

struct ParameterBytes {
    DType master = DType::F32;
    std::optional<DType> working; // none: the working copy is master itself
    std::optional<DType> compensation;
    DType state = DType::F32;
    int stateTensors = 0;
    OptimizerKind optimizer = OptimizerKind::Sgd;

    std::size_t total() const;
};

// For the layers that follow the run's mode (LayerPrecision::Auto) or the override given.
ParameterBytes parameterBytes(const RunConfig& config, LayerPrecision override = LayerPrecision::Auto);
// "10 bytes: fp32 master 4 + bf16 working copy 2 + fp32 momentum 4".
std::string parameterBytesText(const ParameterBytes& bytes);

} // namespace mantissa
