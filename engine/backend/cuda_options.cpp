#include "engine/backend/cuda_options.h"

#include <array>

namespace mantissa {

namespace {

constexpr std::array kFp8Gemm{
    EnumEntry<Fp8Gemm>{Fp8Gemm::Auto, "auto", "auto",
                       "cuBLASLt's FP8 GEMM where the GPU has FP8 tensor cores (sm_89 and newer), else emulated."},
    EnumEntry<Fp8Gemm>{Fp8Gemm::Native, "native", "native",
                       "cuBLASLt's FP8 GEMM; an error on a GPU without FP8 tensor cores."},
    EnumEntry<Fp8Gemm>{Fp8Gemm::Emulated, "emulated", "emulated",
                       "FP8 elements multiplied as bf16 with fp32 accumulation: the reference the native path is "
                       "tested against."},
};

} // namespace

template <>
std::span<const EnumEntry<Fp8Gemm>> enumEntries<Fp8Gemm>()
{
    return kFp8Gemm;
}

} // namespace mantissa
