#include "engine/backend/cpu/cpu_backend.h"

#include "engine/backend/cpu/onednn_conv.h"
#include "engine/backend/cpu/onednn_gelu.h"
#include "engine/backend/cpu/onednn_matmul.h"
#include "engine/backend/cpu/onednn_runtime.h"
#include "engine/backend/cpu/onednn_softmax.h"
#include "engine/backend/cpu/openmp_wait_policy.h"
#include "engine/numerics/conversions.h"
#include "engine/util/check.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <omp.h>

namespace mantissa {

std::unique_ptr<Backend> makeCpuBackend(int threads) { return makeCpuBackend(CpuOptions{threads}); }

std::unique_ptr<Backend> makeCpuBackend(const CpuOptions& options) { return std::make_unique<CpuBackend>(options); }

namespace {

// threads 0: the user's OMP_NUM_THREADS where set (its first level, as in "4,2"), else every
// core. Processes that share a machine (test shards, one rank per core) say their share there;
// each taking every core made a 16-core GPU server's parity shards crawl, 138 s for 200 steps.
int defaultThreads()
{
    if (const char* setting = std::getenv("OMP_NUM_THREADS"); setting && *setting) {
        const int threads = std::atoi(setting);
        if (threads > 0)
            return threads;
    }
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

} // namespace

CpuBackend::CpuBackend(const CpuOptions& options)
    : m_threads(options.threads > 0 ? options.threads : defaultThreads()), m_threadsBefore(omp_get_max_threads()),
      m_plan(cpu::planCpuKernels(options.kernels)),
      m_onednn(std::make_unique<cpu::OneDnnRuntime>(options.kernels != CpuKernels::Native)),
      m_matmul(std::make_unique<cpu::OneDnnMatmul>(*m_onednn)), m_conv(std::make_unique<cpu::OneDnnConv>(*m_onednn)),
      m_gelu(std::make_unique<cpu::OneDnnGelu>(*m_onednn)), m_softmax(std::make_unique<cpu::OneDnnSoftmax>(*m_onednn))
{
    // oneDNN (built on OpenMP) and our own loops share one OpenMP team: one budget, so that
    // neither oversubscribes the cores while the other waits.
    omp_set_num_threads(m_threads);
}

CpuBackend::~CpuBackend() { omp_set_num_threads(m_threadsBefore); }

std::string CpuBackend::name() const
{
    return "cpu (oneDNN " + cpu::oneDnnVersion() + " " + cpu::oneDnnIsaName() + ", " + std::to_string(m_threads) +
           (m_threads == 1 ? " thread" : " threads") + (conversionsAreVectorised() ? ", F16C" : "") + ")";
}

std::string CpuBackend::kernelPaths() const
{
    const std::string used = m_onednn->implementations();
    std::string fellBack; // one line per shape a native kernel was refused for
    for (const std::string& refusal : m_onednn->fallbacks())
        fellBack += "\nran emulated: " + refusal;
    return "bf16: " + m_plan.bf16Path + "\nfp16: " + m_plan.fp16Path + "\nOpenMP waits: " + cpu::openMpWaitPolicy() +
           (used.empty() ? std::string() : "\noneDNN kernels used: " + used) + fellBack +
           (m_ownBlockScaledKernelUsed
                ? "\nblock-scaled bf16 GEMM: Mantissa's avx512_bf16 kernel (K-chunk sums promoted from registers)"
                : "");
}

bool CpuBackend::supports(Op, DType) const
{
    return true; // every op runs in every dtype: 16-bit inputs are widened, results rounded
}

Tensor CpuBackend::empty(const Shape& shape, DType dtype)
{
    const std::size_t bytes = static_cast<std::size_t>(shape.numel()) * dtypeSize(dtype);
    auto storage = allocateHostStorage(bytes);
    countLive(*storage);
    return Tensor(shape, dtype, std::move(storage));
}

void CpuBackend::countLive(Storage& storage)
{
    const std::size_t bytes = storage.bytes;
    const std::size_t live = m_liveBytes.fetch_add(bytes) + bytes;
    std::size_t peak = m_peakBytes.load();
    while (live > peak && !m_peakBytes.compare_exchange_weak(peak, live)) {}
    // Count the bytes back out when the storage dies. The backend outlives its tensors
    // (the Trainer owns both and destroys tensors first).
    auto* liveCounter = &m_liveBytes;
    storage.release = [liveCounter, bytes, poolRelease = std::move(storage.release)](void* p) {
        liveCounter->fetch_sub(bytes);
        poolRelease(p);
    };
}

void CpuBackend::fill(Tensor& t, float value)
{
    const auto n = static_cast<std::size_t>(t.numel());
    if (t.dtype() == DType::F32) {
        std::fill_n(t.f32(), n, value);
        return;
    }
    const float rounded = roundToDType(value, t.dtype());
    std::uint16_t bits;
    narrowFromFloat(&rounded, &bits, 1, t.dtype());
    std::fill_n(t.u16(), n, bits);
}

void CpuBackend::upload(const float* host, Tensor& dst)
{
    narrowFromFloat(host, dst.data(), static_cast<std::size_t>(dst.numel()), dst.dtype());
}

void CpuBackend::download(const Tensor& src, float* host)
{
    widenToFloat(src.data(), src.dtype(), host, static_cast<std::size_t>(src.numel()));
}

TensorStats CpuBackend::tensorStats(const Tensor& t, DType target, float histogramScale)
{
    MANTISSA_ASSERT(t.device().kind == DeviceKind::Cpu);
    const auto n = static_cast<std::size_t>(t.numel());
    if (t.dtype() == DType::F32)
        return measureValues(t.f32(), n, target, histogramScale);
    return measure16BitValues(t.u16(), n, t.dtype(), target, histogramScale);
}

void CpuBackend::cast(const Tensor& src, Tensor& dst)
{
    MANTISSA_ASSERT(src.numel() == dst.numel());
    const auto n = static_cast<std::size_t>(src.numel());
    if (src.dtype() == dst.dtype()) {
        if (src.data() != dst.data())
            std::memcpy(dst.data(), src.data(), src.bytes());
        return;
    }
    if (src.dtype() == DType::F32) {
        narrowFromFloat(src.f32(), dst.data(), n, dst.dtype());
    } else if (dst.dtype() == DType::F32) {
        widenToFloat(src.data(), src.dtype(), dst.f32(), n);
    } else { // fp16 <-> bf16 goes through fp32, which holds both exactly
        std::vector<float> tmp(n);
        widenToFloat(src.data(), src.dtype(), tmp.data(), n);
        narrowFromFloat(tmp.data(), dst.data(), n, dst.dtype());
    }
}

} // namespace mantissa
