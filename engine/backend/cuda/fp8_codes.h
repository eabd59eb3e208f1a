#pragma once
// The 8-bit code cuBLASLt reads (CUDA_R_8F_E4M3, CUDA_R_8F_E5M2: cuda_fp8.h's __nv_fp8_e4m3 and
// __nv_fp8_e5m2, the OCP FP8 formats, E4M3 the "fn" variant with no Inf and S.1111.111 NaN) of
// an FP8 element that the quantiser wrote as a bf16 number. Every such element is a value its
// format holds exactly (it is the decode of one of its codes), so the conversion has nothing to
// round: the code comes back unchanged, and tests/engine/fp8_codes_test.cpp checks that it does
// for every code against minifloat_codec's decoding. No saturation: an E5M2 Inf stays Inf, as
// the emulated GEMM multiplies it.
#include <cuda_fp8.h>

#include <cstdint>

namespace mantissa::cuda {

#if defined(__CUDACC__)
__host__ __device__
#endif
    inline std::uint8_t
    fp8CodeOfBf16(std::uint16_t bf16Bits, bool e5m2)
{
    __nv_bfloat16_raw raw;
    raw.x = bf16Bits;
    return static_cast<std::uint8_t>(__nv_cvt_bfloat16raw_to_fp8(raw, __NV_NOSAT, e5m2 ? __NV_E5M2 : __NV_E4M3));
}

} // namespace mantissa::cuda
