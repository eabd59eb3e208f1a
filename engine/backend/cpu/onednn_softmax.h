#pragma once
// Softmax over the rows of fp32 [rows, cols] blocks through oneDNN, forward in place and
// backward, vectorised: attention's fp32 softmax, where libm's scalar expf was a tenth of a
// transformer's step. The caller masks a causal row by writing -inf where a key is hidden
// (exp(-inf) = 0, exactly the probability it must get). Blocks run concurrently on the threads
// of an OpenMP team, each a few rows converted from and to 16-bit in cache (row_chunks.h):
// oneDNN runs a primitive on the calling thread inside a parallel region, a row's result does
// not depend on how many rows its block has, and these primitives need no scratchpad, which is
// the only state that executions of one primitive would share.
#include "engine/backend/cpu/onednn_runtime.h"

#include <cstdint>
#include <map>
#include <utility>

namespace mantissa::cpu {

class OneDnnSoftmax {
public:
    explicit OneDnnSoftmax(OneDnnRuntime& runtime) : m_runtime(runtime) {}

    // Builds the primitives for blocks of `rows` rows, before threads run them: the cache of
    // primitives is not thread-safe, running a built one is.
    void prepare(std::int64_t rows, std::int64_t cols);

    // data = softmax(data) along each row of a prepared block; any thread may call it.
    void forward(std::int64_t rows, std::int64_t cols, float* data) const;
    // ds = p * (dp - sum over the row of dp * p), over a prepared block; any thread may call it.
    void backward(std::int64_t rows, std::int64_t cols, const float* p, const float* dp, float* ds) const;

private:
    using Key = std::pair<std::int64_t, std::int64_t>;
    dnnl::softmax_forward::primitive_desc forwardDesc(std::int64_t rows, std::int64_t cols);

    OneDnnRuntime& m_runtime;
    std::map<Key, dnnl::softmax_forward> m_forward;
    std::map<Key, dnnl::softmax_backward> m_backward;
};

} // namespace mantissa::cpu
