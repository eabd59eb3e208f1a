#include "engine/numerics/fast_operand_quantizer.h"

#include "engine/numerics/fast_quantizer_simd.h"
#include "engine/numerics/fast_rounding.h"
#include "engine/numerics/stochastic_bits.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace mantissa {

namespace {

using fastq::Plan;

constexpr float kMaxFloat = std::numeric_limits<float>::max();
constexpr float kNvfp4ScaleRange = 448.0f * 6.0f; // E4M3 max times E2M1 max
constexpr float kNvfp4DecodeFactor = static_cast<float>(1.0 / (6.0 * 448.0));
// |x| bits at or above Inf's are a NaN or an Inf (fast_quantizer_simd.h's amaxBits).
constexpr std::uint32_t kInfinityBits = 0x7f800000u;
// Below this many values one thread does it all: waking the team costs more than it saves.
constexpr std::size_t kParallelFrom = std::size_t{1} << 15;
constexpr std::size_t kChunk = 4096; // values per work item of the per-tensor passes
constexpr std::size_t kLanes = 256;  // columns per work item when blocks run down the columns

FastResult outcome(bool finite, std::uint32_t lost)
{
    return !finite ? FastResult::SlowPath : lost ? FastResult::NeedsFp32 : FastResult::Done;
}

// One operand's quantisation; each layout spreads its blocks over the OpenMP team (which
// oneDNN shares), and every block is computed the same way whichever thread takes it.
class Kernel {
public:
    Kernel(const FastOperand& in, const FastOperandOutput& out, const QuantFormat& format)
        : m_op(in), m_out(out.data), m_blockScales(out.blockScales), m_format(format),
          m_rounding(fastq::roundingOf(format.element)), m_ops(fastq::simdOps(in.bf16, out.bf16)),
          m_stochasticOps(fastq::stochasticOps(in.bf16, out.bf16)), m_outBf16(out.bf16),
          m_stochastic(format.encoding.rounding == Rounding::Stochastic),
          m_stream(stochasticStream(format.encoding.seed))
    {}

    // NVFP4's per-tensor level, before its blocks: false when the operand is not all finite.
    bool planNvfp4()
    {
        const std::size_t n = m_op.count();
        const auto chunks = static_cast<std::int64_t>((n + kChunk - 1) / kChunk);
        std::uint32_t amax = 0;
#pragma omp parallel for schedule(static) reduction(max : amax) if (n >= kParallelFrom)
        for (std::int64_t c = 0; c < chunks; ++c) {
            const std::size_t begin = static_cast<std::size_t>(c) * kChunk;
            amax = std::max(amax, m_ops.amaxBits(m_op.data, begin, std::min(kChunk, n - begin)));
        }
        if (amax >= kInfinityBits)
            return false;
        m_tensorAmax = std::bit_cast<float>(amax);
        m_tensorEncodeScale = m_tensorAmax == 0.0f ? 1.0f : std::min(kNvfp4ScaleRange / m_tensorAmax, kMaxFloat);
        return true;
    }

    FastResult perTensor(std::optional<float> fixedScale, float* tensorAmax, float* decodeScale) const
    {
        const std::size_t n = m_op.count();
        const auto chunks = static_cast<std::int64_t>((n + kChunk - 1) / kChunk);
        std::uint32_t amax = 0, lost = 0;
        if (fixedScale) { // the scale is known: one pass rounds and measures the amax for the history
            const Plan plan = elementsOnly(Plan{*fixedScale, 1.0f / *fixedScale}, decodeScale);
#pragma omp parallel for schedule(static) reduction(max : amax) reduction(| : lost) if (n >= kParallelFrom)
            for (std::int64_t c = 0; c < chunks; ++c) {
                const std::size_t begin = static_cast<std::size_t>(c) * kChunk, length = std::min(kChunk, n - begin);
                amax = std::max(amax, m_ops.amaxBits(m_op.data, begin, length));
                lost |= m_ops.round(m_op.data, m_out, begin, length, plan, m_rounding);
            }
        } else {
#pragma omp parallel for schedule(static) reduction(max : amax) if (n >= kParallelFrom)
            for (std::int64_t c = 0; c < chunks; ++c) {
                const std::size_t begin = static_cast<std::size_t>(c) * kChunk;
                amax = std::max(amax, m_ops.amaxBits(m_op.data, begin, std::min(kChunk, n - begin)));
            }
            if (amax >= kInfinityBits)
                return FastResult::SlowPath;
            const Plan plan = elementsOnly(fastq::fp32Plan(std::bit_cast<float>(amax), m_format), decodeScale);
#pragma omp parallel for schedule(static) reduction(| : lost) if (n >= kParallelFrom)
            for (std::int64_t c = 0; c < chunks; ++c) {
                const std::size_t begin = static_cast<std::size_t>(c) * kChunk, length = std::min(kChunk, n - begin);
                lost |= m_stochastic ? m_stochasticOps.runs(m_op.data, m_out, begin, length, length, &plan.multiplier,
                                                            &plan.scale, m_rounding, draws(begin, 1))
                                     : m_ops.round(m_op.data, m_out, begin, length, plan, m_rounding);
            }
        }
        if (tensorAmax)
            *tensorAmax = std::bit_cast<float>(amax);
        return outcome(amax < kInfinityBits, lost);
    }

    // Along with inner 1: rows of k, blocks contiguous. A work item is a run of up to
    // kChunk values of one row, its blocks' amaxes, plans and rounding each one call.
    FastResult rows() const
    {
        const std::size_t row = m_op.k, block = m_format.blockSize, perRow = (row + block - 1) / block;
        const std::size_t perItem = std::min(perRow, std::max<std::size_t>(1, kChunk / block));
        const std::size_t itemsPerRow = (perRow + perItem - 1) / perItem;
        const auto items = static_cast<std::int64_t>(m_op.outer * itemsPerRow);
        std::uint32_t largest = 0, lost = 0;
#pragma omp parallel for schedule(static) reduction(max                                                                \
                                                    : largest) reduction(|                                             \
                                                                         : lost) if (m_op.count() >= kParallelFrom)
        for (std::int64_t item = 0; item < items; ++item) {
            const std::size_t r = static_cast<std::size_t>(item) / itemsPerRow;
            const std::size_t b0 = static_cast<std::size_t>(item) % itemsPerRow * perItem;
            const std::size_t blocks = std::min(perItem, perRow - b0);
            const std::size_t begin = r * row + b0 * block, length = std::min(blocks * block, row - b0 * block);
            lost |= blockRun(m_op.data, m_out, begin, length, r * perRow + b0, begin, largest);
        }
        return outcome(largest < kInfinityBits, lost);
    }

    // Along with inner > 1: a block is a column of `block` rows of [k, inner] for each outer;
    // kLanes neighbouring columns go together, so that every read is contiguous and vectorises.
    FastResult columns() const
    {
        const std::size_t k = m_op.k, inner = m_op.inner, block = m_format.blockSize;
        const std::size_t kBlocks = (k + block - 1) / block, laneGroups = (inner + kLanes - 1) / kLanes;
        const auto items = static_cast<std::int64_t>(m_op.outer * kBlocks * laneGroups);
        std::uint32_t largest = 0, lost = 0;
#pragma omp parallel for schedule(static) reduction(max                                                                \
                                                    : largest) reduction(|                                             \
                                                                         : lost) if (m_op.count() >= kParallelFrom)
        for (std::int64_t item = 0; item < items; ++item) {
            const auto index = static_cast<std::size_t>(item);
            const std::size_t o = index / (kBlocks * laneGroups);
            const std::size_t k0 = index / laneGroups % kBlocks * block, k1 = std::min(k0 + block, k);
            const std::size_t i0 = index % laneGroups * kLanes, lanes = std::min(kLanes, inner - i0);
            std::uint32_t amax[kLanes] = {};
            for (std::size_t kk = k0; kk < k1; ++kk)
                m_ops.amaxLanes(m_op.data, (o * k + kk) * inner + i0, lanes, amax);
            float multiplier[kLanes], scale[kLanes];
            largest = std::max(largest, plans(amax, lanes, (o * kBlocks + k0 / block) * inner + i0, multiplier, scale));
            // The gathered [outer, inner, k] numbers value (o, i, kk) (o * inner + i) * k + kk.
            for (std::size_t kk = k0; kk < k1; ++kk) {
                const std::size_t at = (o * k + kk) * inner + i0;
                lost |= m_stochastic ? m_stochasticOps.lanes(m_op.data, m_out, at, lanes, multiplier, scale, m_rounding,
                                                             draws((o * inner + i0) * k + kk, k))
                                     : m_ops.roundLanes(m_op.data, m_out, at, lanes, multiplier, scale, m_rounding);
            }
        }
        return outcome(largest < kInfinityBits, lost);
    }

    // Around: row r's K runs over (outer, inner) at offsets (a * k + r) * inner + p; a block is
    // a few contiguous runs of at most `inner` values. A work item gathers up to kChunk values
    // of a row (whole blocks) into a buffer of its own, quantises their blocks as rows() does,
    // and scatters the elements back: a block of 32 values spread over short runs is too short
    // to pay for a call per run.
    FastResult around() const
    {
        const std::size_t rowsCount = m_op.k, inner = m_op.inner, length = m_op.outer * inner;
        const std::size_t block = m_format.blockSize, perRow = (length + block - 1) / block;
        const std::size_t perItem = std::min(perRow, std::max<std::size_t>(1, kChunk / block));
        const std::size_t itemsPerRow = (perRow + perItem - 1) / perItem;
        const std::size_t inBytes = m_op.bf16 ? 2 : 4, outBytes = m_outBf16 ? 2 : 4;
        const auto items = static_cast<std::int64_t>(rowsCount * itemsPerRow);
        std::uint32_t largest = 0, lost = 0;
#pragma omp parallel for schedule(static) reduction(max                                                                \
                                                    : largest) reduction(|                                             \
                                                                         : lost) if (m_op.count() >= kParallelFrom)
        for (std::int64_t item = 0; item < items; ++item) {
            const std::size_t r = static_cast<std::size_t>(item) / itemsPerRow;
            const std::size_t b0 = static_cast<std::size_t>(item) % itemsPerRow * perItem;
            const std::size_t blocks = std::min(perItem, perRow - b0);
            const std::size_t j0 = b0 * block, j1 = std::min(length, j0 + blocks * block);
            // Visits the runs of [j0, j1) as (offset in the operand, offset in the item, count).
            const auto runs = [&](auto&& visit) {
                std::size_t a = j0 / inner, p = j0 % inner;
                for (std::size_t j = j0; j < j1;) {
                    const std::size_t n = std::min(j1 - j, inner - p);
                    visit((a * rowsCount + r) * inner + p, j - j0, n);
                    j += n;
                    p += n;
                    if (p == inner) {
                        p = 0;
                        ++a;
                    }
                }
            };
            thread_local std::vector<unsigned char> gathered, rounded;
            if (gathered.size() < (j1 - j0) * inBytes)
                gathered.resize((j1 - j0) * inBytes);
            if (rounded.size() < (j1 - j0) * outBytes)
                rounded.resize((j1 - j0) * outBytes);
            const auto* in = static_cast<const unsigned char*>(m_op.data);
            runs([&](std::size_t at, std::size_t local, std::size_t n) {
                std::memcpy(gathered.data() + local * inBytes, in + at * inBytes, n * inBytes);
            });
            lost |= blockRun(gathered.data(), rounded.data(), 0, j1 - j0, r * perRow + b0, r * length + j0, largest);
            auto* out = static_cast<unsigned char*>(m_out);
            runs([&](std::size_t at, std::size_t local, std::size_t n) {
                std::memcpy(out + at * outBytes, rounded.data() + local * outBytes, n * outBytes);
            });
        }
        return outcome(largest < kInfinityBits, lost);
    }

    // Square tiles over the matrix [outer, k]: each quantised as a tensor of its own, or as an
    // NVFP4 block of the whole operand (block_quantizer.cpp with format.blockRows > 1).
    FastResult tiles() const
    {
        const std::size_t rowsCount = m_op.outer, cols = m_op.k, t = m_op.tile;
        const std::size_t tileCols = (cols + t - 1) / t;
        const auto items = static_cast<std::int64_t>((rowsCount + t - 1) / t * tileCols);
        std::uint32_t largest = 0, lost = 0;
#pragma omp parallel for schedule(static) reduction(max                                                                \
                                                    : largest) reduction(|                                             \
                                                                         : lost) if (m_op.count() >= kParallelFrom)
        for (std::int64_t item = 0; item < items; ++item) {
            const std::size_t r0 = static_cast<std::size_t>(item) / tileCols * t;
            const std::size_t c0 = static_cast<std::size_t>(item) % tileCols * t;
            const std::size_t r1 = std::min(r0 + t, rowsCount), width = std::min(t, cols - c0);
            const std::uint32_t amax = m_ops.amaxRows(m_op.data, r0 * cols + c0, width, r1 - r0, cols);
            largest = std::max(largest, amax);
            const Plan plan =
                emitted(m_format.scheme == ScalingScheme::Nvfp4 ? blockPlan(amax)
                                                                : fastq::fp32Plan(std::bit_cast<float>(amax), m_format),
                        static_cast<std::size_t>(item));
            if (!m_stochastic) {
                lost |= m_ops.roundRows(m_op.data, m_out, r0 * cols + c0, width, r1 - r0, cols, plan, m_rounding);
                continue;
            }
            for (std::size_t row = r0; row < r1; ++row) // NVFP4's tiles: the counter is the buffer's index
                lost |= m_stochasticOps.runs(m_op.data, m_out, row * cols + c0, width, width, &plan.multiplier,
                                             &plan.scale, m_rounding, draws(row * cols + c0, 1));
        }
        return outcome(largest < kInfinityBits, lost);
    }

private:
    // Quantises the consecutive blocks of in[begin, begin + length) into out at the same
    // offsets (the last block short where the block size does not divide length), the first
    // of them the operand's block `firstBlock` and its first value the gathered span's
    // `firstValue` (stochastic rounding's counter): their amaxes, plans and rounding one call
    // each. Raises `largest` to their largest amax bits; returns the bits a bf16 output lost.
    std::uint32_t blockRun(const void* in, void* out, std::size_t begin, std::size_t length, std::size_t firstBlock,
                           std::size_t firstValue, std::uint32_t& largest) const
    {
        const std::size_t block = m_format.blockSize, blocks = (length + block - 1) / block;
        thread_local std::vector<std::uint32_t> amax;
        thread_local std::vector<float> multiplier, scale;
        if (amax.size() < blocks) {
            amax.resize(blocks);
            multiplier.resize(blocks);
            scale.resize(blocks);
        }
        m_ops.amaxBlocks(in, begin, length, block, amax.data());
        largest = std::max(largest, plans(amax.data(), blocks, firstBlock, multiplier.data(), scale.data()));
        if (m_stochastic)
            return m_stochasticOps.runs(in, out, begin, length, block, multiplier.data(), scale.data(), m_rounding,
                                        draws(firstValue, 1));
        return m_ops.roundBlocks(in, out, begin, length, block, multiplier.data(), scale.data(), m_rounding);
    }

    // The plans of `count` blocks from their amax bits, block b's at multiplier[b] and scale[b]
    // (its index among the operand's blocks firstIndex + b, for emitted()); returns the largest
    // amax bits. MX's three rules run as one loop the compiler vectorises (fastq::mxExponent,
    // integer steps on the amax's fields). A block of 32 values is too short for a call and a
    // branchy plan each: rceil's division and libm calls per block were a quarter of a
    // vit-tiny mxfp8 step.
    std::uint32_t plans(const std::uint32_t* amax, std::size_t count, std::size_t firstIndex, float* multiplier,
                        float* scale) const
    {
        std::uint32_t largest = 0;
        const bool vectorMx = m_format.scheme == ScalingScheme::Mx && !m_blockScales;
        if (!vectorMx) {
            for (std::size_t b = 0; b < count; ++b) {
                largest = std::max(largest, amax[b]);
                const Plan plan = emitted(blockPlan(amax[b]), firstIndex + b);
                multiplier[b] = plan.multiplier;
                scale[b] = plan.scale;
            }
            return largest;
        }
        const fastq::MxScaleSteps steps = fastq::mxScaleSteps(m_format);
        for (std::size_t b = 0; b < count; ++b) {
            const std::uint32_t bits = amax[b];
            largest = std::max(largest, bits);
            const int exponent = fastq::mxExponent(bits, steps);
            // powerOfTwo(e) for e in [-127, 127]: only 2^-127 is subnormal.
            const auto power = [](int e) {
                return std::bit_cast<float>(e >= -126 ? static_cast<std::uint32_t>(e + 127) << 23 : 1u << 22);
            };
            multiplier[b] = power(-exponent);
            scale[b] = power(exponent);
        }
        return largest;
    }

    // Stochastic rounding's draws from the gathered span's value `first` on, `stride` apart.
    fastq::Draws draws(std::size_t first, std::size_t stride) const
    {
        return {m_stream, m_op.firstCounter + first, stride};
    }

    // With `decodeScale` the values are written undecoded (the elements) and the decode
    // multiplier is handed back instead.
    static Plan elementsOnly(Plan plan, float* decodeScale)
    {
        if (!decodeScale)
            return plan;
        *decodeScale = plan.scale;
        return {plan.multiplier, 1.0f};
    }

    // With block scales asked for, block `index` is written undecoded (its elements) and its
    // decode multiplier stored at blockScales[index].
    Plan emitted(Plan plan, std::size_t index) const
    {
        if (!m_blockScales)
            return plan;
        m_blockScales[index] = plan.scale;
        return {plan.multiplier, 1.0f};
    }

    // A block's plan from its amax bits; a non-finite block gets any plan, since the whole
    // operand then goes to the slow path.
    Plan blockPlan(std::uint32_t amaxBits) const
    {
        const float amax = amaxBits < kInfinityBits ? std::bit_cast<float>(amaxBits) : 0.0f;
        if (m_format.scheme != ScalingScheme::Nvfp4)
            return fastq::blockPlan(amax, m_format);
        // block_quantizer.cpp's nvfp4Plan: the block scale amax / 6 in the tensor's scale,
        // rounded to E4M3 (nearest even, saturating: roundOne on E4M3 gives its value); a
        // block scale of 0 flushes the block. Values decode * (scale * tensor amax * 1/2688).
        const float decoded = fastq::roundOne(amax / 6.0f * m_tensorEncodeScale, 1.0f, 1.0f, m_blockScaleRounding);
        return {decoded == 0.0f ? 0.0f : m_tensorEncodeScale / decoded, decoded * m_tensorAmax * kNvfp4DecodeFactor};
    }

    const FastOperand& m_op;
    void* m_out;
    float* m_blockScales;
    const QuantFormat& m_format;
    fastq::ElementRounding m_rounding;
    const fastq::SimdOps& m_ops;
    const fastq::StochasticOps& m_stochasticOps;
    bool m_outBf16;
    bool m_stochastic;
    std::uint64_t m_stream;
    fastq::ElementRounding m_blockScaleRounding = fastq::roundingOf(MiniFloat::E4M3);
    float m_tensorAmax = 0.0f, m_tensorEncodeScale = 1.0f;
};

bool applies(const FastOperand& in, const FastOperandOutput& out, const QuantFormat& format,
             std::optional<float> fixedScale)
{
    const bool scheme = format.scheme == ScalingScheme::PerTensor || format.scheme == ScalingScheme::Fp32Blocks ||
                        format.scheme == ScalingScheme::Mx || format.scheme == ScalingScheme::Nvfp4;
    if (!scheme || format.element == MiniFloat::E8M0 || in.count() == 0 || !in.data)
        return false;
    const bool stochastic = format.encoding.rounding == Rounding::Stochastic;
    // Delayed scaling rounds to nearest whatever the format says (operand_quantization.cpp) and
    // a per-tensor format's 128x128 tiles number their draws tile by tile: the slow path's.
    if (stochastic &&
        (fixedScale || (in.layout == FastOperand::Layout::Tiles && format.scheme == ScalingScheme::PerTensor)))
        return false;
    if (in.layout == FastOperand::Layout::Tiles) {
        const bool nvfp4Tiles =
            format.scheme == ScalingScheme::Nvfp4 && in.tile == format.blockSize && in.tile == format.blockRows &&
            ((in.outer % in.tile == 0 && in.k % in.tile == 0) || format.partialBlocks == PartialBlock::Pad);
        return (format.scheme == ScalingScheme::PerTensor || nvfp4Tiles) && in.tile > 0 && in.inner == 1 &&
               !fixedScale && !out.decodeScale && (!out.blockScales || format.scheme == ScalingScheme::PerTensor);
    }
    if (out.blockScales && format.scheme != ScalingScheme::Fp32Blocks)
        return false; // block scales: 1x128 blocks and 128x128 tiles only
    if (format.scheme == ScalingScheme::PerTensor)
        return true;
    if (out.decodeScale)
        return false; // elements and one decode scale: per-tensor formats only
    if (fixedScale || format.blockSize == 0)
        return false;
    const std::size_t row = in.layout == FastOperand::Layout::Along ? in.k : in.outer * in.inner;
    return row % format.blockSize == 0 || format.partialBlocks == PartialBlock::Pad;
}

} // namespace

FastResult quantizeOperandFast(const FastOperand& in, const FastOperandOutput& out, const QuantFormat& format,
                               std::optional<float> fixedScale, float* tensorAmax)
{
    if (!applies(in, out, format, fixedScale))
        return FastResult::SlowPath;
    Kernel kernel(in, out, format);
    if (format.scheme == ScalingScheme::Nvfp4 && !kernel.planNvfp4())
        return FastResult::SlowPath;
    if (in.layout == FastOperand::Layout::Tiles)
        return kernel.tiles();
    if (format.scheme == ScalingScheme::PerTensor)
        return kernel.perTensor(fixedScale, tensorAmax, out.decodeScale);
    if (in.layout == FastOperand::Layout::Around)
        return kernel.around();
    return in.inner == 1 ? kernel.rows() : kernel.columns();
}

} // namespace mantissa
