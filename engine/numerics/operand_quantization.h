#pragma once
// One GEMM operand's quantisation as a request that any backend can run where the operand
// lies (Backend::quantizeOperand): the format, where K runs through the buffer, how the
// values are blocked, and the scale of a delayed-scaling operand. gemm_inputs.cpp builds it
// from a layer's layout (operandQuantization()); the CUDA backend runs it on the device with
// the arithmetic of quant_arithmetic.h, and quantizeOperandOnHost runs the very same
// arithmetic over a host buffer, which is how the tests check it against the CPU quantiser
// without a GPU.
#include "engine/numerics/quant_arithmetic.h"
#include "engine/numerics/quant_format.h"

#include <cstdint>
#include <optional>
#include <span>

namespace mantissa {

struct OperandQuantization {
    QuantFormat format;   // scheme, element, block size and rows, scale rule, rounding and seed
    qa::OperandView view; // the operand as a matrix with K along its rows
    // How the values are blocked (Fp32Blocks, Mx, Nvfp4; and per-tensor fp32 tiles, below).
    qa::BlockGrid grid;
    // A PerTensor format with tiles: one fp32 scale per grid block (DeepSeek-V3's 128x128
    // weight blocks) instead of one for the tensor.
    bool tiled = false;
    std::optional<float> fixedScale; // per tensor: the encode scale (delayed scaling), else max / amax now
    bool elements = false;           // per tensor: the result holds the elements; the decode scale is returned
    std::uint64_t firstCounter = 0;  // stochastic rounding's first counter
    // The values may be written in bf16 where every one is a bf16 number (the GEMM then reads
    // them natively): FP8 elements, MX values, power-of-two-scaled blocks. Only where to write
    // them; their values do not depend on it.
    bool mayBeBf16 = false;
};

struct OperandQuantizationResult {
    float decodeScale = 1.0f; // what the GEMM's sum is multiplied by (elements only; else 1)
    float amax = 0.0f;        // per tensor: the largest finite magnitude (the delayed-scaling history)
};

// The plan shared by every block, given the operand's largest finite magnitude (which per-tensor
// current scaling and NVFP4 need; ignored otherwise). Throws ConfigError when the format refuses
// the view (a partial block under PartialBlock::Refuse, an E8M0 element, no blocks).
qa::OperandPlan operandPlan(const OperandQuantization& q, float tensorAmax);

// Whether the plan needs the tensor's amax before the blocks can be quantised.
bool needsTensorAmax(const OperandQuantization& q);

// The request run on the host by the arithmetic the device runs, its blocks spread over the
// OpenMP team: `in` and `out` hold the operand in its buffer's order. It is the device kernels'
// reference in the tests, and the CPU's path for what the fast quantiser leaves (non-finite
// values, a convolution's 2D tiles, a per-tensor format's stochastic 128x128 tiles) on steps
// the lens does not sample:
// it reads the operand where it lies, with no gather into rows and no codes kept.
OperandQuantizationResult quantizeOperandOnHost(const OperandQuantization& q, std::span<const float> in,
                                                std::span<float> out);

} // namespace mantissa
