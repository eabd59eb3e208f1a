#include "engine/onnx/batch_layout.h"

#include "engine/util/check.h"

#include <string>

namespace mantissa::onnx_import {

std::vector<std::int64_t> expandedPerSample(const std::vector<std::int64_t>& dims, const BatchLayout& layout,
                                            std::int64_t batch)
{
    if (batch < 1)
        throw ConfigError("a batch of " + std::to_string(batch) + " holds no sample");
    if (layout.axis >= dims.size() || layout.outer < 1 || dims[layout.axis] % (layout.outer * batch) != 0)
        throw ConfigError("the batch of " + std::to_string(batch) + " does not lie in axis " +
                          std::to_string(layout.axis) + " of a value of " + Shape(dims).toString());
    std::vector<std::int64_t> expanded(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(layout.axis));
    expanded.push_back(layout.outer);
    expanded.push_back(dims[layout.axis] / (layout.outer * batch));
    expanded.insert(expanded.end(), dims.begin() + static_cast<std::ptrdiff_t>(layout.axis) + 1, dims.end());
    return expanded;
}

Shape perSampleShape(const std::vector<std::int64_t>& dims, const BatchLayout& layout, std::int64_t batch)
{
    std::vector<std::int64_t> expanded = expandedPerSample(dims, layout, batch);
    std::vector<std::int64_t> shape(expanded.begin(), expanded.begin() + static_cast<std::ptrdiff_t>(layout.axis));
    for (std::size_t i = layout.axis; i < layout.axis + 2; ++i)
        if (expanded[i] != 1)
            shape.push_back(expanded[i]);
    shape.insert(shape.end(), expanded.begin() + static_cast<std::ptrdiff_t>(layout.axis) + 2, expanded.end());
    return Shape(shape);
}

std::int64_t elementsBeforeBatch(const std::vector<std::int64_t>& dims, const BatchLayout& layout, std::int64_t batch)
{
    const std::vector<std::int64_t> expanded = expandedPerSample(dims, layout, batch);
    std::int64_t before = 1;
    for (std::size_t i = 0; i <= layout.axis; ++i)
        before *= expanded[i];
    return before;
}

std::optional<BatchLayout> reshapedLayout(std::int64_t elementsBefore, const std::vector<std::int64_t>& outDims,
                                          std::int64_t batch)
{
    std::int64_t before = 1; // the product of the axes before `axis`
    for (std::size_t axis = 0; axis < outDims.size(); ++axis) {
        if (elementsBefore % before != 0)
            return std::nullopt;
        const std::int64_t outer = elementsBefore / before;
        if (outDims[axis] % (outer * batch) == 0)
            return BatchLayout{axis, outer};
        before *= outDims[axis];
    }
    return std::nullopt;
}

} // namespace mantissa::onnx_import
