#include "engine/tensor/tensor.h"

#include "engine/numerics/conversions.h"
#include "engine/util/check.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace mantissa {

namespace {

// Training allocates the same activation sizes every step. Large blocks from malloc come
// from mmap and are returned with munmap, so every step would fault in fresh zeroed pages;
// keeping freed blocks by size makes the steady state allocation-free.
class HostBlockPool {
public:
    void* take(std::size_t rounded)
    {
        {
            std::lock_guard lock(m_mutex);
            auto it = m_free.find(rounded);
            if (it != m_free.end() && !it->second.empty()) {
                void* p = it->second.back();
                it->second.pop_back();
                return p;
            }
        }
        return std::aligned_alloc(64, rounded);
    }
    void give(void* p, std::size_t rounded)
    {
        std::lock_guard lock(m_mutex);
        m_free[rounded].push_back(p);
    }
    void trim()
    {
        std::lock_guard lock(m_mutex);
        for (auto& [size, blocks] : m_free)
            for (void* p : blocks)
                std::free(p);
        m_free.clear();
    }

private:
    std::mutex m_mutex;
    std::unordered_map<std::size_t, std::vector<void*>> m_free;
};

// Deliberately leaked: tensors held by static objects may die after any pool would.
HostBlockPool& hostPool()
{
    static auto* pool = new HostBlockPool;
    return *pool;
}

} // namespace

std::shared_ptr<Storage> allocateHostStorage(std::size_t bytes)
{
    auto storage = std::make_shared<Storage>();
    const std::size_t rounded = bytes == 0 ? 64 : ((bytes + 63) / 64) * 64;
    storage->data = hostPool().take(rounded);
    if (!storage->data)
        throw ResourceError("out of host memory: could not allocate " + std::to_string(bytes) + " bytes");
    storage->bytes = bytes;
    storage->release = [rounded](void* p) { hostPool().give(p, rounded); };
    return storage;
}

void trimHostMemoryPool() { hostPool().trim(); }

Tensor::Tensor(Shape shape, DType dtype, std::shared_ptr<Storage> storage)
    : m_shape(std::move(shape)), m_dtype(dtype), m_storage(std::move(storage))
{
    MANTISSA_ASSERT(!m_storage || m_storage->bytes >= bytes());
}

Tensor Tensor::zeros(const Shape& shape, DType dtype)
{
    const std::size_t bytes = static_cast<std::size_t>(shape.numel()) * dtypeSize(dtype);
    auto storage = allocateHostStorage(bytes);
    std::memset(storage->data, 0, bytes);
    return Tensor(shape, dtype, std::move(storage));
}

Tensor Tensor::fromFloats(const Shape& shape, const std::vector<float>& values, DType dtype)
{
    MANTISSA_ASSERT(static_cast<std::int64_t>(values.size()) == shape.numel());
    Tensor t = zeros(shape, dtype);
    t.copyFromFloats(values.data());
    return t;
}

float* Tensor::f32()
{
    MANTISSA_ASSERT(m_dtype == DType::F32);
    return static_cast<float*>(data());
}

const float* Tensor::f32() const
{
    MANTISSA_ASSERT(m_dtype == DType::F32);
    return static_cast<const float*>(data());
}

std::uint16_t* Tensor::u16()
{
    MANTISSA_ASSERT(m_dtype != DType::F32);
    return static_cast<std::uint16_t*>(data());
}

const std::uint16_t* Tensor::u16() const
{
    MANTISSA_ASSERT(m_dtype != DType::F32);
    return static_cast<const std::uint16_t*>(data());
}

Tensor Tensor::reshaped(const Shape& shape) const
{
    MANTISSA_ASSERT(shape.numel() == numel());
    return Tensor(shape, m_dtype, m_storage);
}

std::vector<float> Tensor::toFloats() const
{
    MANTISSA_ASSERT(device().kind == DeviceKind::Cpu);
    std::vector<float> out(static_cast<std::size_t>(numel()));
    widenToFloat(data(), m_dtype, out.data(), out.size());
    return out;
}

void Tensor::copyFromFloats(const float* values)
{
    MANTISSA_ASSERT(device().kind == DeviceKind::Cpu);
    narrowFromFloat(values, data(), static_cast<std::size_t>(numel()), m_dtype);
}

} // namespace mantissa
