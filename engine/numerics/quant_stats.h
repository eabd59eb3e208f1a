#pragma once
// What a quantisation did to a tensor, for the numerics lens and `mantissa-cli quantize`
// (issue 17): how many blocks clipped their largest value, how many values were flushed to
// zero, where the block scales sit, and the signal-to-quantisation-noise ratio against the
// fp32 input (the shadow comparison torchao logs by hand).
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>

namespace mantissa {

struct QuantizedTensor;

struct QuantStats {
    std::size_t elements = 0;
    std::size_t blocks = 0;
    std::size_t clippedBlocks = 0;  // blocks whose largest value saturated
    std::size_t nanScaleBlocks = 0; // blocks a NaN or Inf turned NaN (MX, NVFP4)
    std::size_t flushedToZero = 0;  // nonzero finite inputs that came back as zero
    std::size_t nonFinite = 0;      // NaN or Inf inputs; left out of the SQNR
    std::size_t nanInputs = 0;      // of nonFinite, the NaNs (the rest are +-Inf)
    double signalEnergy = 0.0;      // sum of x^2 over the finite inputs
    double noiseEnergy = 0.0;       // sum of (q - x)^2 over the same (Inf when some q is not finite)
    // floor(log2(block dequantisation scale)) -> number of blocks; NaN scales are not counted here.
    std::map<int, std::size_t> scaleExponents;

    // 10 log10(signal / noise): +Inf when exact, NaN without signal.
    double sqnrDb() const;
    double clippedBlockFraction() const;
    double flushedFraction() const; // of the elements
    // Adds another part of the same tensor (the tiles of a weight, a GEMM run twice).
    void merge(const QuantStats& other);
};

QuantStats measureQuantization(std::span<const float> values, const QuantizedTensor& quantized,
                               std::span<const float> dequantized);

} // namespace mantissa
