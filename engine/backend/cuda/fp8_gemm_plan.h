#pragma once
// Whether a GEMM of per-tensor FP8 elements may run as cuBLASLt's FP8 matmul (fp8_gemm.cpp),
// and if not, why: a pure function of the request, the device and the GEMM, so that the host
// tests hold it without a GPU. The constraints are cuBLASLt's for FP8 inputs on Ada and Hopper
// (cublasLtMatmul, "FP8 data types"):
//  - FP8 tensor cores: compute capability 8.9 (Ada) or 9.x and newer;
//  - E4M3 x E4M3, E4M3 x E5M2 or E5M2 x E4M3; E5M2 x E5M2 has no kernel;
//  - the TN layout (A transposed, B not): met for every transposition, since fp8_gemm.cpp packs
//    both operands K-contiguous whatever the GEMM's flags (a transposing copy), so no GEMM
//    falls back for its layout;
//  - sizes: the packed operands' leading dimension (K) a multiple of 16 bytes and the
//    output's (N) of 16 elements; M, N and K all multiples of 16 are asked for here, which
//    covers both and the alignment of every operand;
//  - outputs bf16 or fp32 (C of the same type; fp16 and FP8 outputs are not used by the recipes).
// Anything else stays on the emulated GEMM, which gives the same values up to the order of
// summation (docs/gpu.md).
#include "engine/backend/cuda_options.h"
#include "engine/numerics/dtype.h"
#include "engine/numerics/minifloat_format.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mantissa::cuda {

// Whether this device has FP8 tensor cores that cuBLASLt's FP8 matmul runs on.
inline bool hasFp8TensorCores(int major, int minor) { return major > 8 || (major == 8 && minor >= 9); }

struct Fp8GemmRequest {
    Fp8Gemm mode = Fp8Gemm::Auto;
    int major = 0, minor = 0; // the device's compute capability
    // The element formats of A and B, when each holds per-tensor FP8 elements that the backend
    // quantised (fp8_operands.h); empty for any other operand.
    std::optional<MiniFloat> a, b;
    std::int64_t m = 0, n = 0, k = 0;
    DType c = DType::F32;
};

// Empty when the GEMM may run on FP8 tensor cores; else the reason it runs emulated, for the
// backend's kernel paths ("K = 10 is not a multiple of 16").
inline std::string fp8GemmRefusal(const Fp8GemmRequest& r)
{
    const auto fp8 = [](const std::optional<MiniFloat>& e) {
        return e && (*e == MiniFloat::E4M3 || *e == MiniFloat::E5M2);
    };
    if (r.mode == Fp8Gemm::Emulated)
        return "training.fp8_gemm is emulated";
    if (!hasFp8TensorCores(r.major, r.minor))
        return "sm_" + std::to_string(r.major * 10 + r.minor) + " has no FP8 tensor cores (sm_89 or newer)";
    if (!fp8(r.a) || !fp8(r.b))
        return "an operand is not per-tensor FP8 elements";
    if (*r.a == MiniFloat::E5M2 && *r.b == MiniFloat::E5M2)
        return "E5M2 x E5M2 has no cuBLASLt kernel";
    if (r.c != DType::F32 && r.c != DType::BF16)
        return std::string("the output is ") + std::string(dtypeName(r.c)) + ", not bf16 or fp32";
    if (r.k == 0)
        return "K = 0 (nothing to multiply)";
    const auto notSixteen = [](const char* name, std::int64_t v) {
        return v % kFp8GemmMultiple != 0 ? std::string(name) + " = " + std::to_string(v) + " is not a multiple of " +
                                               std::to_string(kFp8GemmMultiple)
                                         : std::string();
    };
    for (const std::string& why : {notSixteen("M", r.m), notSixteen("N", r.n), notSixteen("K", r.k)})
        if (!why.empty())
            return why;
    if (r.m > 0x7fffffff || r.n > 0x7fffffff || r.k > 0x7fffffff)
        return "a dimension exceeds cuBLASLt's int sizes";
    return {};
}

} // namespace mantissa::cuda
