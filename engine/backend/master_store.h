#pragma once
// How an optimizer step stores updated bf16 masters (precision.master_weights,
// engine/precision/master_weights.h): what the backends need of that setting, in the backend's
// folder so that the precision policy above it can name it too.
#include "engine/numerics/dtype.h"

#include <cstdint>

namespace mantissa {

// fp32 masters are stored as computed whatever this says.
enum class MasterRounding : std::uint8_t { Nearest, Stochastic, Kahan };

// Kahan summation's compensation buffer (Parameter::compensation) is bf16: with it, weight and
// compensation take the 4 bytes of an fp32 master (master_weights.h says why).
inline constexpr DType kCompensationDType = DType::BF16;

// Stochastic rounding draws by (seed, the step in StepInput::RoundingStepLow/High, the slot's
// index, the element) (update_rounding.h).
struct MasterStore {
    MasterRounding rounding = MasterRounding::Nearest;
    std::uint64_t seed = 0;
};

} // namespace mantissa
