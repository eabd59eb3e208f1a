// 2-D convolution (NCHW) as im2col + one OpenBLAS sgemm per chunk of images, with the
// backend's GEMM semantics: inputs are already in the compute type, products accumulate in
// fp32, each output is rounded to its own dtype once.
//
// The column matrix of a chunk is [K = C*kH*kW, B*P] (P = outH*outW): one large GEMM per
// chunk keeps sgemm efficient where a GEMM per image (64 x 196 x 288 in the cnn workload)
// would not. The GEMM result is [OC, B*P] while y is [B, OC, P], so one pass scatters it into
// y, adding the bias and rounding on the way: that pass replaces the separate bias and
// rounding passes rather than adding one. 16-bit inputs are widened a plane at a time inside
// im2col, never as a whole-tensor copy; fp32 inputs are read in place. Chunks keep the
// scratch near kScratchFloats whatever the batch size.
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_slice.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/backend/cpu/reductions.h"
#include "engine/util/check.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include <cblas.h>

namespace mantissa {

namespace {

constexpr std::int64_t kScratchFloats = std::int64_t{1} << 22; // 16 MiB of column and GEMM scratch
// Below this many values a loop runs on one thread: waking the team costs more than it saves
// (the threshold the other CPU ops use).
constexpr std::int64_t kParallelValues = 65536;

// Uninitialised fp32 scratch, allocated as tensor storage is, so that host pooling applies to it.
class Scratch {
public:
    explicit Scratch(std::int64_t floats)
        : m_storage(allocateHostStorage(static_cast<std::size_t>(floats) * sizeof(float)))
    {}
    float* get() { return static_cast<float*>(m_storage->data); }

private:
    std::shared_ptr<Storage> m_storage;
};

// Images per chunk so that `floatsPerImage` of scratch each stays near kScratchFloats;
// chunks are balanced so that the last one is not a sliver.
std::int64_t imagesPerChunk(std::int64_t n, std::int64_t floatsPerImage)
{
    const std::int64_t fit = std::max<std::int64_t>(1, kScratchFloats / floatsPerImage);
    const std::int64_t chunks = (n + fit - 1) / fit;
    return (n + chunks - 1) / chunks;
}

void sgemm(bool transA, bool transB, std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda,
           const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc)
{
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a,
                static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

// Output columns [lo, hi) whose input column ow*stride - pad + kw lies inside [0, inW).
void validColumns(const ConvGeometry& g, std::int64_t kw, std::int64_t& lo, std::int64_t& hi)
{
    const std::int64_t offset = kw - g.padW;
    lo = offset >= 0 ? 0 : (-offset + g.strideW - 1) / g.strideW;
    hi = g.inW - offset <= 0 ? 0 : std::min(g.outW, (g.inW - offset + g.strideW - 1) / g.strideW);
    lo = std::min(lo, hi);
}

// --- kernels --------------------------------------------------------------------------------

// The kH*kW rows of one input plane: rows[(kh*kW + kw) * ld + oh*outW + ow] = plane[ih, iw].
void im2colPlane(const float* plane, const ConvGeometry& g, float* rows, std::int64_t ld)
{
    for (std::int64_t kh = 0; kh < g.kH; ++kh) {
        for (std::int64_t kw = 0; kw < g.kW; ++kw) {
            float* row = rows + (kh * g.kW + kw) * ld;
            std::int64_t lo, hi;
            validColumns(g, kw, lo, hi);
            for (std::int64_t oh = 0; oh < g.outH; ++oh) {
                float* out = row + oh * g.outW;
                const std::int64_t ih = oh * g.strideH - g.padH + kh;
                if (ih < 0 || ih >= g.inH) {
                    std::fill_n(out, g.outW, 0.0f);
                    continue;
                }
                const float* in = plane + ih * g.inW;
                const std::int64_t offset = kw - g.padW; // iw = ow * strideW + offset
                std::fill_n(out, lo, 0.0f);
                if (g.strideW == 1 && hi > lo) {
                    std::memcpy(out + lo, in + lo + offset, static_cast<std::size_t>(hi - lo) * sizeof(float));
                } else {
                    for (std::int64_t ow = lo; ow < hi; ++ow)
                        out[ow] = in[ow * g.strideW + offset];
                }
                std::fill(out + hi, out + g.outW, 0.0f);
            }
        }
    }
}

// The adjoint of im2colPlane: plane[ih, iw] = sum of the column entries that copied it.
void col2imPlane(const float* rows, std::int64_t ld, const ConvGeometry& g, float* plane)
{
    std::fill_n(plane, g.inH * g.inW, 0.0f);
    for (std::int64_t kh = 0; kh < g.kH; ++kh) {
        for (std::int64_t kw = 0; kw < g.kW; ++kw) {
            const float* row = rows + (kh * g.kW + kw) * ld;
            std::int64_t lo, hi;
            validColumns(g, kw, lo, hi);
            for (std::int64_t oh = 0; oh < g.outH; ++oh) {
                const std::int64_t ih = oh * g.strideH - g.padH + kh;
                if (ih < 0 || ih >= g.inH)
                    continue;
                const float* in = row + oh * g.outW;
                float* out = plane + ih * g.inW;
                const std::int64_t offset = kw - g.padW;
                for (std::int64_t ow = lo; ow < hi; ++ow)
                    out[ow * g.strideW + offset] += in[ow];
            }
        }
    }
}

// --- launchers over a chunk of images [first, first + count) ---------------------------------

// col[K, count*P] from x.
void im2colChunk(const Tensor& x, const ConvGeometry& g, std::int64_t first, std::int64_t count, float* col)
{
    const std::int64_t planeSize = g.inH * g.inW;
    const std::int64_t p = g.outH * g.outW;
    const std::int64_t ld = count * p;
    const std::int64_t kk = g.kH * g.kW;
    const std::int64_t tasks = count * g.inChannels;
#pragma omp parallel if (kk * ld > kParallelValues)
    {
        std::vector<float> widened(x.dtype() == DType::F32 ? 0 : static_cast<std::size_t>(planeSize));
#pragma omp for schedule(static)
        for (std::int64_t t = 0; t < tasks; ++t) {
            const std::int64_t b = t / g.inChannels, c = t % g.inChannels;
            const float* plane =
                cpu::readFloats(x, ((first + b) * g.inChannels + c) * planeSize, planeSize, widened.data());
            im2colPlane(plane, g, col + c * kk * ld + b * p, ld);
        }
    }
}

// dx planes of the chunk from dcol[K, count*P].
void col2imChunk(const float* dcol, const ConvGeometry& g, std::int64_t first, std::int64_t count, Tensor& dx)
{
    const std::int64_t planeSize = g.inH * g.inW;
    const std::int64_t p = g.outH * g.outW;
    const std::int64_t ld = count * p;
    const std::int64_t kk = g.kH * g.kW;
    const std::int64_t tasks = count * g.inChannels;
#pragma omp parallel if (kk * ld > kParallelValues)
    {
        std::vector<float> plane(dx.dtype() == DType::F32 ? 0 : static_cast<std::size_t>(planeSize));
#pragma omp for schedule(static)
        for (std::int64_t t = 0; t < tasks; ++t) {
            const std::int64_t b = t / g.inChannels, c = t % g.inChannels;
            const std::int64_t offset = ((first + b) * g.inChannels + c) * planeSize;
            // fp32 dx is accumulated in place; a 16-bit one in fp32 and rounded once.
            float* target = dx.dtype() == DType::F32 ? dx.f32() + offset : plane.data();
            col2imPlane(dcol + c * kk * ld + b * p, ld, g, target);
            cpu::writeFloats(target, dx, offset, planeSize);
        }
    }
}

// rows[OC, count*P] from the chunk's images of an NCHW tensor [N, OC, P] (dy).
void gatherChunk(const Tensor& t, std::int64_t channels, std::int64_t p, std::int64_t first, std::int64_t count,
                 float* rows)
{
    const std::int64_t ld = count * p;
    const std::int64_t tasks = count * channels;
#pragma omp parallel for schedule(static) if (tasks * p > kParallelValues)
    for (std::int64_t task = 0; task < tasks; ++task) {
        const std::int64_t b = task / channels, c = task % channels;
        float* out = rows + c * ld + b * p;
        const float* in = cpu::readFloats(t, ((first + b) * channels + c) * p, p, out);
        if (in != out)
            std::memcpy(out, in, static_cast<std::size_t>(p) * sizeof(float));
    }
}

// y's chunk from rows[OC, count*P], adding the bias and rounding to y's dtype.
void scatterChunk(float* rows, const float* bias, const ConvGeometry& g, std::int64_t first, std::int64_t count,
                  Tensor& y)
{
    const std::int64_t p = g.outH * g.outW;
    const std::int64_t ld = count * p;
    const std::int64_t tasks = count * g.outChannels;
#pragma omp parallel for schedule(static) if (tasks * p > kParallelValues)
    for (std::int64_t task = 0; task < tasks; ++task) {
        const std::int64_t b = task / g.outChannels, c = task % g.outChannels;
        float* in = rows + c * ld + b * p;
        if (bias) {
            const float value = bias[c];
            for (std::int64_t i = 0; i < p; ++i)
                in[i] += value;
        }
        cpu::writeFloats(in, y, ((first + b) * g.outChannels + c) * p, p);
    }
}

void checkShapes(const Tensor& x, const Tensor& w, const Tensor& y, const ConvGeometry& g)
{
    MANTISSA_ASSERT(x.numel() == g.n * g.inChannels * g.inH * g.inW);
    MANTISSA_ASSERT(w.numel() == g.outChannels * g.inChannels * g.kH * g.kW);
    MANTISSA_ASSERT(y.numel() == g.n * g.outChannels * g.outH * g.outW);
    MANTISSA_ASSERT(g.outH == slidingOutput(g.inH, g.kH, g.strideH, g.padH) &&
                    g.outW == slidingOutput(g.inW, g.kW, g.strideW, g.padW) && g.outH > 0 && g.outW > 0);
}

} // namespace

// --- public ops -------------------------------------------------------------------------------

void CpuBackend::conv2dForward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, const ConvGeometry& g)
{
    checkShapes(x, w, y, g);
    MANTISSA_ASSERT(x.dtype() == w.dtype());
    MANTISSA_ASSERT(!bias || bias->numel() == g.outChannels);
    const std::int64_t k = g.inChannels * g.kH * g.kW;
    const std::int64_t p = g.outH * g.outW;
    cpu::FloatInput fw(w);
    std::optional<cpu::FloatInput> fb;
    if (bias)
        fb.emplace(*bias);
    const std::int64_t chunk = imagesPerChunk(g.n, (k + g.outChannels) * p);
    Scratch col(k * chunk * p);
    Scratch out(g.outChannels * chunk * p);
    for (std::int64_t first = 0; first < g.n; first += chunk) {
        const std::int64_t count = std::min(chunk, g.n - first);
        const std::int64_t ld = count * p;
        im2colChunk(x, g, first, count, col.get());
        sgemm(false, false, g.outChannels, ld, k, fw.data(), k, col.get(), ld, 0.0f, out.get(), ld);
        scatterChunk(out.get(), fb ? fb->data() : nullptr, g, first, count, y);
    }
}

void CpuBackend::conv2dBackwardData(const Tensor& dy, const Tensor& w, Tensor& dx, const ConvGeometry& g)
{
    checkShapes(dx, w, dy, g);
    MANTISSA_ASSERT(dy.dtype() == w.dtype());
    const std::int64_t k = g.inChannels * g.kH * g.kW;
    const std::int64_t p = g.outH * g.outW;
    cpu::FloatInput fw(w);
    const std::int64_t chunk = imagesPerChunk(g.n, (k + g.outChannels) * p);
    Scratch rows(g.outChannels * chunk * p);
    Scratch dcol(k * chunk * p);
    for (std::int64_t first = 0; first < g.n; first += chunk) {
        const std::int64_t count = std::min(chunk, g.n - first);
        const std::int64_t ld = count * p;
        gatherChunk(dy, g.outChannels, p, first, count, rows.get());
        // dcol[K, B*P] = W^T[K, OC] dy[OC, B*P]
        sgemm(true, false, k, ld, g.outChannels, fw.data(), k, rows.get(), ld, 0.0f, dcol.get(), ld);
        col2imChunk(dcol.get(), g, first, count, dx);
    }
}

void CpuBackend::conv2dBackwardFilter(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* dbias,
                                      const ConvGeometry& g)
{
    checkShapes(x, dw, dy, g);
    MANTISSA_ASSERT(x.dtype() == dy.dtype());
    MANTISSA_ASSERT(!dbias || dbias->numel() == g.outChannels);
    const std::int64_t k = g.inChannels * g.kH * g.kW;
    const std::int64_t p = g.outH * g.outW;
    // dw accumulates over every chunk in fp32 and is rounded once at the end, as one GEMM
    // with K = N*P would be.
    cpu::FloatOutput fdw(dw);
    std::vector<double> biasSums(static_cast<std::size_t>(g.outChannels), 0.0);
    const std::int64_t chunk = imagesPerChunk(g.n, (k + g.outChannels) * p);
    Scratch col(k * chunk * p);
    Scratch rows(g.outChannels * chunk * p);
    for (std::int64_t first = 0; first < g.n; first += chunk) {
        const std::int64_t count = std::min(chunk, g.n - first);
        const std::int64_t ld = count * p;
        im2colChunk(x, g, first, count, col.get());
        gatherChunk(dy, g.outChannels, p, first, count, rows.get());
        // dw[OC, K] += dy[OC, B*P] col^T[B*P, K]
        sgemm(false, true, g.outChannels, k, ld, rows.get(), ld, col.get(), ld, first == 0 ? 0.0f : 1.0f, fdw.data(),
              k);
        if (dbias) {
            const float* r = rows.get();
#pragma omp parallel for schedule(static) if (g.outChannels * ld > kParallelValues)
            for (std::int64_t c = 0; c < g.outChannels; ++c)
                biasSums[static_cast<std::size_t>(c)] += cpu::sumFloats(r + c * ld, ld);
        }
    }
    fdw.commit();
    if (dbias) {
        cpu::FloatOutput fdb(*dbias);
        for (std::int64_t c = 0; c < g.outChannels; ++c)
            fdb.data()[c] = static_cast<float>(biasSums[static_cast<std::size_t>(c)]);
        fdb.commit();
    }
}

} // namespace mantissa
