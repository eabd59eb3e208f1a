#pragma once
// The instruction sets of the CPU this process runs on, read at run time (cpuid), never
// assumed from the build: the machines that build, test and use Mantissa differ (AVX2 only;
// AVX-512 with avx512_bf16; with avx512_fp16 too).
#include <string>

namespace mantissa::cpu {

struct CpuFeatures {
    bool avx2 = false;
    bool avx512f = false;
    bool avx512bf16 = false; // VDPBF16PS: bf16 pairs multiplied and summed into fp32
    bool avx512fp16 = false; // fp16 arithmetic that accumulates in fp16, plus fast conversions
    bool amxBf16 = false;
    bool amxFp16 = false;
};

const CpuFeatures& cpuFeatures();

// "avx2 avx512f avx512_bf16": the flags above that are present, in /proc/cpuinfo's spelling.
std::string describeCpuFeatures(const CpuFeatures& f);

} // namespace mantissa::cpu
