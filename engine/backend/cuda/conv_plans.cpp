#include "engine/backend/cuda/conv_plans.h"

#include "engine/backend/cuda/cuda_check.h"

namespace mantissa::cuda {

namespace {

cudnnDataType_t cudnnTypeOf(DType dtype)
{
    switch (dtype) {
    case DType::F16: return CUDNN_DATA_HALF;
    case DType::BF16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
    }
}

int dim(std::int64_t v) { return static_cast<int>(v); }

// The first (fastest: cudnnFind sorts by time) result that ran, fits the workspace limit,
// uses an allowed math type and, when asked, is deterministic.
template <typename Perf>
const Perf* pick(const Perf* results, int count, std::size_t limit, bool fp32, bool tf32, bool deterministic)
{
    for (int i = 0; i < count; ++i) {
        const Perf& r = results[i];
        if (r.status != CUDNN_STATUS_SUCCESS || r.memory > limit)
            continue;
        if (deterministic && r.determinism != CUDNN_DETERMINISTIC)
            continue;
        // True fp32 means FMA math; tensor-op math on fp32 data is TF32.
        if (fp32 && !tf32 && r.mathType != CUDNN_FMA_MATH)
            continue;
        return &r;
    }
    return nullptr;
}

// Records the chosen algorithm of direction d; none leaves the direction unusable.
template <typename Perf>
void adopt(ConvPlan& plan, int d, const Perf* chosen)
{
    if (!chosen)
        return;
    plan.usable[d] = true;
    plan.algorithm[d] = chosen->algo;
    plan.math[d] = chosen->mathType;
    plan.workspace[d] = chosen->memory;
}

} // namespace

ConvPlan::~ConvPlan()
{
    if (x)
        cudnnDestroyTensorDescriptor(x);
    if (y)
        cudnnDestroyTensorDescriptor(y);
    if (w)
        cudnnDestroyFilterDescriptor(w);
    if (conv)
        cudnnDestroyConvolutionDescriptor(conv);
}

ConvPlans::ConvPlans(cudnnHandle_t handle, const CudaOptions& options, bool bf16Supported)
    : m_handle(handle), m_options(options), m_bf16(bf16Supported)
{}

bool ConvPlans::native(DType dtype) const { return dtype != DType::BF16 || m_bf16; }

void ConvPlans::describe(ConvPlan& plan, const ConvGeometry& g, DType dtype) const
{
    const cudnnDataType_t type = cudnnTypeOf(dtype);
    checkCudnn(cudnnCreateTensorDescriptor(&plan.x), "cudnnCreateTensorDescriptor");
    checkCudnn(cudnnCreateTensorDescriptor(&plan.y), "cudnnCreateTensorDescriptor");
    checkCudnn(cudnnCreateFilterDescriptor(&plan.w), "cudnnCreateFilterDescriptor");
    checkCudnn(cudnnCreateConvolutionDescriptor(&plan.conv), "cudnnCreateConvolutionDescriptor");
    checkCudnn(cudnnSetTensor4dDescriptor(plan.x, CUDNN_TENSOR_NCHW, type, dim(g.n), dim(g.inChannels), dim(g.inH),
                                          dim(g.inW)),
               "cudnnSetTensor4dDescriptor(x)");
    checkCudnn(cudnnSetTensor4dDescriptor(plan.y, CUDNN_TENSOR_NCHW, type, dim(g.n), dim(g.outChannels), dim(g.outH),
                                          dim(g.outW)),
               "cudnnSetTensor4dDescriptor(y)");
    checkCudnn(cudnnSetFilter4dDescriptor(plan.w, type, CUDNN_TENSOR_NCHW, dim(g.outChannels),
                                          dim(g.channelsPerGroup()), dim(g.kH), dim(g.kW)),
               "cudnnSetFilter4dDescriptor");
    // Accumulation in fp32 whatever the data type: tensor-core semantics.
    checkCudnn(cudnnSetConvolution2dDescriptor(plan.conv, dim(g.padH), dim(g.padW), dim(g.strideH), dim(g.strideW),
                                               dim(g.dilationH), dim(g.dilationW), CUDNN_CROSS_CORRELATION,
                                               CUDNN_DATA_FLOAT),
               "cudnnSetConvolution2dDescriptor");
    checkCudnn(cudnnSetConvolutionGroupCount(plan.conv, dim(g.groups)), "cudnnSetConvolutionGroupCount");
}

void ConvPlans::find(ConvPlan& plan, DType dtype, ConvDirection direction) const
{
    const auto d = static_cast<int>(direction);
    const bool fp32 = dtype == DType::F32;
    // The search only tries algorithms of the descriptor's math type family.
    checkCudnn(cudnnSetConvolutionMathType(plan.conv, fp32 && !m_options.tf32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH),
               "cudnnSetConvolutionMathType");
    constexpr int kMax = 16;
    int count = 0;
    const std::size_t limit = m_options.convWorkspaceBytes;
    plan.found[d] = true;
    switch (direction) {
    case ConvDirection::Forward: {
        cudnnConvolutionFwdAlgoPerf_t results[kMax];
        checkCudnn(
            cudnnFindConvolutionForwardAlgorithm(m_handle, plan.x, plan.w, plan.conv, plan.y, kMax, &count, results),
            "cudnnFindConvolutionForwardAlgorithm");
        // The forward pass has one writer per output element in every algorithm.
        adopt(plan, d, pick(results, count, limit, fp32, m_options.tf32, false));
        break;
    }
    case ConvDirection::BackwardData: {
        cudnnConvolutionBwdDataAlgoPerf_t results[kMax];
        checkCudnn(cudnnFindConvolutionBackwardDataAlgorithm(m_handle, plan.w, plan.y, plan.conv, plan.x, kMax, &count,
                                                             results),
                   "cudnnFindConvolutionBackwardDataAlgorithm");
        adopt(plan, d, pick(results, count, limit, fp32, m_options.tf32, true));
        break;
    }
    case ConvDirection::BackwardFilter: {
        cudnnConvolutionBwdFilterAlgoPerf_t results[kMax];
        checkCudnn(cudnnFindConvolutionBackwardFilterAlgorithm(m_handle, plan.x, plan.y, plan.conv, plan.w, kMax,
                                                               &count, results),
                   "cudnnFindConvolutionBackwardFilterAlgorithm");
        adopt(plan, d, pick(results, count, limit, fp32, m_options.tf32, true));
        break;
    }
    }
}

const ConvPlan* ConvPlans::plan(const ConvGeometry& g, DType dtype, ConvDirection direction)
{
    const Key key{g.n,    g.inChannels, g.inH,       g.inW,       g.outChannels,
                  g.kH,   g.kW,         g.strideH,   g.strideW,   g.padH,
                  g.padW, g.groups,     g.dilationH, g.dilationW, static_cast<int>(dtype)};
    std::unique_ptr<ConvPlan>& slot = m_plans[key];
    const auto d = static_cast<int>(direction);
    if (!slot || !slot->found[d]) {
        // cudnnFind* times every algorithm by running it, with memory of its own: work that
        // must not end up in a graph, and that a graph could not repeat anyway.
        cudaStream_t stream = nullptr;
        checkCudnn(cudnnGetStream(m_handle, &stream), "cudnnGetStream");
        refuseWhileCapturing(stream, "a convolution shape met for the first time cannot be captured: cuDNN's "
                                     "algorithm search runs and times kernels; run the step once before capturing it");
    }
    if (!slot) {
        auto fresh = std::make_unique<ConvPlan>();
        describe(*fresh, g, dtype);
        slot = std::move(fresh);
    }
    if (!slot->found[d])
        find(*slot, dtype, direction);
    if (!slot->usable[d])
        return nullptr;
    // The descriptor carries the math type of the algorithm about to run.
    checkCudnn(cudnnSetConvolutionMathType(slot->conv, slot->math[d]), "cudnnSetConvolutionMathType");
    return slot.get();
}

} // namespace mantissa::cuda
