#pragma once
// Where the weights the optimizer updates live, and its moments (precision.master_weights,
// precision.optimizer_state): the rules that turn those two settings into dtypes and a rounding,
// stated once for the policy, the optimizer, the backends and the editor's byte count.
//
// bf16 masters save memory (no fp32 copy beside the bf16 working weights), but an update below
// half a bf16 ulp of its weight rounds away to nearest: a weight at 1.0 (ulp 2^-7) never moves
// under steps of 0.001. Two remedies are offered:
//  - stochastic rounding: round up with probability equal to the distance from the value below,
//    so each stored weight is right in expectation (Zamirai et al., "Revisiting BFloat16
//    Training", arXiv 2010.06192; Ozkara et al., arXiv 2502.20566). The random bits are a
//    counter-based hash of (seed, step, parameter, element) (engine/backend/update_rounding.h),
//    so a run repeats bit for bit and resumes from a checkpoint without generator state.
//  - Kahan summation: a compensation buffer per parameter keeps what each rounding lost and adds
//    it to the next update (Zamirai et al.; optimi's Kahan optimizers). The buffer is bf16: with
//    it, weight and compensation take the 4 bytes of an fp32 master, and the weight is also the
//    working copy, where fp32 masters need a separate bf16 working copy (6 bytes). An fp32
//    buffer would cost as much as fp32 masters and remove the reason to use the mode.
#include "engine/backend/master_store.h"
#include "engine/numerics/dtype.h"
#include "engine/util/enum_table.h"

#include <cstdint>

namespace mantissa {

// precision.master_weights. Auto: the mode's own (fp32 in fp32, the mixed modes and the
// recipes; the weights themselves in pure fp16 and bf16).
enum class MasterWeights : std::uint8_t { Auto, Fp32, Bf16, Bf16Stochastic, Bf16Kahan };
// precision.optimizer_state: momentum and Adam's moments. Auto: the masters' dtype.
enum class OptimizerStatePrecision : std::uint8_t { Auto, Fp32, Bf16 };

template <>
std::span<const EnumEntry<MasterWeights>> enumEntries<MasterWeights>();
template <>
std::span<const EnumEntry<OptimizerStatePrecision>> enumEntries<OptimizerStatePrecision>();

struct UpdatePrecision {
    MasterWeights masters = MasterWeights::Auto;
    OptimizerStatePrecision state = OptimizerStatePrecision::Auto;
    bool operator==(const UpdatePrecision&) const = default;
};

// The masters' dtype; `modeMaster` is what the precision mode alone gives the layer.
DType masterDType(MasterWeights masters, DType modeMaster);
// The optimizer state's dtype beside masters of dtype `master`.
DType optimizerStateDType(OptimizerStatePrecision state, DType master);
MasterRounding masterRounding(MasterWeights masters);
// Whether each parameter carries a compensation buffer (Parameter::compensation, kCompensationDType).
inline bool hasCompensation(MasterWeights masters) { return masterRounding(masters) == MasterRounding::Kahan; }

} // namespace mantissa
