#include "engine/backend/cpu_options.h"

#include <array>

namespace mantissa {

namespace {

constexpr std::array kCpuKernels{
    EnumEntry<CpuKernels>{CpuKernels::Auto, "auto", "auto",
                          "Native 16-bit kernels where the CPU has them (bf16: avx512_bf16 or AMX), else emulated."},
    EnumEntry<CpuKernels>{CpuKernels::Native, "native", "native",
                          "The CPU's own 16-bit dot products; an error where this CPU has none for the run's types."},
    EnumEntry<CpuKernels>{CpuKernels::Emulated, "emulated", "emulated",
                          "16-bit inputs widened to fp32 and multiplied in fp32: the reference the native path is "
                          "tested against."},
};

} // namespace

template <>
std::span<const EnumEntry<CpuKernels>> enumEntries<CpuKernels>()
{
    return kCpuKernels;
}

} // namespace mantissa
