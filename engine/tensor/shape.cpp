#include "engine/tensor/shape.h"

namespace mantissa {

std::int64_t Shape::numel() const
{
    std::int64_t n = 1;
    for (auto d : m_dims)
        n *= d;
    return n;
}

std::int64_t Shape::perSample() const
{
    if (m_dims.empty())
        return 1;
    std::int64_t n = 1;
    for (std::size_t i = 1; i < m_dims.size(); ++i)
        n *= m_dims[i];
    return n;
}

std::string Shape::toString() const
{
    std::string s = "[";
    for (std::size_t i = 0; i < m_dims.size(); ++i) {
        if (i)
            s += ", ";
        s += std::to_string(m_dims[i]);
    }
    return s + "]";
}

Shape batchedShape(std::int64_t batch, const Shape& perSample)
{
    std::vector<std::int64_t> dims{batch};
    dims.insert(dims.end(), perSample.dims().begin(), perSample.dims().end());
    return Shape(std::move(dims));
}

Shape Shape::withBatch(std::int64_t batch) const
{
    Shape s = *this;
    if (!s.m_dims.empty())
        s.m_dims[0] = batch;
    return s;
}

} // namespace mantissa
