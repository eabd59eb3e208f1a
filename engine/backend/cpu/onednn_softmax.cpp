#include "engine/backend/cpu/onednn_softmax.h"

#include "engine/util/check.h"

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

void OneDnnSoftmax::prepare(std::int64_t rows, std::int64_t cols)
{
    if (rows == 0 || cols == 0)
        return;
    const Key key{rows, cols};
    if (m_forward.count(key))
        return;
    const auto pd = forwardDesc(rows, cols);
    const auto md = rowsDesc(rows, cols);
    const dnnl::softmax_backward::desc desc(md, md, 1);
    const dnnl::softmax_backward::primitive_desc backwardPd(desc, m_runtime.engine(), pd);
    // Concurrent executions of one primitive would share a scratchpad (see the header).
    MANTISSA_ASSERT(pd.scratchpad_desc().get_size() == 0 && backwardPd.scratchpad_desc().get_size() == 0);
    m_runtime.noteImplementation("fp32 softmax", pd.impl_info_str());
    m_forward.emplace(key, dnnl::softmax_forward(pd));
    m_backward.emplace(key, dnnl::softmax_backward(backwardPd));
}

void OneDnnSoftmax::forward(std::int64_t rows, std::int64_t cols, float* data) const
{
    if (rows == 0 || cols == 0)
        return;
    const auto found = m_forward.find({rows, cols});
    MANTISSA_ASSERT(found != m_forward.end()); // prepare() first
    dnnl::engine& eng = m_runtime.engine();
    dnnl::stream stream(eng); // a stream is not shared between threads
    const dnnl::memory buffer(rowsDesc(rows, cols), eng, data);
    found->second.execute(stream, {{DNNL_ARG_SRC, buffer}, {DNNL_ARG_DST, buffer}});
    stream.wait();
}

void OneDnnSoftmax::backward(std::int64_t rows, std::int64_t cols, const float* p, const float* dp, float* ds) const
{
    if (rows == 0 || cols == 0)
        return;
    const auto found = m_backward.find({rows, cols});
    MANTISSA_ASSERT(found != m_backward.end()); // prepare() first
    const auto md = rowsDesc(rows, cols);
    dnnl::engine& eng = m_runtime.engine();
    dnnl::stream stream(eng);
    // oneDNN reads the probabilities and their gradient through these handles, never writing them.
    found->second.execute(stream, {{DNNL_ARG_DST, dnnl::memory(md, eng, const_cast<float*>(p))},
                                   {DNNL_ARG_DIFF_DST, dnnl::memory(md, eng, const_cast<float*>(dp))},
                                   {DNNL_ARG_DIFF_SRC, dnnl::memory(md, eng, ds)}});
    stream.wait();
}

} // namespace mantissa::cpu
