// The CUDA backend's FP8 GEMM (engine/backend/cuda/fp8_gemm.h), the parts that need no GPU:
//  - the 8-bit codes it hands cuBLASLt: for every code of E4M3 and E5M2, minifloat_codec's
//    value is the value CUDA's own FP8 types (cuda_fp8.h's __nv_fp8_e4m3 and __nv_fp8_e5m2, what
//    CUDA_R_8F_E4M3 and CUDA_R_8F_E5M2 mean) give the same bits, so the OCP layouts agree (E4M3
//    the "fn" variant: no Inf, S.1111.111 NaN); and packing that value, written as bf16 the way
//    the quantiser writes elements, gives the code back (fp8_codes.h), NaN codes a NaN code;
//  - the plan: which GEMMs run on FP8 tensor cores, and the reason each other one does not.
// The GEMM itself against the emulated path is cuda_fp8_gemm_test (label gpu).
#include "engine/backend/cuda/fp8_codes.h"
#include "engine/backend/cuda/fp8_gemm_plan.h"
#include "engine/numerics/minifloat_codec.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

using namespace mantissa;
using namespace mantissa::cuda;

namespace {

float cudaValueOf(std::uint8_t code, MiniFloat element)
{
    if (element == MiniFloat::E5M2) {
        __nv_fp8_e5m2 x;
        x.__x = code;
        return static_cast<float>(x);
    }
    __nv_fp8_e4m3 x;
    x.__x = code;
    return static_cast<float>(x);
}

class Fp8Codes : public ::testing::TestWithParam<MiniFloat> {};

TEST_P(Fp8Codes, EveryCodeMeansTheSameInCudaAndComesBackFromItsBf16Value)
{
    const MiniFloat element = GetParam();
    int nans = 0;
    for (int c = 0; c < 256; ++c) {
        const auto code = static_cast<std::uint8_t>(c);
        const float ours = decodeMiniFloat(code, element), theirs = cudaValueOf(code, element);
        if (std::isnan(ours) || std::isnan(theirs)) {
            EXPECT_TRUE(std::isnan(ours) && std::isnan(theirs))
                << "code 0x" << std::hex << c << ": ours " << ours << ", CUDA's " << theirs;
            ++nans;
        } else {
            EXPECT_EQ(std::bit_cast<std::uint32_t>(ours), std::bit_cast<std::uint32_t>(theirs))
                << "code 0x" << std::hex << c << ": ours " << ours << ", CUDA's " << theirs;
        }
        const auto bits = std::bit_cast<std::uint32_t>(ours);
        ASSERT_EQ(bits & 0xffffu, 0u) << "code 0x" << std::hex << c << " is not a bf16 number";
        const std::uint8_t packed = fp8CodeOfBf16(static_cast<std::uint16_t>(bits >> 16), element == MiniFloat::E5M2);
        if (std::isnan(ours))
            EXPECT_TRUE(std::isnan(decodeMiniFloat(packed, element))) << "NaN code 0x" << std::hex << c;
        else
            EXPECT_EQ(packed, code) << "code 0x" << std::hex << c << " (" << ours << ") packs as 0x" << int(packed);
    }
    // E4M3 fn: 0x7f and 0xff only; E5M2: exponent 11111 with a non-zero mantissa, 3 per sign.
    EXPECT_EQ(nans, element == MiniFloat::E4M3 ? 2 : 6);
}

INSTANTIATE_TEST_SUITE_P(Formats, Fp8Codes, ::testing::Values(MiniFloat::E4M3, MiniFloat::E5M2),
                         [](const ::testing::TestParamInfo<MiniFloat>& info) {
                             return info.param == MiniFloat::E4M3 ? "E4M3" : "E5M2";
                         });

Fp8GemmRequest hopper()
{
    Fp8GemmRequest r;
    r.mode = Fp8Gemm::Auto;
    r.major = 9;
    r.minor = 0;
    r.a = MiniFloat::E4M3;
    r.b = MiniFloat::E4M3;
    r.m = 128;
    r.n = 64;
    r.k = 784;
    r.c = DType::BF16;
    return r;
}

TEST(Fp8GemmPlan, RunsNativelyOnlyWhereCublasLtHasAnFp8Kernel)
{
    struct Case {
        const char* name;
        void (*change)(Fp8GemmRequest&);
        std::string refusal; // empty: native
    };
    const Case cases[] = {
        {"hopper, E4M3 x E4M3, bf16 out", [](Fp8GemmRequest&) {}, ""},
        {"native asked", [](Fp8GemmRequest& r) { r.mode = Fp8Gemm::Native; }, ""},
        {"ada", [](Fp8GemmRequest& r) { r.major = 8, r.minor = 9; }, ""},
        {"blackwell", [](Fp8GemmRequest& r) { r.major = 10; }, ""},
        {"E5M2 gradient x E4M3", [](Fp8GemmRequest& r) { r.a = MiniFloat::E5M2; }, ""},
        {"E4M3 x E5M2 gradient", [](Fp8GemmRequest& r) { r.b = MiniFloat::E5M2; }, ""},
        {"fp32 out", [](Fp8GemmRequest& r) { r.c = DType::F32; }, ""},
        {"emulated asked", [](Fp8GemmRequest& r) { r.mode = Fp8Gemm::Emulated; }, "training.fp8_gemm is emulated"},
        {"ampere", [](Fp8GemmRequest& r) { r.major = 8, r.minor = 0; },
         "sm_80 has no FP8 tensor cores (sm_89 or newer)"},
        {"ampere 8.6", [](Fp8GemmRequest& r) { r.major = 8, r.minor = 6; },
         "sm_86 has no FP8 tensor cores (sm_89 or newer)"},
        {"E5M2 x E5M2", [](Fp8GemmRequest& r) { r.a = r.b = MiniFloat::E5M2; }, "E5M2 x E5M2 has no cuBLASLt kernel"},
        {"one operand not FP8", [](Fp8GemmRequest& r) { r.b.reset(); }, "an operand is not per-tensor FP8 elements"},
        {"MX element", [](Fp8GemmRequest& r) { r.a = MiniFloat::E2M1; }, "an operand is not per-tensor FP8 elements"},
        {"fp16 out", [](Fp8GemmRequest& r) { r.c = DType::F16; }, "the output is fp16, not bf16 or fp32"},
        {"the classifier's N", [](Fp8GemmRequest& r) { r.n = 10; }, "N = 10 is not a multiple of 16"},
        {"odd M", [](Fp8GemmRequest& r) { r.m = 100; }, "M = 100 is not a multiple of 16"},
        {"odd K", [](Fp8GemmRequest& r) { r.k = 8; }, "K = 8 is not a multiple of 16"},
        {"empty K", [](Fp8GemmRequest& r) { r.k = 0; }, "K = 0 (nothing to multiply)"},
    };
    for (const Case& c : cases) {
        Fp8GemmRequest r = hopper();
        c.change(r);
        EXPECT_EQ(fp8GemmRefusal(r), c.refusal) << c.name;
    }
}

} // namespace
