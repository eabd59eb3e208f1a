#pragma once
// Host-side helpers that describe tensors to the multi-tensor kernels (kernels.h), and the
// content keys under which DescriptorCache keeps their device copies.
#include "engine/backend/backend.h"
#include "engine/backend/cuda/kernels.h"
#include "engine/util/check.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace mantissa::cuda {

inline TensorRef refOf(const Tensor& t) { return {const_cast<void*>(t.data()), t.numel(), t.dtype()}; }

inline std::int64_t largest(const std::vector<TensorRef>& refs)
{
    std::int64_t n = 0;
    for (const TensorRef& r : refs)
        n = std::max(n, r.n);
    return n;
}

// The unscale kernels' one array: the gradients, then their fp32 outputs.
inline std::vector<TensorRef> unscaleRefs(std::span<const Tensor* const> grads, std::span<Tensor* const> fp32Grads)
{
    MANTISSA_ASSERT(grads.size() == fp32Grads.size());
    std::vector<TensorRef> refs;
    refs.reserve(grads.size() * 2);
    for (const Tensor* g : grads)
        refs.push_back(refOf(*g));
    for (Tensor* out : fp32Grads) {
        MANTISSA_ASSERT(out->dtype() == DType::F32);
        refs.push_back(refOf(*out));
    }
    return refs;
}

// The fields, not the structs' bytes: padding is indeterminate and would make equal arrays
// look different.
inline void appendKey(std::string& key, const TensorRef& r)
{
    const auto address = reinterpret_cast<std::uintptr_t>(r.data);
    const auto type = static_cast<std::uint8_t>(r.dtype);
    key.append(reinterpret_cast<const char*>(&address), sizeof address);
    key.append(reinterpret_cast<const char*>(&r.n), sizeof r.n);
    key.append(reinterpret_cast<const char*>(&type), sizeof type);
}

inline std::string keyOf(const std::vector<TensorRef>& refs)
{
    std::string key(1, 'T');
    for (const TensorRef& r : refs)
        appendKey(key, r);
    return key;
}

inline std::string keyOf(const std::vector<SlotRef>& slots)
{
    std::string key(1, 'S');
    for (const SlotRef& s : slots) {
        for (const TensorRef* r : {&s.master, &s.grad, &s.state1, &s.state2, &s.working, &s.compensation})
            appendKey(key, *r);
        key.push_back(s.decay ? '1' : '0');
        key.append(reinterpret_cast<const char*>(&s.index), sizeof s.index);
    }
    return key;
}

} // namespace mantissa::cuda
