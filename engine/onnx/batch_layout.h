#pragma once
// Where the batch lies in an ONNX value. The engine's graph keeps every value batch-first,
// [N, per-sample...], but an exported model may move the batch: PyTorch's multi-head attention
// transposes [N, T, C] to [T, N, C] and folds the heads into it, [T, N*H, dh] and [N*H, T, dh],
// and its output projection reads [T*N, C]. In ONNX's row-major order, the batch index of such
// a value always sits at one place: `outer` elements of each sample come before it in one axis
// `axis`, whose extent is outer * N * inner. The graph holds the same values batch-first,
// [N, dims before axis, outer, inner, dims after], so that a transpose which keeps the batch's
// place is a view, a reshape is always a view, and an op over trailing axes (a linear layer, a
// norm, a softmax) reads each sample's rows as they are.
#include "engine/tensor/shape.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace mantissa::onnx_import {

struct BatchLayout {
    std::size_t axis = 0;   // the ONNX axis that holds the batch
    std::int64_t outer = 1; // that axis's extent is outer * batch * inner

    bool batchFirst() const { return axis == 0 && outer == 1; }
    friend bool operator==(const BatchLayout&, const BatchLayout&) = default;
};

// `dims` (ONNX's shape, with the import's `batch`) split at the batch: the dims before `axis`,
// outer, inner, the dims after. Throws ConfigError where `axis` does not hold outer * batch.
std::vector<std::int64_t> expandedPerSample(const std::vector<std::int64_t>& dims, const BatchLayout& layout,
                                            std::int64_t batch);
// The graph value's per-sample shape: expandedPerSample without the outer and inner extents of
// 1, so that a batch-first value has ONNX's shape without its first dimension.
Shape perSampleShape(const std::vector<std::int64_t>& dims, const BatchLayout& layout, std::int64_t batch);
// The elements of one sample that come before the batch index in ONNX's order.
std::int64_t elementsBeforeBatch(const std::vector<std::int64_t>& dims, const BatchLayout& layout, std::int64_t batch);
// Where the batch lies after a reshape to `outDims`: the same number of elements before it (a
// reshape keeps the order); none where no axis of `outDims` can hold it.
std::optional<BatchLayout> reshapedLayout(std::int64_t elementsBefore, const std::vector<std::int64_t>& outDims,
                                          std::int64_t batch);

} // namespace mantissa::onnx_import
