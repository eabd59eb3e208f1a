#include "engine/backend/cpu/onednn_softmax.h"

namespace mantissa::cpu {

namespace {

dnnl::memory::desc rowsDesc(std::int64_t rows, std::int64_t cols)
{
    return dnnl::memory::desc({rows, cols}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
}

} // namespace

dnnl::softmax_forward::primitive_desc OneDnnSoftmax::forwardDesc(std::int64_t rows, std::int64_t cols)
{
    const dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_training, rowsDesc(rows, cols), 1);
    return {desc, m_runtime.engine()};
}

void OneDnnSoftmax::forward(std::int64_t rows, std::int64_t cols, float* data)
{
    if (rows == 0 || cols == 0)
        return;
    const Key key{rows, cols};
    auto found = m_forward.find(key);
    if (found == m_forward.end()) {
        const auto pd = forwardDesc(rows, cols);
        m_runtime.noteImplementation("fp32 softmax", pd.impl_info_str());
        found = m_forward.emplace(key, dnnl::softmax_forward(pd)).first;
    }
    const dnnl::memory buffer(rowsDesc(rows, cols), m_runtime.engine(), data);
    found->second.execute(m_runtime.stream(), {{DNNL_ARG_SRC, buffer}, {DNNL_ARG_DST, buffer}});
    m_runtime.stream().wait();
}

void OneDnnSoftmax::backward(std::int64_t rows, std::int64_t cols, const float* p, const float* dp, float* ds)
{
    if (rows == 0 || cols == 0)
        return;
    const Key key{rows, cols};
    const auto md = rowsDesc(rows, cols);
    auto found = m_backward.find(key);
    if (found == m_backward.end()) {
        const dnnl::softmax_backward::desc desc(md, md, 1);
        const dnnl::softmax_backward::primitive_desc pd(desc, m_runtime.engine(), forwardDesc(rows, cols));
        found = m_backward.emplace(key, dnnl::softmax_backward(pd)).first;
    }
    dnnl::engine& eng = m_runtime.engine();
    // oneDNN reads the probabilities and their gradient through these handles, never writing them.
    found->second.execute(m_runtime.stream(), {{DNNL_ARG_DST, dnnl::memory(md, eng, const_cast<float*>(p))},
                                               {DNNL_ARG_DIFF_DST, dnnl::memory(md, eng, const_cast<float*>(dp))},
                                               {DNNL_ARG_DIFF_SRC, dnnl::memory(md, eng, ds)}});
    m_runtime.stream().wait();
}

} // namespace mantissa::cpu
