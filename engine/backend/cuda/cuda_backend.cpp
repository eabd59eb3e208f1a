// CudaBackend: memory, transfers, and the ops that map one-to-one onto Mantissa's kernels.
// GEMM lives in cublas_gemm.cpp, convolution in cudnn_conv.cpp.
#include "engine/backend/cuda/cuda_backend.h"

#include "engine/backend/cuda/conv_plans.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/descriptor_cache.h"
#include "engine/backend/cuda/device_memory.h"
#include "engine/backend/cuda/fp8_gemm.h"
#include "engine/backend/cuda/fp8_operands.h"
#include "engine/backend/cuda/host_read.h"
#include "engine/backend/cuda/kernels.h"
#include "engine/backend/cuda/tensor_refs.h"
#include "engine/backend/cuda/upload_staging.h"
#include "engine/numerics/conversions.h"
#include "engine/util/check.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace mantissa::cuda {

namespace {

std::string versionText(int v) // CUDA's 13000 -> "13.0"
{
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string describeDevice(int device)
{
    cudaDeviceProp prop{};
    checkCuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    const std::size_t cudnn = cudnnGetVersion();
    return "cuda:" + std::to_string(device) + " (" + prop.name + ", sm_" + std::to_string(prop.major) +
           std::to_string(prop.minor) + ", " + std::to_string(prop.totalGlobalMem >> 30) + " GiB, driver " +
           versionText(driver) + ", CUDA " + versionText(runtime) + ", cuDNN " + std::to_string(cudnn / 10000) + "." +
           std::to_string((cudnn % 10000) / 100) + "." + std::to_string(cudnn % 100) + ")";
}

// Byte offsets of CudaBackend::Results inside m_results (and of their mirror in m_pinned).
constexpr std::size_t kLossSumAt = 0, kCorrectAt = 8, kSumOfSquaresAt = 16, kFirstNonFiniteAt = 24, kAbsMaxAt = 28,
                      kClipFactorAt = 32, kClipSkipAt = 36, kTensorStatsAt = 64,
                      kResultBytes = kTensorStatsAt + ((sizeof(DeviceTensorStats) + 63) / 64) * 64;

// cuBLAS's recommended workspace (cublasSetWorkspace): 32 MiB on Hopper and newer, 4 MiB
// before. Given one, cuBLAS takes no memory of its own, in a graph capture or out of it.
std::size_t cublasWorkspaceBytes(int computeMajor) { return (computeMajor >= 9 ? 32u : 4u) << 20; }

} // namespace

CudaBackend::CudaBackend(int device, const CudaOptions& options)
    : m_device(device), m_options(options), m_name(describeDevice(device)), m_memory(DeviceMemory::create(device))
{
    cudaDeviceProp prop{};
    checkCuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    m_bf16TensorCores = prop.major >= 8;
    checkCublas(cublasCreate(&m_cublas), "cublasCreate");
    checkCublas(cublasSetStream(m_cublas, stream()), "cublasSetStream");
    // Split-K GEMMs with a 16-bit C may otherwise sum their partial products in 16 bits;
    // tensor-core semantics are fp32 accumulation all the way, rounded once.
    checkCublas(cublasSetMathMode(m_cublas, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION), "cublasSetMathMode");
    const std::size_t workspace = cublasWorkspaceBytes(prop.major);
    m_cublasWorkspace = empty(Shape{static_cast<std::int64_t>(workspace / 4)}, DType::F32);
    checkCublas(cublasSetWorkspace(m_cublas, m_cublasWorkspace.data(), workspace), "cublasSetWorkspace");
    checkCudnn(cudnnCreate(&m_cudnn), "cudnnCreate");
    checkCudnn(cudnnSetStream(m_cudnn, stream()), "cudnnSetStream");
    m_conv = std::make_unique<ConvPlans>(m_cudnn, options, m_bf16TensorCores);
    m_descriptors = std::make_unique<DescriptorCache>(m_memory);
    m_fp8Operands = std::make_shared<Fp8Operands>();
    m_memory->setReleaseListener([operands = m_fp8Operands](void* data) { operands->forget(data); });
    m_fp8 = std::make_unique<Fp8Matmul>(m_memory, m_fp8Operands, options.fp8Gemm, prop.major, prop.minor,
                                        m_cublasWorkspace.data(), workspace);
    // Everything a step writes to outside its tensors exists from here on, at fixed addresses.
    m_results = empty(Shape{static_cast<std::int64_t>(kResultBytes / 4)}, DType::F32);
    auto* base = static_cast<char*>(m_results.data());
    m_out.lossSum = reinterpret_cast<double*>(base + kLossSumAt);
    m_out.correct = reinterpret_cast<unsigned long long*>(base + kCorrectAt);
    m_out.sumOfSquares = reinterpret_cast<double*>(base + kSumOfSquaresAt);
    m_out.firstNonFinite = reinterpret_cast<int*>(base + kFirstNonFiniteAt);
    m_out.absMax = reinterpret_cast<float*>(base + kAbsMaxAt);
    m_out.clipFactor = reinterpret_cast<float*>(base + kClipFactorAt);
    m_out.clipSkip = reinterpret_cast<float*>(base + kClipSkipAt);
    m_out.tensorStats = reinterpret_cast<DeviceTensorStats*>(base + kTensorStatsAt);
    checkCuda(cudaMallocHost(&m_pinned, kResultBytes), "cudaMallocHost");
    m_readBuffers = std::make_shared<PinnedPool>();
    m_uploads = std::make_unique<UploadStaging>(m_readBuffers);
}

CudaBackend::~CudaBackend()
{
    cudaStreamSynchronize(stream());
    m_uploads.reset();
    m_conv.reset();
    m_fp8.reset();
    m_descriptors.reset();
    m_results = {};
    if (m_pinned)
        cudaFreeHost(m_pinned);
    if (m_cudnn)
        cudnnDestroy(m_cudnn);
    if (m_cublas)
        cublasDestroy(m_cublas);
}

std::string CudaBackend::kernelPaths() const { return m_fp8->paths(); }

cudaStream_t CudaBackend::stream() const { return m_memory->stream(); }

void CudaBackend::synchronize() { checkCuda(cudaStreamSynchronize(stream()), "cudaStreamSynchronize"); }

void CudaBackend::checkLaunch(const char* what) { checkCuda(cudaGetLastError(), what); }

bool CudaBackend::supports(Op op, DType) const
{
    // Every op but one runs in every dtype: what cuDNN lacks (bf16 convolutions before sm_80,
    // mixed input and output types) goes through exact fp32 widening (see cudnn_conv.cpp).
    // Synchronised batch norm sums its statistics on the host between passes: not built for
    // the device kernels, which compute a batch's statistics in one launch.
    return op != Op::BatchNormAcrossRanks;
}

Tensor CudaBackend::empty(const Shape& shape, DType dtype)
{
    return Tensor(shape, dtype, m_memory->allocate(static_cast<std::size_t>(shape.numel()) * dtypeSize(dtype)));
}

void CudaBackend::fill(Tensor& t, float value)
{
    launchFill(t.data(), t.dtype(), t.numel(), value, stream());
    checkLaunch("fill");
}

void CudaBackend::upload(const float* host, Tensor& dst)
{
    refuseWhileCapturing(stream(), "upload cannot be captured: it copies from host memory that a replay could not "
                                   "read again; upload the step's inputs between replays, outside the captured body");
    // Rounded on the host (the same conversions as the CPU backend) straight into pinned
    // memory, then copied without waiting (upload_staging.h).
    const auto n = static_cast<std::size_t>(dst.numel());
    const std::size_t bytes = n * dtypeSize(dst.dtype());
    const DType type = dst.dtype();
    m_uploads->upload(
        dst.data(), bytes,
        [&](void* block) {
            if (type == DType::F32)
                std::memcpy(block, host, bytes);
            else
                narrowFromFloat(host, static_cast<std::uint16_t*>(block), n, type);
        },
        stream());
}

void CudaBackend::download(const Tensor& src, float* host)
{
    refuseWhileCapturing(stream(), "download cannot be captured: it waits for the device and reads the result on "
                                   "the host");
    const auto n = static_cast<std::size_t>(src.numel());
    if (src.dtype() == DType::F32) {
        checkCuda(cudaMemcpyAsync(host, src.data(), n * sizeof(float), cudaMemcpyDeviceToHost, stream()), "download");
        synchronize();
        return;
    }
    std::vector<std::uint16_t> narrow(n);
    checkCuda(cudaMemcpyAsync(narrow.data(), src.data(), n * 2, cudaMemcpyDeviceToHost, stream()), "download");
    synchronize();
    widenToFloat(narrow.data(), src.dtype(), host, n);
}

void CudaBackend::cast(const Tensor& src, Tensor& dst)
{
    MANTISSA_ASSERT(src.numel() == dst.numel());
    launchCast(src.data(), src.dtype(), dst.data(), dst.dtype(), src.numel(), stream());
    checkLaunch("cast");
}

std::size_t CudaBackend::peakBytes() const { return m_memory->peakBytes(); }

void CudaBackend::resetPeakBytes() { m_memory->resetPeak(); }

TensorStats CudaBackend::tensorStats(const Tensor& t, DType target, float histogramScale)
{
    refuseWhileCapturing(stream(), "tensorStats cannot be captured: it returns its counts to the host");
    launchTensorStats(t.data(), t.dtype(), t.numel(), roundingThresholds(target), histogramScale, m_out.tensorStats,
                      stream());
    checkLaunch("tensorStats");
    DeviceTensorStats d;
    std::memcpy(&d, fetch(m_out.tensorStats, sizeof d, "tensorStats result"), sizeof d);
    TensorStats s;
    s.count = t.numel();
    s.amax = std::bit_cast<float>(d.amaxBits);
    s.zeros = static_cast<std::int64_t>(d.zeros);
    s.underflow = static_cast<std::int64_t>(d.underflow);
    s.subnormal = static_cast<std::int64_t>(d.subnormal);
    s.overflow = static_cast<std::int64_t>(d.overflow);
    s.nonFinite = static_cast<std::int64_t>(d.nonFinite);
    s.nan = static_cast<std::int64_t>(d.nan);
    for (std::size_t b = 0; b < s.histogram.size(); ++b)
        s.histogram[b] = static_cast<std::uint32_t>(d.histogram[b]);
    return s;
}

const void* CudaBackend::fetch(const void* src, std::size_t bytes, const char* what)
{
    MANTISSA_ASSERT(bytes <= kResultBytes);
    checkCuda(cudaMemcpyAsync(m_pinned, src, bytes, cudaMemcpyDeviceToHost, stream()), what);
    synchronize();
    return m_pinned;
}

const TensorRef* CudaBackend::deviceRefs(const std::vector<TensorRef>& refs)
{
    return static_cast<const TensorRef*>(
        m_descriptors->find(keyOf(refs), refs.data(), refs.size() * sizeof(TensorRef), "multi-tensor descriptors"));
}

const SlotRef* CudaBackend::deviceSlots(std::span<const OptimizerSlot> slots, std::int64_t* maxElements)
{
    std::vector<SlotRef> refs;
    refs.reserve(slots.size());
    *maxElements = 0;
    const auto optional = [](const Tensor* t) { return t ? refOf(*t) : TensorRef{}; };
    for (const OptimizerSlot& s : slots) {
        MANTISSA_ASSERT(s.master && s.grad);
        refs.push_back({refOf(*s.master), refOf(*s.grad), optional(s.state1), optional(s.state2), optional(s.working),
                        s.decay, optional(s.compensation), s.index});
        *maxElements = std::max(*maxElements, s.master->numel());
    }
    return static_cast<const SlotRef*>(
        m_descriptors->find(keyOf(refs), refs.data(), refs.size() * sizeof(SlotRef), "optimizer descriptors"));
}

void CudaBackend::rowBiasGrad(const Tensor& dy, Tensor& dbias)
{
    const std::int64_t cols = dbias.numel();
    MANTISSA_ASSERT(cols > 0 && dy.numel() % cols == 0);
    launchRowBiasGrad(dy.data(), dy.dtype(), dbias.data(), dbias.dtype(), dy.numel() / cols, cols, stream());
    checkLaunch("rowBiasGrad");
}

namespace {

struct BatchNormExtent {
    std::int64_t batch, channels, plane;
};

BatchNormExtent extentOf(const Tensor& x)
{
    const Shape& s = x.shape();
    MANTISSA_ASSERT(s.rank() == 2 || s.rank() == 4);
    const std::int64_t plane = s.rank() == 4 ? s[2] * s[3] : 1;
    return {s[0], s[1], plane};
}

// Device memory for the plane kernels' sums and per-channel terms, from the backend's pool;
// it goes back when the caller's step no longer needs it (the stream orders the reuse).
Tensor batchNormScratch(Backend& backend, const BatchNormExtent& e)
{
    const std::int64_t bytes = batchNormScratchBytes(e.batch, e.channels, e.plane);
    return backend.empty(Shape{std::max<std::int64_t>(1, (bytes + 3) / 4)}, DType::F32);
}

} // namespace

void CudaBackend::batchNormForward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                                   BatchNormState& state, bool training, float momentum, float epsilon)
{
    MANTISSA_ASSERT(state.acrossRanks == nullptr); // supports(Op::BatchNormAcrossRanks) is false
    const BatchNormExtent e = extentOf(x);
    Tensor scratch = batchNormScratch(*this, e);
    launchBatchNormForward(x.data(), x.dtype(), gamma.f32(), beta.f32(), y.data(), y.dtype(), state.runningMean.f32(),
                           state.runningVar.f32(), state.savedMean.f32(), state.savedInvStd.f32(), e.batch, e.channels,
                           e.plane, training, momentum, epsilon, scratch.data(), stream());
    checkLaunch("batchNormForward");
}

void CudaBackend::batchNormBackward(const Tensor& x, const Tensor& dy, const Tensor& gamma, const BatchNormState& state,
                                    Tensor& dx, Tensor& dgamma, Tensor& dbeta)
{
    MANTISSA_ASSERT(state.acrossRanks == nullptr);
    const BatchNormExtent e = extentOf(x);
    Tensor scratch = batchNormScratch(*this, e);
    launchBatchNormBackward(x.data(), x.dtype(), dy.data(), dy.dtype(), gamma.f32(), state.savedMean.f32(),
                            state.savedInvStd.f32(), dx.data(), dx.dtype(), dgamma.f32(), dbeta.f32(), e.batch,
                            e.channels, e.plane, scratch.data(), stream());
    checkLaunch("batchNormBackward");
}

void CudaBackend::activationForward(Activation kind, const Tensor& x, Tensor& y)
{
    MANTISSA_ASSERT(x.numel() == y.numel());
    launchActivationForward(kind, x.data(), x.dtype(), y.data(), y.dtype(), x.numel(), stream());
    checkLaunch("activationForward");
}

void CudaBackend::activationBackward(Activation kind, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx)
{
    MANTISSA_ASSERT(dy.numel() == dx.numel());
    launchActivationBackward(kind, x.data(), x.dtype(), y.data(), y.dtype(), dy.data(), dy.dtype(), dx.data(),
                             dx.dtype(), dx.numel(), stream());
    checkLaunch("activationBackward");
}

void CudaBackend::pointwiseForward(const PointwiseFunction& f, const Tensor& x, Tensor& y)
{
    MANTISSA_ASSERT(x.numel() == y.numel());
    launchPointwiseForward(f, x.data(), x.dtype(), y.data(), y.dtype(), x.numel(), stream());
    checkLaunch("pointwiseForward");
}

void CudaBackend::pointwiseBackward(const PointwiseFunction& f, const Tensor& x, const Tensor& dy, Tensor& dx)
{
    MANTISSA_ASSERT(x.numel() == dy.numel() && dy.numel() == dx.numel());
    launchPointwiseBackward(f, x.data(), x.dtype(), dy.data(), dy.dtype(), dx.data(), dx.dtype(), dx.numel(), stream());
    checkLaunch("pointwiseBackward");
}

void CudaBackend::maxPoolForward(const Tensor& x, Tensor& y, Tensor& argmax, const PoolGeometry& g)
{
    MANTISSA_ASSERT(argmax.dtype() == DType::F32);
    MANTISSA_ASSERT(g.inH * g.inW <= (std::int64_t{1} << 24)); // offsets are stored exactly as floats
    launchMaxPoolForward(x.data(), x.dtype(), y.data(), y.dtype(), argmax.f32(), g, stream());
    checkLaunch("maxPoolForward");
}

void CudaBackend::maxPoolBackward(const Tensor& dy, const Tensor& argmax, Tensor& dx, const PoolGeometry& g)
{
    launchMaxPoolBackward(dy.data(), dy.dtype(), argmax.f32(), dx.data(), dx.dtype(), g, stream());
    checkLaunch("maxPoolBackward");
}

void CudaBackend::avgPoolForward(const Tensor& x, Tensor& y, const PoolGeometry& g)
{
    launchAvgPoolForward(x.data(), x.dtype(), y.data(), y.dtype(), g, stream());
    checkLaunch("avgPoolForward");
}

void CudaBackend::avgPoolBackward(const Tensor& dy, Tensor& dx, const PoolGeometry& g)
{
    launchAvgPoolBackward(dy.data(), dy.dtype(), dx.data(), dx.dtype(), g, stream());
    checkLaunch("avgPoolBackward");
}

void CudaBackend::dropoutForward(const Tensor& x, Tensor& y, Tensor& mask, float p, std::uint64_t seed,
                                 std::uint64_t counter)
{
    MANTISSA_ASSERT(p >= 0.0f && p < 1.0f && mask.dtype() == DType::F32);
    MANTISSA_ASSERT(x.numel() <= (std::int64_t{1} << 32)); // indices are hashed as 32 bits
    launchDropoutForward(x.data(), x.dtype(), y.data(), y.dtype(), mask.f32(), x.numel(), p,
                         dropout::maskKey(seed, counter), stream());
    checkLaunch("dropoutForward");
}

void CudaBackend::dropoutBackward(const Tensor& dy, const Tensor& mask, Tensor& dx)
{
    launchDropoutBackward(dy.data(), dy.dtype(), mask.f32(), dx.data(), dx.dtype(), dx.numel(), stream());
    checkLaunch("dropoutBackward");
}

void CudaBackend::add(const Tensor& a, const Tensor& b, Tensor& out)
{
    MANTISSA_ASSERT(a.numel() == b.numel() && a.numel() == out.numel());
    launchAdd(a.data(), a.dtype(), b.data(), b.dtype(), out.data(), out.dtype(), out.numel(), stream());
    checkLaunch("add");
}

LossResult CudaBackend::softmaxCrossEntropy(const Tensor& logits, const Tensor& labels, float lossScale,
                                            Tensor* dlogits)
{
    refuseWhileCapturing(stream(), "softmaxCrossEntropy with a host loss scale cannot be captured: it returns the "
                                   "loss to the host; use the StepScalars overload");
    const std::int64_t batch = logits.shape()[0];
    const std::int64_t classes = logits.numel() / batch;
    MANTISSA_ASSERT(labels.numel() == batch && labels.dtype() == DType::F32);
    launchSoftmaxCrossEntropy(logits.data(), logits.dtype(), labels.f32(), batch, classes, hostScalar(lossScale),
                              dlogits ? dlogits->data() : nullptr, dlogits ? dlogits->dtype() : DType::F32,
                              m_out.lossSum, m_out.correct, stream());
    checkLaunch("softmaxCrossEntropy");
    const auto* host = static_cast<const char*>(fetch(m_out.lossSum, 16, "softmaxCrossEntropy result"));
    double loss = 0;
    unsigned long long right = 0;
    std::memcpy(&loss, host, 8);
    std::memcpy(&right, host + (kCorrectAt - kLossSumAt), 8);
    return {static_cast<float>(loss / static_cast<double>(batch)), static_cast<std::int64_t>(right)};
}

LossResult CudaBackend::meanSquaredError(const Tensor& predictions, const Tensor& targets, float lossScale,
                                         Tensor* dpredictions)
{
    refuseWhileCapturing(stream(), "meanSquaredError with a host loss scale cannot be captured: it returns the "
                                   "loss to the host; use the StepScalars overload");
    const std::int64_t count = predictions.numel();
    MANTISSA_ASSERT(targets.numel() == count && targets.dtype() == DType::F32);
    launchMeanSquaredError(predictions.data(), predictions.dtype(), targets.f32(), count, hostScalar(lossScale),
                           dpredictions ? dpredictions->data() : nullptr,
                           dpredictions ? dpredictions->dtype() : DType::F32, m_out.lossSum, m_out.correct, stream());
    checkLaunch("meanSquaredError");
    const auto* host = static_cast<const char*>(fetch(m_out.lossSum, 16, "meanSquaredError result"));
    double loss = 0;
    std::memcpy(&loss, host, 8);
    return {static_cast<float>(loss / static_cast<double>(count)), 0};
}

} // namespace mantissa::cuda
