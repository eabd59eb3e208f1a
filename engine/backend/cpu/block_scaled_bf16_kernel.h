#pragma once
// The block-scaled GEMM's own kernel for CPUs with avx512_bf16 (docs/formats.md, "The
// block-scaled FP8 GEMM"): each K-chunk's products are summed in registers (VDPBF16PS, bf16
// pairs into fp32) and promoted there into the fp32 running sum with the chunk's decode
// scales, as DeepGEMM does on the GPU, instead of oneDNN writing every chunk's [m, n] partial
// sums to memory for a second pass to scale and add. Same definition as sumScaledChunks:
// acc = fma(fl(a_c[i] * b_c[j]), P_c[i, j], acc), chunk after chunk from 0, then the bias,
// then the rounding to the output's type; only the order of the products inside a chunk's
// fp32 sum P_c is the kernel's own, as it is oneDNN's on the native path.
#include "engine/backend/cpu/block_scaled_gemm_sum.h"

#include <cstdint>
#include <vector>

namespace mantissa::cpu {

// Whether this CPU can run the kernel (avx512_bf16) and it is allowed. The backend also leaves
// CPUs with AMX-BF16 to oneDNN, whose tile kernels are faster there.
bool blockScaledBf16KernelRuns();
// allowBlockScaledBf16Kernel(false) sends the backends created afterwards to oneDNN's route
// (tests hold that route to the reference on CPUs where the kernel runs); returns the previous
// setting.
bool allowBlockScaledBf16Kernel(bool allowed);

// A bf16 operand of the product. For A, op(A) is [m, k]: kMajor means the buffer is [k, m]
// (A read transposed). For B, op(B) is [k, n]: kMajor means the buffer is [k, n] (B not
// transposed), otherwise [n, k].
struct Bf16Operand {
    const std::uint16_t* data = nullptr;
    bool kMajor = false;
};

// Buffers the kernel packs its operands into; they only grow, so a backend keeps one set.
struct BlockScaledScratch {
    std::vector<std::uint16_t> packedA, packedB;
    std::vector<float> scalesB;
};

// out = the block-scaled product of op(A) [m, k] and op(B) [k, n] in K-chunks of `chunk`
// (even) elements, as sumScaledChunks defines it from the chunks' partial sums; `bias` (n
// values) or null; k > 0. Runs on the OpenMP team. Call only where blockScaledBf16KernelRuns() said yes.
void blockScaledBf16Gemm(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t chunk, Bf16Operand a,
                         Bf16Operand b, ChunkScales scalesA, ChunkScales scalesB, const float* bias, ChunkSumOutput out,
                         BlockScaledScratch& scratch);

} // namespace mantissa::cpu
