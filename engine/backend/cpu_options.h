#pragma once
// The run's settings for the CPU backend (RunConfig training.threads and training.cpu_kernels);
// Qt-free and oneDNN-free so that every layer of the program can carry them.
#include "engine/util/enum_table.h"

#include <cstdint>

namespace mantissa {

// Which kernels run 16-bit GEMMs and convolutions on the CPU (training.cpu_kernels).
// Native: the CPU's own 16-bit dot products (avx512_bf16, AMX) through oneDNN, products still
// accumulated in fp32. Emulated: 16-bit inputs widened exactly to fp32 and multiplied in fp32,
// the oracle that native kernels are tested against. Auto: native where the CPU has it.
enum class CpuKernels : std::uint8_t { Auto, Native, Emulated };

template <>
std::span<const EnumEntry<CpuKernels>> enumEntries<CpuKernels>();

struct CpuOptions {
    int threads = 0; // 0: one per hardware thread
    CpuKernels kernels = CpuKernels::Auto;
};

} // namespace mantissa
