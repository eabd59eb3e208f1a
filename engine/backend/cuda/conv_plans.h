#pragma once
// cuDNN convolution plans, one per (geometry, data type): the tensor, filter and
// convolution descriptors and the algorithm chosen for each direction, found once by
// timing (cudnnFind*) and cached, since the shapes of a training run repeat every step.
// Algorithms are chosen among those within the workspace limit and, for the backward
// passes, deterministic ones, so that a run repeats bit for bit. fp32 convolutions use
// FMA math (true fp32) unless TF32 is allowed.
#include "engine/backend/cuda_options.h"
#include "engine/backend/geometry.h"
#include "engine/numerics/dtype.h"

#include <cudnn.h>

#include <map>
#include <memory>
#include <tuple>

namespace mantissa::cuda {

enum class ConvDirection { Forward, BackwardData, BackwardFilter };

struct ConvPlan {
    cudnnTensorDescriptor_t x = nullptr, y = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    bool found[3] = {false, false, false};
    bool usable[3] = {false, false, false}; // false: cuDNN has no algorithm; widen to fp32
    int algorithm[3] = {0, 0, 0};
    cudnnMathType_t math[3] = {CUDNN_DEFAULT_MATH, CUDNN_DEFAULT_MATH, CUDNN_DEFAULT_MATH};
    std::size_t workspace[3] = {0, 0, 0};
    ConvPlan() = default;
    ConvPlan(const ConvPlan&) = delete;
    ConvPlan& operator=(const ConvPlan&) = delete;
    ~ConvPlan();
};

class ConvPlans {
public:
    ConvPlans(cudnnHandle_t handle, const CudaOptions& options, bool bf16Supported);

    // Whether cuDNN convolves `dtype` natively on this GPU (else callers widen to fp32).
    bool native(DType dtype) const;
    // The plan for `g` in `dtype`, with the algorithm for `direction` found on first use.
    // Returns nullptr when cuDNN has no algorithm for it (callers then widen to fp32).
    // A first use while the handle's stream records a graph throws: the search runs kernels.
    const ConvPlan* plan(const ConvGeometry& g, DType dtype, ConvDirection direction);

private:
    using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                           std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                           std::int64_t, std::int64_t, int>;
    void describe(ConvPlan& plan, const ConvGeometry& g, DType dtype) const;
    void find(ConvPlan& plan, DType dtype, ConvDirection direction) const;

    cudnnHandle_t m_handle;
    CudaOptions m_options;
    bool m_bf16;
    std::map<Key, std::unique_ptr<ConvPlan>> m_plans;
};

} // namespace mantissa::cuda
