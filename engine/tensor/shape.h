#pragma once
// A tensor shape: a short list of extents, outermost first (N, C, H, W for images).
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace mantissa {

class Shape {
public:
    Shape() = default;
    Shape(std::initializer_list<std::int64_t> dims) : m_dims(dims) {}
    explicit Shape(std::vector<std::int64_t> dims) : m_dims(std::move(dims)) {}

    int rank() const { return static_cast<int>(m_dims.size()); }
    std::int64_t operator[](int i) const { return m_dims[static_cast<std::size_t>(i)]; }
    std::int64_t& operator[](int i) { return m_dims[static_cast<std::size_t>(i)]; }
    std::int64_t numel() const;
    // Elements per leading index: numel() / dims[0]; the per-sample size for batched shapes.
    std::int64_t perSample() const;
    const std::vector<std::int64_t>& dims() const { return m_dims; }
    // "[128, 32, 28, 28]"
    std::string toString() const;
    // The same shape with the batch extent replaced.
    Shape withBatch(std::int64_t batch) const;

    friend bool operator==(const Shape&, const Shape&) = default;

private:
    std::vector<std::int64_t> m_dims;
};

// A per-sample shape with the batch extent in front: [batch, perSample...].
Shape batchedShape(std::int64_t batch, const Shape& perSample);

} // namespace mantissa
