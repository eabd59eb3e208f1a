#include "engine/numerics/quant_stats.h"

#include "engine/numerics/block_quantizer.h"
#include "engine/util/check.h"

#include <cmath>
#include <limits>

namespace mantissa {

double QuantStats::sqnrDb() const
{
    if (signalEnergy == 0.0)
        return std::numeric_limits<double>::quiet_NaN();
    if (noiseEnergy == 0.0)
        return std::numeric_limits<double>::infinity();
    return 10.0 * std::log10(signalEnergy / noiseEnergy);
}

double QuantStats::clippedBlockFraction() const
{
    return blocks == 0 ? 0.0 : static_cast<double>(clippedBlocks) / static_cast<double>(blocks);
}

double QuantStats::flushedFraction() const
{
    return elements == 0 ? 0.0 : static_cast<double>(flushedToZero) / static_cast<double>(elements);
}

void QuantStats::merge(const QuantStats& s)
{
    elements += s.elements;
    blocks += s.blocks;
    clippedBlocks += s.clippedBlocks;
    nanScaleBlocks += s.nanScaleBlocks;
    flushedToZero += s.flushedToZero;
    nonFinite += s.nonFinite;
    nanInputs += s.nanInputs;
    signalEnergy += s.signalEnergy;
    noiseEnergy += s.noiseEnergy;
    for (const auto& [exponent, count] : s.scaleExponents)
        scaleExponents[exponent] += count;
}

QuantStats measureQuantization(std::span<const float> values, const QuantizedTensor& quantized,
                               std::span<const float> dequantized)
{
    MANTISSA_ASSERT(values.size() == dequantized.size());
    QuantStats s;
    s.elements = values.size();
    for (std::size_t i = 0; i < values.size(); ++i) {
        const double x = values[i];
        const double q = dequantized[i];
        if (!std::isfinite(x)) {
            ++s.nonFinite;
            s.nanInputs += std::isnan(x) ? 1 : 0;
            continue;
        }
        s.signalEnergy += x * x;
        s.noiseEnergy += std::isfinite(q) ? (q - x) * (q - x) : std::numeric_limits<double>::infinity();
        if (x != 0.0 && q == 0.0)
            ++s.flushedToZero;
    }
    s.blocks = quantized.blocks.size();
    for (const BlockScale& block : quantized.blocks) {
        s.clippedBlocks += block.clipped ? 1 : 0;
        s.nanScaleBlocks += block.nanScale ? 1 : 0;
        if (std::isfinite(block.scale) && block.scale != 0.0f)
            ++s.scaleExponents[std::ilogb(block.scale)];
    }
    return s;
}

} // namespace mantissa
