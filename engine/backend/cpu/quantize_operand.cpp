// CpuBackend::quantizeOperand and quantizeOperandBlocks: the sub-16-bit recipes' GEMM operands
// quantised where they lie. The fast quantiser (fast_operand_quantizer.h) reads the operand's
// own bf16 or fp32 buffer in its layout and writes bf16 where every value is one; what it
// leaves (a NaN or an Inf, a convolution's 2D tiles, an fp16 operand) runs
// on quantizeOperandOnHost, the arithmetic the device kernels run, with the same values.
#include "engine/backend/cpu/cpu_backend.h"

#include "engine/numerics/conversions.h"
#include "engine/numerics/fast_operand_quantizer.h"
#include "engine/numerics/operand_quantization.h"
#include "engine/util/check.h"

#include <bit>
#include <vector>

namespace mantissa {

namespace {

// The request's view of the operand as the fast quantiser reads it in its own buffer. Per-tensor
// formats ignore the layout; tiles (a per-tensor format's fp32 tiles, NVFP4's 16x16) are
// square, their side the grid's.
FastOperand fastOperand(const Tensor& t, const OperandQuantization& q)
{
    FastOperand op;
    op.data = t.data();
    op.bf16 = t.dtype() == DType::BF16;
    switch (q.view.kind) {
    case qa::OperandView::AlongRows: op.layout = FastOperand::Layout::Along; break;
    case qa::OperandView::Around: op.layout = FastOperand::Layout::Around; break;
    case qa::OperandView::Tiles: op.layout = FastOperand::Layout::Tiles; break;
    }
    op.outer = static_cast<std::size_t>(q.view.outer);
    op.k = static_cast<std::size_t>(q.view.k);
    op.inner = static_cast<std::size_t>(q.view.inner);
    op.firstCounter = q.firstCounter;
    if (op.layout == FastOperand::Layout::Tiles)
        op.tile = static_cast<std::size_t>(q.grid.blockCols);
    return op;
}

bool fastQuantizerReads(const Tensor& t) { return t.dtype() == DType::BF16 || t.dtype() == DType::F32; }

} // namespace

QuantizedOperand CpuBackend::quantizeOperand(const Tensor& src, const OperandQuantization& q)
{
    if (fastQuantizerReads(src)) {
        const FastOperand in = fastOperand(src, q);
        float amax = 0.0f, decodeScale = 1.0f;
        for (const bool bf16 : {true, false}) {
            if (bf16 && !q.mayBeBf16)
                continue;
            Tensor out = empty(src.shape(), bf16 ? DType::BF16 : DType::F32);
            const FastResult r = quantizeOperandFast(in, {out.data(), bf16, q.elements ? &decodeScale : nullptr},
                                                     q.format, q.fixedScale, &amax);
            if (r == FastResult::Done)
                return {std::move(out), decodeScale, amax};
            if (r == FastResult::SlowPath)
                break;
        }
    }
    const std::vector<float> values = src.toFloats();
    std::vector<float> result(values.size());
    const OperandQuantizationResult r = quantizeOperandOnHost(q, values, result);
    // The type the fast path would have written, so that the path taken does not change the GEMM.
    bool bf16 = q.mayBeBf16;
    for (std::size_t i = 0; bf16 && i < result.size(); ++i)
        bf16 = (std::bit_cast<std::uint32_t>(result[i]) & 0xffffu) == 0;
    Tensor out = empty(src.shape(), bf16 ? DType::BF16 : DType::F32);
    narrowFromFloat(result.data(), out.data(), result.size(), out.dtype());
    return {std::move(out), r.decodeScale, r.amax};
}

std::optional<QuantizedBlocks> CpuBackend::quantizeOperandBlocks(const Tensor& src, const OperandQuantization& q,
                                                                 std::int64_t scaleCount)
{
    if (!fastQuantizerReads(src))
        return std::nullopt;
    QuantizedBlocks blocks{empty(src.shape(), DType::BF16), empty({scaleCount}, DType::F32)};
    FastOperandOutput out{blocks.elements.data(), true};
    out.blockScales = blocks.scales.f32();
    if (quantizeOperandFast(fastOperand(src, q), out, q.format) != FastResult::Done)
        return std::nullopt; // FP8 elements are bf16 numbers: only the slow path's cases get here
    return blocks;
}

} // namespace mantissa
