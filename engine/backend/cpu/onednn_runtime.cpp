#include "engine/backend/cpu/onednn_runtime.h"

namespace mantissa::cpu {

OneDnnRuntime::OneDnnRuntime(bool fallBack)
    : m_engine(dnnl::engine::kind::cpu, 0), m_stream(m_engine), m_fallBack(fallBack)
{}

void OneDnnRuntime::noteImplementation(const std::string& family, const std::string& impl)
{
    std::lock_guard lock(m_mutex);
    m_used[family].insert(impl);
}

std::string OneDnnRuntime::implementations() const
{
    std::lock_guard lock(m_mutex);
    std::string out;
    for (const auto& [family, impls] : m_used) {
        if (!out.empty())
            out += "; ";
        out += family + ": ";
        bool first = true;
        for (const std::string& impl : impls) {
            out += (first ? "" : ", ") + impl;
            first = false;
        }
    }
    return out;
}

void OneDnnRuntime::noteFallback(const std::string& what, const std::string& reason)
{
    std::lock_guard lock(m_mutex);
    m_fallbacks.insert(what + ", which oneDNN refused: " + reason);
}

std::vector<std::string> OneDnnRuntime::fallbacks() const
{
    std::lock_guard lock(m_mutex);
    return {m_fallbacks.begin(), m_fallbacks.end()};
}

void OneDnnRuntime::checkRefusal(const std::string& family) const
{
    std::lock_guard lock(m_mutex);
    if (m_refused.contains(family))
        throw dnnl::error(dnnl_unimplemented, "refused for testing");
}

void OneDnnRuntime::refuseForTesting(const std::string& family)
{
    std::lock_guard lock(m_mutex);
    m_refused.insert(family);
}

void appendRelu(dnnl::post_ops& ops) { ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f); }

bool appliesReluExactly(const std::string& implementation)
{
    return implementation.starts_with("brg") || implementation.starts_with("jit");
}

std::string oneDnnVersion()
{
    const dnnl_version_t* v = dnnl_version();
    return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

std::string oneDnnIsaName()
{
    switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic: return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    case dnnl::cpu_isa::all: break;
    }
    return "no vector ISA";
}

bool oneDnnHasNativeBf16()
{
    // The ISA values are nested bit sets: AMX includes every avx512_core_bf16 bit.
    const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & bf16) == bf16;
}

} // namespace mantissa::cpu
