#pragma once
// The run's settings for the CUDA backend (RunConfig training.tf32, training.cudnn_workspace_mib
// and training.fp8_gemm); Qt-free and CUDA-free so every build can carry them.
#include "engine/util/enum_table.h"

#include <cstddef>
#include <cstdint>

namespace mantissa {

// Which GEMM multiplies the per-tensor FP8 recipes' operands (fp8-hybrid, fp8-e4m3,
// fp8-delayed) on a GPU (training.fp8_gemm). Native: cuBLASLt's FP8 matmul on the FP8 tensor
// cores of Ada and Hopper (sm_89 and newer), where the GEMM's shape and operand pair allow it
// (engine/backend/cuda/fp8_gemm_plan.h); the others stay emulated. Emulated: the FP8 elements
// (bf16 numbers) multiplied by cuBLAS's bf16 GEMM with fp32 accumulation, the reference the
// native path is tested against. Auto: native where the device has FP8 tensor cores. Native
// on a device without them is refused at the first FP8 GEMM operand.
enum class Fp8Gemm : std::uint8_t { Auto, Native, Emulated };

// cuBLASLt's FP8 matmul takes M, N and K only in multiples of 16 (the packed operands' leading
// dimension 16 bytes, the output's 16 elements): fp8_gemm_plan.h asks it of every GEMM, and the
// tensor-core advice of the FP8 recipes names the extents that miss it.
inline constexpr std::int64_t kFp8GemmMultiple = 16;

template <>
std::span<const EnumEntry<Fp8Gemm>> enumEntries<Fp8Gemm>();

struct CudaOptions {
    // fp32 GEMMs and convolutions on TF32 tensor cores (10-bit mantissa inputs) instead of
    // true fp32. Off by default: an fp32 baseline must be fp32.
    bool tf32 = false;
    // The most scratch memory a cuDNN convolution algorithm may use.
    std::size_t convWorkspaceBytes = std::size_t{256} << 20;
    Fp8Gemm fp8Gemm = Fp8Gemm::Auto;
};

} // namespace mantissa
