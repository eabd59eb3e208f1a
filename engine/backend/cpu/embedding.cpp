// Token lookup, its scatter-add and the broadcast addition of learned positions. Token ids
// arrive as fp32 and are checked here, where they are read: an id outside the table is bad
// data (a corpus with more symbols than the vocabulary), which the user can cause and fix.
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/backend/cpu/row_chunks.h"
#include "engine/util/check.h"
#include "engine/util/format_number.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace mantissa {

namespace {

std::int64_t tokenAt(const float* ids, std::int64_t r, std::int64_t vocabulary)
{
    const float id = ids[r];
    if (!(id >= 0.0f && id < static_cast<float>(vocabulary) && id == std::floor(id)))
        throw DataError("token id " + formatNumber(id) + " at position " + std::to_string(r) +
                        " of the batch is not in the vocabulary [0, " + std::to_string(vocabulary) +
                        "); raise the embedding's \"vocabulary\" or check the data's encoding");
    return static_cast<std::int64_t>(id);
}

} // namespace

void CpuBackend::embeddingForward(const Tensor& ids, const Tensor& table, Tensor& y)
{
    MANTISSA_ASSERT(ids.dtype() == DType::F32 && table.shape().rank() == 2);
    const std::int64_t vocabulary = table.shape()[0], width = table.shape()[1];
    const std::int64_t rows = ids.numel();
    MANTISSA_ASSERT(y.numel() == rows * width);
    const float* id = ids.f32();
    for (std::int64_t r = 0; r < rows; ++r)
        tokenAt(id, r, vocabulary); // every id checked before anything is written
    if (table.dtype() == y.dtype()) {
        // A copy of stored values: no arithmetic, so none of the precision rules apply.
        const std::size_t rowBytes = static_cast<std::size_t>(width) * dtypeSize(y.dtype());
        const auto* src = static_cast<const std::byte*>(table.data());
        auto* dst = static_cast<std::byte*>(y.data());
        for (std::int64_t r = 0; r < rows; ++r)
            std::memcpy(dst + r * rowBytes, src + static_cast<std::int64_t>(id[r]) * rowBytes, rowBytes);
        return;
    }
    // Row by row: a 16-bit table row is widened straight into y's fp32 slot, an fp32 one is
    // copied there, and the slot is rounded into y.
    std::vector<float> scratch(static_cast<std::size_t>(width));
    const auto rowFloats = static_cast<std::size_t>(width);
    for (std::int64_t r = 0; r < rows; ++r) {
        const auto begin = static_cast<std::size_t>(r * width);
        float* slot = cpu::floatSlot(y, begin, scratch.data());
        const float* row = cpu::floatsOf(table, static_cast<std::size_t>(id[r]) * rowFloats, rowFloats, slot);
        if (row != slot)
            std::memcpy(slot, row, rowFloats * sizeof(float));
        cpu::storeFloats(y, begin, rowFloats, slot);
    }
}

void CpuBackend::embeddingBackward(const Tensor& ids, const Tensor& dy, Tensor& dtable, bool accumulate)
{
    MANTISSA_ASSERT(ids.dtype() == DType::F32 && dtable.shape().rank() == 2);
    const std::int64_t vocabulary = dtable.shape()[0], width = dtable.shape()[1];
    const std::int64_t rows = ids.numel();
    MANTISSA_ASSERT(dy.numel() == rows * width);
    for (std::int64_t r = 0; r < rows; ++r)
        tokenAt(ids.f32(), r, vocabulary); // checked here: an exception cannot leave the loop's parallel region
    cpu::FloatOutput fdt(dtable, accumulate);
    float* out = fdt.data();
    if (!accumulate)
        std::fill_n(out, fdt.size(), 0.0f);
    // Rows in order, one thread (blocks of dy widened in cache, in order): a token that appears
    // many times sums its rows in a fixed order, so the gradient does not depend on the thread count.
    cpu::forRowBlocks<1, 0>(rows, width, cpu::rowsPerBlock(width), {&dy}, {}, false,
                            [&](auto in, auto, std::int64_t first, std::int64_t count) {
                                for (std::int64_t i = 0; i < count; ++i) {
                                    const auto token = static_cast<std::int64_t>(ids.f32()[first + i]);
                                    const float* g = in[0] + i * width;
                                    float* dst = out + token * width;
                                    for (std::int64_t c = 0; c < width; ++c)
                                        dst[c] += g[c];
                                }
                            });
    fdt.commit();
}

void CpuBackend::addBroadcast(const Tensor& x, const Tensor& table, Tensor& y, std::int64_t period)
{
    MANTISSA_ASSERT(x.numel() == y.numel() && period >= 1 && x.numel() % period == 0 && period <= table.numel());
    // The table is small (one sample's values); x and y go a block of samples at a time.
    cpu::FloatInput ft(table);
    const float* add = ft.data();
    const std::int64_t samples = x.numel() / period;
    cpu::forRowBlocks<1, 1>(samples, period, cpu::rowsPerBlock(period), {&x}, {&y}, true,
                            [&](auto in, auto out, std::int64_t, std::int64_t count) {
                                for (std::int64_t s = 0; s < count; ++s)
                                    for (std::int64_t i = 0; i < period; ++i)
                                        out[0][s * period + i] = in[0][s * period + i] + add[i];
                            });
}

void CpuBackend::addBroadcastBackward(const Tensor& dy, Tensor& dtable, std::int64_t period)
{
    MANTISSA_ASSERT(period >= 1 && dy.numel() % period == 0 && period <= dtable.numel());
    cpu::FloatOutput fdt(dtable);
    float* out = fdt.data();
    std::fill_n(out, fdt.size(), 0.0f);
    // Samples in order into double sums (blocks of dy widened in cache, in order on one
    // thread): the result does not depend on the thread count.
    std::vector<double> sums(static_cast<std::size_t>(period), 0.0);
    const std::int64_t samples = dy.numel() / period;
    cpu::forRowBlocks<1, 0>(samples, period, cpu::rowsPerBlock(period), {&dy}, {}, false,
                            [&](auto in, auto, std::int64_t, std::int64_t count) {
                                for (std::int64_t s = 0; s < count; ++s)
                                    for (std::int64_t i = 0; i < period; ++i)
                                        sums[static_cast<std::size_t>(i)] += in[0][s * period + i];
                            });
    for (std::int64_t i = 0; i < period; ++i)
        out[i] = static_cast<float>(sums[static_cast<std::size_t>(i)]);
    fdt.commit();
}

} // namespace mantissa
