#pragma once
// A tensor: shape, dtype, device and a shared, owned buffer. Nothing clever:
// fp16 and bf16 tensors really hold 16-bit words, so memory figures are honest.
#include "engine/numerics/dtype.h"
#include "engine/tensor/shape.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace mantissa {

enum class DeviceKind : std::uint8_t { Cpu, Cuda };

struct Device {
    DeviceKind kind = DeviceKind::Cpu;
    int index = 0;
    friend bool operator==(const Device&, const Device&) = default;
};

// Raw memory owned by one device; freed through the deleter of whoever allocated it.
struct Storage {
    void* data = nullptr;
    std::size_t bytes = 0;
    Device device;
    std::function<void(void*)> release;
    Storage() = default;
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;
    ~Storage()
    {
        if (release && data)
            release(data);
    }
};

class Tensor {
public:
    Tensor() = default;
    Tensor(Shape shape, DType dtype, std::shared_ptr<Storage> storage);

    // A zero-filled host tensor (64-byte aligned).
    static Tensor zeros(const Shape& shape, DType dtype = DType::F32);
    // A host tensor holding `values` (converted to `dtype` with round-to-nearest-even).
    static Tensor fromFloats(const Shape& shape, const std::vector<float>& values, DType dtype = DType::F32);

    bool defined() const { return static_cast<bool>(m_storage); }
    const Shape& shape() const { return m_shape; }
    DType dtype() const { return m_dtype; }
    Device device() const { return m_storage ? m_storage->device : Device{}; }
    std::int64_t numel() const { return m_shape.numel(); }
    std::size_t bytes() const { return static_cast<std::size_t>(numel()) * dtypeSize(m_dtype); }

    void* data() { return m_storage ? m_storage->data : nullptr; }
    const void* data() const { return m_storage ? m_storage->data : nullptr; }
    float* f32();
    const float* f32() const;
    std::uint16_t* u16();
    const std::uint16_t* u16() const;

    // The same buffer seen with another shape of equal element count.
    Tensor reshaped(const Shape& shape) const;
    // True when both tensors share a buffer.
    bool sharesStorageWith(const Tensor& other) const { return m_storage && m_storage == other.m_storage; }

    // Host-side helpers for tests, checkpoints and the CLI (host tensors only).
    std::vector<float> toFloats() const;
    void copyFromFloats(const float* values);

private:
    Shape m_shape;
    DType m_dtype = DType::F32;
    std::shared_ptr<Storage> m_storage;
};

// Allocates `bytes` of 64-byte-aligned host memory from a pool of reused blocks.
std::shared_ptr<Storage> allocateHostStorage(std::size_t bytes);
// Returns the pool's free blocks to the system (after a run, for example).
void trimHostMemoryPool();

} // namespace mantissa
