// Tensor-core semantics on the CPU: inputs are already in the compute type (16-bit
// tensors hold exactly representable values), sgemm multiplies and accumulates in fp32,
// and the result is rounded to C's storage type.
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/util/check.h"

#include <cblas.h>

namespace mantissa {

namespace {

// c = alpha * op(a) op(b) + beta * c, all fp32, row-major.
void sgemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
           const float* b, float beta, float* c)
{
    const auto transA = ta == Transpose::Yes ? CblasTrans : CblasNoTrans;
    const auto transB = tb == Transpose::Yes ? CblasTrans : CblasNoTrans;
    const auto lda = static_cast<blasint>(ta == Transpose::Yes ? m : k);
    const auto ldb = static_cast<blasint>(tb == Transpose::Yes ? k : n);
    cblas_sgemm(CblasRowMajor, transA, transB, static_cast<blasint>(m), static_cast<blasint>(n),
                static_cast<blasint>(k), alpha, a, lda, b, ldb, beta, c, static_cast<blasint>(n));
}

} // namespace

void CpuBackend::gemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                      const Tensor& a, const Tensor& b, float beta, Tensor& c)
{
    MANTISSA_ASSERT(a.numel() >= m * k && b.numel() >= k * n && c.numel() >= m * n);
    MANTISSA_ASSERT(a.dtype() == b.dtype());
    cpu::FloatInput fa(a);
    cpu::FloatInput fb(b);
    cpu::FloatOutput fc(c, beta != 0.0f);
    sgemm(ta, tb, m, n, k, alpha, fa.data(), fb.data(), beta, fc.data());
    fc.commit();
}

void CpuBackend::gemmRowBias(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
                             const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& c)
{
    MANTISSA_ASSERT(a.numel() >= m * k && b.numel() >= k * n && c.numel() >= m * n && bias.numel() == n);
    MANTISSA_ASSERT(a.dtype() == b.dtype());
    cpu::FloatInput fa(a);
    cpu::FloatInput fb(b);
    cpu::FloatInput fbias(bias);
    cpu::FloatOutput fc(c);
    sgemm(ta, tb, m, n, k, 1.0f, fa.data(), fb.data(), 0.0f, fc.data());
    // The bias joins the fp32 products before the one rounding in commit() (backend.h): the
    // products are summed first and the bias added after, as cuBLASLt's epilogue does.
    float* out = fc.data();
    const float* add = fbias.data();
#pragma omp parallel for schedule(static) if (m * n > 65536)
    for (std::int64_t r = 0; r < m; ++r) {
        float* row = out + r * n;
        for (std::int64_t col = 0; col < n; ++col)
            row[col] += add[col];
    }
    fc.commit();
}

void CpuBackend::rowBiasGrad(const Tensor& dy, Tensor& dbias)
{
    const std::int64_t cols = dbias.numel();
    const std::int64_t rows = dy.numel() / cols;
    cpu::FloatInput fdy(dy);
    cpu::FloatOutput fdb(dbias);
    float* out = fdb.data();
    const float* g = fdy.data();
    for (std::int64_t c = 0; c < cols; ++c)
        out[c] = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
        const float* row = g + r * cols;
        for (std::int64_t c = 0; c < cols; ++c)
            out[c] += row[c];
    }
    fdb.commit();
}

} // namespace mantissa
