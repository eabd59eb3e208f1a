#include "engine/numerics/block_quantizer.h"

#include "engine/numerics/stochastic_bits.h"
#include "engine/util/check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace mantissa {

namespace {

constexpr float kNvfp4ScaleRange = 448.0f * 6.0f; // E4M3 max times E2M1 max
constexpr float kNvfp4DecodeFactor = static_cast<float>(1.0 / (6.0 * 448.0));

// How one block is scaled: elements are encode(x * encodeMultiplier) (MX: an exact power of
// two), values decode(code) * decodeScale.
struct BlockPlan {
    float encodeMultiplier = 1.0f;
    float decodeScale = 1.0f;
    std::int32_t scaleCode = -1;
    bool nanScale = false;
};

std::string quantity(std::size_t n, const char* what) { return std::to_string(n) + " " + what; }

// The largest finite magnitude, and whether a NaN or Inf is present.
struct Amax {
    float value = 0.0f;
    bool nonFinite = false;
};

Amax amaxOf(std::span<const float> values)
{
    Amax a;
    for (const float v : values) {
        if (std::isfinite(v))
            a.value = std::max(a.value, std::abs(v));
        else
            a.nonFinite = true;
    }
    return a;
}

// Transformer Engine's compute_scale_from_amax (current scaling, and per block for 1x128).
BlockPlan fp32Plan(float amax, const QuantFormat& format)
{
    float scale = 1.0f;
    if (amax > 0.0f) {
        scale = miniFloatFormat(format.element).maxFinite() / amax;
        if (std::isinf(scale))
            scale = std::numeric_limits<float>::max();
        if (format.powerOfTwoScales) // 2^floor(log2 s): the scaled amax stays within range
            scale = std::ldexp(1.0f, std::ilogb(scale));
    }
    return {scale, 1.0f / scale, -1, false};
}

int mxExponent(float amax, const QuantFormat& format)
{
    if (amax == 0.0f)
        return -127;
    const MiniFloatFormat& element = miniFloatFormat(format.element);
    const int floorLog = std::ilogb(amax); // exact, subnormals included
    const bool powerOfTwo = amax == std::ldexp(1.0f, floorLog);
    int exponent = 0;
    switch (format.scaleRule) {
    case MxScaleRule::Floor: exponent = floorLog - element.maxExponent(); break;
    case MxScaleRule::Ceil: exponent = floorLog + (powerOfTwo ? 0 : 1) - element.maxExponent(); break;
    case MxScaleRule::RCeil: {
        // ceil(log2(amax / max)), decided exactly: in double the quotient is a power of two
        // only when it is one (torchao divides in fp32, which can round a quotient a hair
        // above 2^k down to 2^k and then clip).
        const double ratio = static_cast<double>(amax) / static_cast<double>(element.maxFinite());
        const int k = std::ilogb(ratio);
        exponent = ratio == std::ldexp(1.0, k) ? k : k + 1;
        break;
    }
    }
    return std::clamp(exponent, -127, 127);
}

BlockPlan mxPlan(const Amax& amax, const QuantFormat& format)
{
    if (amax.nonFinite)
        return {0.0f, std::numeric_limits<float>::quiet_NaN(), 0xff, true};
    const int exponent = mxExponent(amax.value, format);
    return {std::ldexp(1.0f, -exponent), std::ldexp(1.0f, exponent), exponent + 127, false};
}

float nvfp4TensorEncodeScale(float tensorAmax)
{
    if (tensorAmax == 0.0f)
        return 1.0f;
    return std::min(kNvfp4ScaleRange / tensorAmax, std::numeric_limits<float>::max());
}

BlockPlan nvfp4Plan(const Amax& amax, float tensorEncodeScale)
{
    if (amax.nonFinite)
        return {0.0f, std::numeric_limits<float>::quiet_NaN(), 0x7f, true};
    const float blockDecode = amax.value / 6.0f;
    const std::uint8_t code = encodeMiniFloatWith(blockDecode * tensorEncodeScale, MiniFloat::E4M3,
                                                  Rounding::NearestEven, OverflowRule::Saturate, 0)
                                  .code;
    const float decoded = decodeMiniFloat(code, MiniFloat::E4M3);
    if (decoded == 0.0f) // the block is too small for the tensor's scale: it flushes to zero
        return {0.0f, 0.0f, code, false};
    return {tensorEncodeScale / decoded, 0.0f, code, false}; // the decode scale follows from the tensor's amax
}

} // namespace

void checkBlockLayout(std::size_t count, std::size_t rowLength, const QuantFormat& format)
{
    if (count % rowLength != 0)
        throw ConfigError(quantity(count, "values") + " are not a whole number of rows of " +
                          std::to_string(rowLength));
    if (format.isBlocked() && rowLength % format.blockSize != 0 && format.partialBlocks == PartialBlock::Refuse) {
        throw ConfigError("a row of " + quantity(rowLength, "values") + " is not a multiple of the block size " +
                          std::to_string(format.blockSize) + " (" + describeQuantFormat(format) +
                          "); give whole blocks, or pad the last block with zeros");
    }
    const std::size_t rows = count / rowLength;
    if (format.blockRows > 1 && rows % format.blockRows != 0 && format.partialBlocks == PartialBlock::Refuse)
        throw ConfigError(quantity(rows, "rows") + " are not a multiple of the tile's " +
                          std::to_string(format.blockRows) + " rows (" + describeQuantFormat(format) +
                          "); give whole tiles, or pad the last tile with zeros");
}

QuantizedTensor quantize(std::span<const float> values, std::size_t rowLength, const QuantFormat& format,
                         std::uint64_t firstCounter)
{
    validateQuantFormat(format);
    QuantizedTensor q;
    q.format = format;
    const std::size_t n = values.size();
    if (!format.isBlocked()) {
        q.rowLength = q.blockSize = std::max<std::size_t>(n, 1);
    } else {
        q.rowLength = rowLength == 0 ? std::max<std::size_t>(n, 1) : rowLength;
        q.blockSize = format.blockSize;
        checkBlockLayout(n, q.rowLength, format);
    }
    q.codes.resize(n);
    if (n == 0)
        return q;

    float tensorEncodeScale = 1.0f;
    float tensorAmax = 0.0f;
    if (format.scheme == ScalingScheme::Nvfp4) {
        tensorAmax = amaxOf(values).value;
        tensorEncodeScale = nvfp4TensorEncodeScale(tensorAmax);
        q.tensorScale = tensorAmax * kNvfp4DecodeFactor;
    }
    const std::size_t rows = n / q.rowLength;
    const std::size_t blocksPerRow = q.blocksPerRow();
    q.blockRows = format.isBlocked() ? format.blockRows : 1;
    const std::size_t tileRows = (rows + q.blockRows - 1) / q.blockRows;
    q.blocks.resize(tileRows * blocksPerRow);
    const OverflowRule overflow =
        format.scheme == ScalingScheme::None ? format.encoding.overflow : OverflowRule::Saturate;
    const Rounding rounding = format.encoding.rounding;
    const std::uint64_t stream = stochasticStream(format.encoding.seed);

    const auto blockCount = static_cast<std::int64_t>(q.blocks.size());
#pragma omp parallel for schedule(static) if (n >= (1 << 17))
    for (std::int64_t b = 0; b < blockCount; ++b) {
        // The block covers rows [row0, row1) (one row unless it is a 2D tile), columns [col0, col1).
        const std::size_t row0 = static_cast<std::size_t>(b) / blocksPerRow * q.blockRows;
        const std::size_t row1 = std::min(row0 + q.blockRows, rows);
        const std::size_t col0 = (static_cast<std::size_t>(b) % blocksPerRow) * q.blockSize;
        const std::size_t col1 = std::min(col0 + q.blockSize, q.rowLength);
        Amax amax;
        for (std::size_t r = row0; r < row1; ++r) {
            const Amax part = amaxOf(values.subspan(r * q.rowLength + col0, col1 - col0));
            amax.value = std::max(amax.value, part.value);
            amax.nonFinite = amax.nonFinite || part.nonFinite;
        }
        BlockPlan plan;
        switch (format.scheme) {
        case ScalingScheme::None: break;
        case ScalingScheme::PerTensor:
        case ScalingScheme::Fp32Blocks: plan = fp32Plan(amax.value, format); break;
        case ScalingScheme::Mx: plan = mxPlan(amax, format); break;
        case ScalingScheme::Nvfp4: plan = nvfp4Plan(amax, tensorEncodeScale); break;
        }
        BlockScale& scale = q.blocks[static_cast<std::size_t>(b)];
        scale = {plan.decodeScale, plan.scaleCode, amax.value, false, plan.nanScale};
        if (format.scheme == ScalingScheme::Nvfp4 && !plan.nanScale) // as Transformer Engine's dequantize_fp4_kernel
            scale.scale = decodeMiniFloat(static_cast<std::uint8_t>(plan.scaleCode), MiniFloat::E4M3) * tensorAmax *
                          kNvfp4DecodeFactor;
        for (std::size_t r = row0; r < row1; ++r)
            for (std::size_t i = r * q.rowLength + col0; i < r * q.rowLength + col1; ++i) {
                if (plan.nanScale) {
                    q.codes[i] = 0; // the NaN scale decides the block's values
                    continue;
                }
                const float scaled =
                    format.scheme == ScalingScheme::None ? values[i] : values[i] * plan.encodeMultiplier;
                const std::uint64_t random =
                    rounding == Rounding::Stochastic ? stochasticBits(stream, firstCounter + i) : 0;
                const EncodedMiniFloat e = encodeMiniFloatWith(scaled, format.element, rounding, overflow, random);
                q.codes[i] = e.code;
                scale.clipped = scale.clipped || (e.overflowed && std::isfinite(values[i]));
            }
    }
    return q;
}

void dequantize(const QuantizedTensor& q, std::span<float> values)
{
    MANTISSA_ASSERT(values.size() == q.codes.size());
    const MiniFloat element = q.format.element;
    const auto n = static_cast<std::int64_t>(q.codes.size());
#pragma omp parallel for schedule(static) if (n >= (1 << 17))
    for (std::int64_t i = 0; i < n; ++i) {
        const auto index = static_cast<std::size_t>(i);
        const float decoded = decodeMiniFloat(q.codes[index], element);
        if (q.format.scheme == ScalingScheme::None) {
            values[index] = decoded;
            continue;
        }
        values[index] = decoded * q.blocks[q.blockOf(index)].scale;
    }
}

QuantStats quantizeDequantize(std::span<const float> values, std::span<float> out, std::size_t rowLength,
                              const QuantFormat& format, std::uint64_t firstCounter)
{
    MANTISSA_ASSERT(out.size() == values.size());
    const QuantizedTensor q = quantize(values, rowLength, format, firstCounter);
    std::vector<float> dequantized(values.size());
    dequantize(q, dequantized);
    QuantStats stats = measureQuantization(values, q, dequantized);
    std::copy(dequantized.begin(), dequantized.end(), out.begin());
    return stats;
}

} // namespace mantissa
