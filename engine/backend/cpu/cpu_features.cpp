#include "engine/backend/cpu/cpu_features.h"

#include <cpuid.h>

namespace mantissa::cpu {

namespace {

struct Registers {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Registers cpuid(unsigned leaf, unsigned subleaf)
{
    Registers r;
    if (__get_cpuid_max(0, nullptr) < leaf)
        return r;
    __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
    return r;
}

bool bit(unsigned reg, int index) { return ((reg >> index) & 1u) != 0; }

CpuFeatures detect()
{
    // The OS must save the wider registers too (XCR0), or the instructions fault: a
    // hypervisor may show the cpuid bits without enabling the state.
    const Registers leaf1 = cpuid(1, 0);
    const bool osXsave = bit(leaf1.ecx, 27);
    unsigned long long xcr0 = 0;
    if (osXsave)
        xcr0 = __builtin_ia32_xgetbv(0);
    const bool osAvx = (xcr0 & 0x6) == 0x6;
    const bool osAvx512 = osAvx && (xcr0 & 0xe0) == 0xe0;
    const bool osAmx = (xcr0 & 0x60000) == 0x60000;

    const Registers leaf7 = cpuid(7, 0);
    const Registers leaf7s1 = cpuid(7, 1);
    CpuFeatures f;
    f.avx2 = osAvx && bit(leaf7.ebx, 5);
    f.avx512f = osAvx512 && bit(leaf7.ebx, 16);
    f.avx512bf16 = f.avx512f && bit(leaf7s1.eax, 5);
    f.avx512fp16 = f.avx512f && bit(leaf7.edx, 23);
    f.amxBf16 = osAmx && bit(leaf7.edx, 22);
    f.amxFp16 = osAmx && bit(leaf7s1.eax, 21);
    return f;
}

} // namespace

const CpuFeatures& cpuFeatures()
{
    static const CpuFeatures features = detect();
    return features;
}

std::string describeCpuFeatures(const CpuFeatures& f)
{
    std::string out;
    const auto add = [&](bool present, const char* name) {
        if (!present)
            return;
        if (!out.empty())
            out += ' ';
        out += name;
    };
    add(f.avx2, "avx2");
    add(f.avx512f, "avx512f");
    add(f.avx512bf16, "avx512_bf16");
    add(f.avx512fp16, "avx512_fp16");
    add(f.amxBf16, "amx_bf16");
    add(f.amxFp16, "amx_fp16");
    return out.empty() ? "no AVX2" : out;
}

} // namespace mantissa::cpu
