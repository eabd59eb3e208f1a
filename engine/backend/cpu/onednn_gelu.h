#pragma once
// GELU (the erf form) through oneDNN's eltwise kernels: vectorised erf and exp where libm's
// scalar erff and expf took a third of a transformer's step. It computes in fp32 and rounds
// once into the output's type, as the engine's activations are defined; a bf16 tensor is read
// and written in place where oneDNN has a JIT bf16 kernel on this CPU (its reference kernel
// is slower than widening, so it is never used).
#include "engine/backend/cpu/onednn_runtime.h"

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

namespace mantissa::cpu {

class OneDnnGelu {
public:
    explicit OneDnnGelu(OneDnnRuntime& runtime) : m_runtime(runtime) {}

    // Whether oneDNN runs GELU on bf16 data with a vectorised kernel here.
    bool runsBf16();

    // Builds the forward and backward primitives for n values: before threads run them, as the
    // cache of primitives is not thread-safe (running a built one is; they need no scratchpad).
    void prepare(bool bf16, std::int64_t n);

    // y = gelu(x) over n values (prepared), both bf16 (`bf16`) or both fp32; any thread may call it.
    void forward(bool bf16, std::int64_t n, const void* x, void* y) const;
    // dx = dy * gelu'(x); all three bf16 (`bf16`) or all fp32; any thread may call it.
    void backward(bool bf16, std::int64_t n, const void* x, const void* dy, void* dx) const;

private:
    using Key = std::pair<bool, std::int64_t>;
    dnnl::eltwise_forward::primitive_desc forwardDesc(bool bf16, std::int64_t n);

    OneDnnRuntime& m_runtime;
    std::map<Key, dnnl::eltwise_forward> m_forward;
    std::map<Key, dnnl::eltwise_backward> m_backward;
    std::optional<bool> m_bf16Vectorised;
};

} // namespace mantissa::cpu
