#include "engine/backend/cpu/onednn_gelu.h"

#include "engine/util/check.h"

#include <string>

namespace mantissa::cpu {

namespace {

dnnl::memory::desc vectorDesc(bool bf16, std::int64_t n)
{
    using dt = dnnl::memory::data_type;
    return dnnl::memory::desc({n}, bf16 ? dt::bf16 : dt::f32, dnnl::memory::format_tag::a);
}

} // namespace

dnnl::eltwise_forward::primitive_desc OneDnnGelu::forwardDesc(bool bf16, std::int64_t n)
{
    const dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_training, dnnl::algorithm::eltwise_gelu_erf,
                                           vectorDesc(bf16, n));
    return {desc, m_runtime.engine()};
}

bool OneDnnGelu::runsBf16()
{
    if (!m_bf16Vectorised) {
        try {
            m_bf16Vectorised = std::string(forwardDesc(true, 4096).impl_info_str()).find("ref") == std::string::npos;
        } catch (const dnnl::error&) {
            m_bf16Vectorised = false;
        }
    }
    return *m_bf16Vectorised;
}

void OneDnnGelu::prepare(bool bf16, std::int64_t n)
{
    const Key key{bf16, n};
    if (n == 0 || m_forward.count(key))
        return;
    const auto pd = forwardDesc(bf16, n);
    const auto md = vectorDesc(bf16, n);
    const dnnl::eltwise_backward::desc desc(dnnl::algorithm::eltwise_gelu_erf, md, md);
    const dnnl::eltwise_backward::primitive_desc backwardPd(desc, m_runtime.engine(), pd);
    // Concurrent executions of one primitive would share a scratchpad.
    MANTISSA_ASSERT(pd.scratchpad_desc().get_size() == 0 && backwardPd.scratchpad_desc().get_size() == 0);
    m_runtime.noteImplementation(bf16 ? "bf16 gelu" : "fp32 gelu", pd.impl_info_str());
    m_forward.emplace(key, dnnl::eltwise_forward(pd));
    m_backward.emplace(key, dnnl::eltwise_backward(backwardPd));
}

void OneDnnGelu::forward(bool bf16, std::int64_t n, const void* x, void* y) const
{
    if (n == 0)
        return;
    const auto found = m_forward.find({bf16, n});
    MANTISSA_ASSERT(found != m_forward.end()); // prepare() first
    const auto md = vectorDesc(bf16, n);
    dnnl::engine& eng = m_runtime.engine();
    dnnl::stream stream(eng); // a stream is not shared between threads
    // oneDNN reads the source through this handle and never writes it.
    found->second.execute(stream, {{DNNL_ARG_SRC, dnnl::memory(md, eng, const_cast<void*>(x))},
                                   {DNNL_ARG_DST, dnnl::memory(md, eng, y)}});
    stream.wait();
}

void OneDnnGelu::backward(bool bf16, std::int64_t n, const void* x, const void* dy, void* dx) const
{
    if (n == 0)
        return;
    const auto found = m_backward.find({bf16, n});
    MANTISSA_ASSERT(found != m_backward.end()); // prepare() first
    const auto md = vectorDesc(bf16, n);
    dnnl::engine& eng = m_runtime.engine();
    dnnl::stream stream(eng);
    found->second.execute(stream, {{DNNL_ARG_SRC, dnnl::memory(md, eng, const_cast<void*>(x))},
                                   {DNNL_ARG_DIFF_DST, dnnl::memory(md, eng, const_cast<void*>(dy))},
                                   {DNNL_ARG_DIFF_SRC, dnnl::memory(md, eng, dx)}});
    stream.wait();
}

} // namespace mantissa::cpu
