#pragma once
// Softmax over the rows of an fp32 [rows, cols] buffer through oneDNN, forward in place and
// backward, vectorised and spread over the OpenMP team: attention's fp32 softmax, where
// libm's scalar expf was a tenth of a transformer's step. The caller masks a causal row by
// writing -inf where a key is hidden (exp(-inf) = 0, exactly the probability it must get).
#include "engine/backend/cpu/onednn_runtime.h"

#include <cstdint>
#include <map>
#include <utility>

namespace mantissa::cpu {

class OneDnnSoftmax {
public:
    explicit OneDnnSoftmax(OneDnnRuntime& runtime) : m_runtime(runtime) {}

    // data = softmax(data) along each row.
    void forward(std::int64_t rows, std::int64_t cols, float* data);
    // ds = p * (dp - sum over the row of dp * p).
    void backward(std::int64_t rows, std::int64_t cols, const float* p, const float* dp, float* ds);

private:
    using Key = std::pair<std::int64_t, std::int64_t>;
    dnnl::softmax_forward::primitive_desc forwardDesc(std::int64_t rows, std::int64_t cols);

    OneDnnRuntime& m_runtime;
    std::map<Key, dnnl::softmax_forward> m_forward;
    std::map<Key, dnnl::softmax_backward> m_backward;
};

} // namespace mantissa::cpu
