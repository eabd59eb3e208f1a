#pragma once
// The oneDNN engine and stream that one CPU backend runs its primitives on, and the log of
// which oneDNN implementation each op family actually used ("bf16 matmul" ->
// "brg:avx512_core_bf16"), which the run records so that a user can tell whether a speedup
// is the hardware's. oneDNN picks its kernels from the CPU it finds at run time, so the same
// binary runs AVX2, AVX-512 and AMX code on the machines that have them.
// It also holds the policy for a native bf16 primitive that oneDNN refuses to build for a
// shape: under training.cpu_kernels auto the op runs on the emulated path instead (bf16 widened
// to fp32, oneDNN's fp32 kernel, the result rounded once: the oracle's values bit for bit), and
// the refusal is recorded once per shape; under native it is an error naming the op, the shape
// and oneDNN's reason.
#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace mantissa::cpu {

class OneDnnRuntime {
public:
    // `fallBack`: whether a refused native bf16 primitive falls back to the emulated path.
    explicit OneDnnRuntime(bool fallBack = true);

    dnnl::engine& engine() { return m_engine; }
    dnnl::stream& stream() { return m_stream; }

    // Records that `family` ("bf16 matmul") ran on oneDNN's implementation `impl`.
    void noteImplementation(const std::string& family, const std::string& impl);
    // "bf16 matmul: brg:avx512_core_bf16; fp32 matmul: brg:avx512_core", families in order.
    std::string implementations() const;

    bool fallsBack() const { return m_fallBack; }
    // Records that oneDNN refused `what` ("bf16 matmul 64x32 by 32x16") for `reason` and that it
    // ran on the emulated path instead; a shape is recorded once, however often it runs.
    void noteFallback(const std::string& what, const std::string& reason);
    // One entry per refused shape, in order:
    // "bf16 matmul 64x32 by 32x16, which oneDNN refused: <oneDNN's reason>".
    std::vector<std::string> fallbacks() const;

    // Called where a primitive of `family` is about to be built: throws dnnl::error, as oneDNN
    // does when it refuses a primitive, for a family a test named in refuseForTesting. oneDNN
    // 2.6 builds every shape the engine asks for on the CPUs it runs on, so tests make the
    // refusal happen here to drive the real fallback path.
    void checkRefusal(const std::string& family) const;
    void refuseForTesting(const std::string& family);

private:
    dnnl::engine m_engine;
    dnnl::stream m_stream;
    mutable std::mutex m_mutex;
    std::map<std::string, std::set<std::string>> m_used;
    bool m_fallBack;
    std::set<std::string> m_fallbacks;
    std::set<std::string> m_refused; // families refused for tests
};

// Appends max(0, x) to a primitive's post-ops: a ReLU that follows a matrix product or a
// convolution, applied to its fp32 result inside the kernel, before the one rounding. Rounding
// to nearest keeps the sign and 0, so the bits are those of rounding first and then a ReLU
// (activationForward's, which also makes a NaN 0, as oneDNN's max with 0 does).
void appendRelu(dnnl::post_ops& ops);
// Whether a primitive's kernel (its impl_info_str: "brg:avx512_core", "jit:avx512_core") applies
// that post-op as max(x, 0), the ReLU's bits: oneDNN's JIT kernels do, with +0 for a negative x
// and 0 for a NaN; its GEMM-based and reference kernels compute x * 0 for x <= 0, which is -0
// for a negative x and NaN for a NaN (relu_epilogue_test found the -0s), so for those the
// caller applies the ReLU itself after the kernel.
bool appliesReluExactly(const std::string& implementation);

// "2.6.3"
std::string oneDnnVersion();
// The instruction set oneDNN dispatches to on this CPU ("avx512_core_bf16"), after any
// ONEDNN_MAX_CPU_ISA limit in the environment.
std::string oneDnnIsaName();
// Whether oneDNN's kernels here multiply bf16 natively (avx512_bf16 or AMX-BF16).
bool oneDnnHasNativeBf16();

} // namespace mantissa::cpu
