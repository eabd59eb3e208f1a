#pragma once
// The oneDNN engine and stream that one CPU backend runs its primitives on, and the log of
// which oneDNN implementation each op family actually used ("bf16 matmul" ->
// "brg:avx512_core_bf16"), which the run records so that a user can tell whether a speedup
// is the hardware's. oneDNN picks its kernels from the CPU it finds at run time, so the same
// binary runs AVX2, AVX-512 and AMX code on the machines that have them.
#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <mutex>
#include <set>
#include <string>

namespace mantissa::cpu {

class OneDnnRuntime {
public:
    OneDnnRuntime();

    dnnl::engine& engine() { return m_engine; }
    dnnl::stream& stream() { return m_stream; }

    // Records that `family` ("bf16 matmul") ran on oneDNN's implementation `impl`.
    void noteImplementation(const std::string& family, const std::string& impl);
    // "bf16 matmul: brg:avx512_core_bf16; fp32 matmul: brg:avx512_core", families in order.
    std::string implementations() const;

private:
    dnnl::engine m_engine;
    dnnl::stream m_stream;
    mutable std::mutex m_mutex;
    std::map<std::string, std::set<std::string>> m_used;
};

// "2.6.3"
std::string oneDnnVersion();
// The instruction set oneDNN dispatches to on this CPU ("avx512_core_bf16"), after any
// ONEDNN_MAX_CPU_ISA limit in the environment.
std::string oneDnnIsaName();
// Whether oneDNN's kernels here multiply bf16 natively (avx512_bf16 or AMX-BF16).
bool oneDnnHasNativeBf16();

} // namespace mantissa::cpu
