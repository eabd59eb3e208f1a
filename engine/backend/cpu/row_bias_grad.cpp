// dbias[c] = sum over rows of dy[r, c]: one fp32 sum per column, the rows added in order from
// 0, so that the bits depend neither on the thread count nor on how dy is stored. The threads
// split the columns, and each reads its slice of every row where it lies: bf16 bits are
// widened as they are read (bf16_bits.h), which gives the sums a widened copy of dy would give
// without writing and reading that copy (a linear layer's backward calls this once per layer,
// on a dy as large as its output).
#include "engine/backend/cpu/bf16_bits.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/util/check.h"

#include <omp.h>
#include <vector>

namespace mantissa {

namespace {

// Columns [begin, end) of `rows` rows of `cols` words, summed down each column into `sums`.
template <typename Word>
void columnSums(const Word* dy, std::int64_t rows, std::int64_t cols, std::int64_t begin, std::int64_t end,
                float* __restrict sums)
{
    const std::int64_t slice = end - begin;
    for (std::int64_t c = 0; c < slice; ++c)
        sums[c] = 0.0f;
    for (std::int64_t r = 0; r < rows; ++r) {
        const Word* __restrict row = dy + r * cols + begin;
        for (std::int64_t c = 0; c < slice; ++c)
            sums[c] += cpu::widened(row[c]);
    }
}

// Splits the columns between the threads in slices of whole 64-byte lines of sums. Below a
// million values a call takes a few microseconds on one thread (6 us for vit-tiny's 2048x64
// bf16), which a parallel region's fork and join would eat, and on a loaded machine a region
// waits for a descheduled thread for far longer: one thread sums them.
constexpr std::int64_t kParallelValues = std::int64_t{1} << 20;

template <typename Word>
void parallelColumnSums(const Word* dy, std::int64_t rows, std::int64_t cols, float* out)
{
#pragma omp parallel if (rows * cols > kParallelValues && cols >= 32)
    {
        const std::int64_t threads = omp_get_num_threads(), thread = omp_get_thread_num();
        const std::int64_t lines = (cols + 15) / 16;
        const std::int64_t begin = std::min(cols, lines * thread / threads * 16);
        const std::int64_t end = std::min(cols, lines * (thread + 1) / threads * 16);
        if (end > begin) {
            std::vector<float> sums(static_cast<std::size_t>(end - begin));
            columnSums(dy, rows, cols, begin, end, sums.data());
            for (std::int64_t c = begin; c < end; ++c)
                out[c] = sums[static_cast<std::size_t>(c - begin)];
        }
    }
}

} // namespace

void CpuBackend::rowBiasGrad(const Tensor& dy, Tensor& dbias)
{
    const std::int64_t cols = dbias.numel();
    MANTISSA_ASSERT(cols > 0 && dy.numel() % cols == 0);
    const std::int64_t rows = dy.numel() / cols;
    cpu::FloatOutput fdb(dbias);
    if (dy.dtype() == DType::BF16) {
        parallelColumnSums(reinterpret_cast<const cpu::Bf16Bits*>(dy.u16()), rows, cols, fdb.data());
    } else {
        // fp32 in place; other 16-bit types widened whole first (the emulated fp16 path).
        cpu::FloatInput fdy(dy);
        parallelColumnSums(fdy.data(), rows, cols, fdb.data());
    }
    fdb.commit();
}

} // namespace mantissa
