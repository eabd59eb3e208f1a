#include "engine/model/gemm_inputs.h"

#include "engine/backend/backend.h"
#include "engine/numerics/block_quantizer.h"
#include "engine/numerics/fast_quantizer.h"
#include "engine/numerics/hadamard_transform.h"
#include "engine/numerics/operand_quantization.h"
#include "engine/numerics/stochastic_bits.h"
#include "engine/util/check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

namespace mantissa {

namespace {

// values[layout order] -> rows with K contiguous.
void gather(std::span<const float> src, std::span<float> dst, const KLayout& l)
{
    if (l.kind == KLayout::Kind::Along) {
        if (l.inner == 1) {
            std::copy(src.begin(), src.end(), dst.begin());
            return;
        }
        for (std::int64_t o = 0; o < l.outer; ++o)
            for (std::int64_t kk = 0; kk < l.k; ++kk) {
                const float* from = src.data() + (o * l.k + kk) * l.inner;
                float* to = dst.data() + o * l.inner * l.k + kk;
                for (std::int64_t i = 0; i < l.inner; ++i)
                    to[i * l.k] = from[i];
            }
        return;
    }
    // [k1, rows, k2] -> [rows, k1 * k2]
    for (std::int64_t a = 0; a < l.outer; ++a)
        for (std::int64_t r = 0; r < l.k; ++r)
            std::copy_n(src.data() + (a * l.k + r) * l.inner, l.inner, dst.data() + (r * l.outer + a) * l.inner);
}

void scatter(std::span<const float> src, std::span<float> dst, const KLayout& l)
{
    if (l.kind == KLayout::Kind::Along) {
        if (l.inner == 1) {
            std::copy(src.begin(), src.end(), dst.begin());
            return;
        }
        for (std::int64_t o = 0; o < l.outer; ++o)
            for (std::int64_t kk = 0; kk < l.k; ++kk) {
                const float* from = src.data() + o * l.inner * l.k + kk;
                float* to = dst.data() + (o * l.k + kk) * l.inner;
                for (std::int64_t i = 0; i < l.inner; ++i)
                    to[i] = from[i * l.k];
            }
        return;
    }
    for (std::int64_t a = 0; a < l.outer; ++a)
        for (std::int64_t r = 0; r < l.k; ++r)
            std::copy_n(src.data() + (r * l.outer + a) * l.inner, l.inner, dst.data() + (a * l.k + r) * l.inner);
}

// Rows of K-contiguous values through the block quantiser.
void quantizeRows(std::span<const float> rows, std::span<float> out, std::size_t rowLength, const QuantFormat& format,
                  std::uint64_t firstCounter, QuantStats* stats)
{
    // The fast path gives the same bits; the lens's statistics need the codes, so sampled
    // steps take the slow one.
    if (!stats && quantizeDequantizeFast(rows, out, rowLength, format))
        return;
    const QuantizedTensor q = quantize(rows, rowLength, format, firstCounter);
    dequantize(q, out);
    if (stats)
        stats->merge(measureQuantization(rows, q, out));
}

// One fp32 scale per square tile of the weight matrix [rows, cols] (DeepSeek-V3's 128x128):
// each tile is quantised as a tensor of its own with the per-tensor rule.
void quantizeTiles(std::span<const float> w, std::span<float> out, std::int64_t rows, std::size_t tile,
                   const QuantFormat& format, QuantStats* stats)
{
    const std::int64_t cols = static_cast<std::int64_t>(w.size()) / rows;
    const auto t = static_cast<std::int64_t>(tile);
    std::vector<float> buffer, quantized;
    for (std::int64_t r0 = 0; r0 < rows; r0 += t)
        for (std::int64_t c0 = 0; c0 < cols; c0 += t) {
            const std::int64_t h = std::min(t, rows - r0), wd = std::min(t, cols - c0);
            buffer.resize(static_cast<std::size_t>(h * wd));
            quantized.resize(buffer.size());
            for (std::int64_t r = 0; r < h; ++r)
                std::copy_n(w.data() + (r0 + r) * cols + c0, wd, buffer.data() + r * wd);
            quantizeRows(buffer, quantized, 0, format, 0, stats);
            for (std::int64_t r = 0; r < h; ++r)
                std::copy_n(quantized.data() + r * wd, wd, out.data() + (r0 + r) * cols + c0);
        }
}

// The whole tensor with a given fp32 scale (delayed scaling): encode(x * s) saturating, as
// Transformer Engine's cast with a scale from the amax history. `elements` receives the codes'
// values; the decode scale 1 / s is returned (values are element * (1 / s)).
float quantizeWithScale(std::span<const float> values, std::span<float> elements, const QuantFormat& format,
                        float scale, QuantStats* stats)
{
    QuantizedTensor q;
    q.format = format;
    q.rowLength = q.blockSize = std::max<std::size_t>(values.size(), 1);
    q.codes.resize(values.size());
    BlockScale block{1.0f / scale, -1, 0.0f, false, false};
    for (std::size_t i = 0; i < values.size(); ++i) {
        const EncodedMiniFloat e =
            encodeMiniFloatWith(values[i] * scale, format.element, Rounding::NearestEven, OverflowRule::Saturate, 0);
        q.codes[i] = e.code;
        elements[i] = decodeMiniFloat(e.code, format.element);
        if (std::isfinite(values[i]))
            block.amax = std::max(block.amax, std::abs(values[i]));
        block.clipped = block.clipped || (e.overflowed && std::isfinite(values[i]));
    }
    q.blocks.push_back(block);
    if (stats) {
        std::vector<float> dequantized(values.size());
        dequantize(q, dequantized);
        stats->merge(measureQuantization(values, q, dequantized));
    }
    return block.scale;
}

// The whole tensor with its own scale, max / amax (current scaling): the elements into
// `elements`, the decode scale returned.
float quantizeElements(std::span<const float> values, std::span<float> elements, const QuantFormat& format,
                       std::uint64_t firstCounter, QuantStats* stats)
{
    const QuantizedTensor q = quantize(values, 0, format, firstCounter);
    for (std::size_t i = 0; i < values.size(); ++i)
        elements[i] = decodeMiniFloat(q.codes[i], format.element);
    if (stats) {
        std::vector<float> dequantized(values.size());
        dequantize(q, dequantized);
        stats->merge(measureQuantization(values, q, dequantized));
    }
    return q.blocks.empty() ? 1.0f : q.blocks.front().scale;
}

// Whether the values a format hands the GEMM are bf16 numbers, so that the GEMM can read them
// natively: FP8 elements are (per-tensor formats hand over the elements, not yet scaled); MX
// elements (at most 3 mantissa bits) and FP8 elements of power-of-two-scaled blocks times their
// scale are, unless they fall below bf16's smallest subnormal, which is checked value by value.
// The other fp32 scales (1x128, 128x128, NVFP4's) make values of up to 24 significant bits.
bool decodesToBf16(const OperandFormat& format)
{
    return multipliesElements(format) || (format.format.scheme == ScalingScheme::Mx && format.tile2d == 0) ||
           format.format.powerOfTwoScales;
}

// A tensor's values on the host, wherever it lies.
std::vector<float> hostValues(Backend& backend, const Tensor& t)
{
    std::vector<float> values(static_cast<std::size_t>(t.numel()));
    backend.download(t, values.data());
    return values;
}

std::uint64_t nameHash(const std::string& s)
{
    std::uint64_t h = 1469598103934665603ull; // FNV-1a
    for (const char c : s)
        h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h;
}

// Stochastic rounding draws from a counter unique to (step, layer, GEMM, operand), so that a
// run repeats bit for bit and no two tensors share their random bits.
std::uint64_t stochasticCounter(const GemmInputCall& call, GemmPass pass, GemmOperand operand)
{
    return splitMix64(nameHash(call.layer) ^ splitMix64(call.step * 8 + static_cast<std::uint64_t>(pass) * 3 +
                                                        static_cast<std::uint64_t>(operand)));
}

} // namespace

bool multipliesElements(const OperandFormat& format)
{
    return format.format.scheme == ScalingScheme::PerTensor && format.tile2d == 0;
}

float quantizeGemmOperand(std::span<const float> values, std::span<float> out, const KLayout& gemmLayout,
                          const OperandFormat& format, const Shape& shape, float delayedScale,
                          std::uint64_t firstCounter, QuantStats* stats)
{
    MANTISSA_ASSERT(static_cast<std::int64_t>(values.size()) == gemmLayout.count() && out.size() == values.size() &&
                    shape.numel() == gemmLayout.count());
    if (format.tile2d > 0) { // a weight's tiles do not depend on which way K runs through it
        quantizeTiles(values, out, shape[0], format.tile2d, format.format, stats);
        return 1.0f;
    }
    // One scale for the tensor: the layout does not matter, and the GEMM takes the elements.
    if (format.delayed)
        return quantizeWithScale(values, out, format.format, delayedScale, stats);
    if (multipliesElements(format))
        return quantizeElements(values, out, format.format, firstCounter, stats);
    if (!format.format.isBlocked()) {
        quantizeRows(values, out, 0, format.format, firstCounter, stats);
        return 1.0f;
    }
    // Nor do NVFP4's 16x16 tiles: both GEMMs read the same quantised weight.
    const bool tiled = format.format.blockRows > 1;
    const KLayout layout = tiled ? weightTileLayout(shape) : gemmLayout;
    // 2D tiles span rows of the gathered [outer, inner, k]: one row per outer (weightTileLayout).
    const auto rowLength = static_cast<std::size_t>(tiled ? layout.k * layout.inner : layout.rowLength());
    if (layout.kind == KLayout::Kind::Along && layout.inner == 1) { // K already contiguous
        quantizeRows(values, out, rowLength, format.format, firstCounter, stats);
        return 1.0f;
    }
    std::vector<float> rows(values.size()), quantized(values.size());
    gather(values, rows, layout);
    quantizeRows(rows, quantized, rowLength, format.format, firstCounter, stats);
    scatter(quantized, out, layout);
    return 1.0f;
}

KLayout weightTileLayout(const Shape& weightShape)
{
    const std::int64_t rows = weightShape[0], cols = weightShape.rank() > 1 ? weightShape[1] : 1;
    return KLayout::along(rows, cols, weightShape.numel() / std::max<std::int64_t>(rows * cols, 1));
}

OperandQuantization operandQuantization(const KLayout& gemmLayout, const OperandFormat& format, const Shape& shape,
                                        float delayedScale, std::uint64_t firstCounter)
{
    MANTISSA_ASSERT(shape.numel() == gemmLayout.count());
    OperandQuantization q;
    q.format = format.format;
    q.firstCounter = firstCounter;
    q.mayBeBf16 = decodesToBf16(format);
    const std::int64_t n = gemmLayout.count();
    if (format.tile2d > 0) { // quantizeTiles: [shape[0], the rest], each tile a span of its own
        const auto tile = static_cast<std::int64_t>(format.tile2d);
        q.tiled = true;
        q.view = {qa::OperandView::Tiles, shape[0], n / std::max<std::int64_t>(shape[0], 1), 1};
        q.grid = {tile, tile, true};
        return q;
    }
    if (multipliesElements(format)) { // one scale: the buffer's order, counters included
        q.view = {qa::OperandView::AlongRows, 1, n, 1};
        q.elements = true;
        if (format.delayed)
            q.fixedScale = delayedScale;
        return q;
    }
    MANTISSA_ASSERT(format.format.isBlocked());
    const auto block = static_cast<std::int64_t>(format.format.blockSize);
    if (format.format.blockRows > 1) { // NVFP4's 16x16 tiles over weightTileLayout's gathered matrix
        const KLayout t = weightTileLayout(shape);
        q.view = {qa::OperandView::Tiles, t.outer, t.k, t.inner};
        q.grid = {static_cast<std::int64_t>(format.format.blockRows), block, false};
        return q;
    }
    q.view = {gemmLayout.kind == KLayout::Kind::Along ? qa::OperandView::AlongRows : qa::OperandView::Around,
              gemmLayout.outer, gemmLayout.k, gemmLayout.inner};
    q.grid = {1, block, false};
    return q;
}

void rotateAlongK(std::span<float> values, const KLayout& layout, std::uint16_t signs)
{
    MANTISSA_ASSERT(static_cast<std::int64_t>(values.size()) == layout.count());
    const auto rowLength = static_cast<std::size_t>(layout.rowLength());
    const auto rotateRows = [&](std::span<float> rows) {
        const auto count = static_cast<std::int64_t>(rows.size() / rowLength);
#pragma omp parallel for schedule(static) if (rows.size() >= (1 << 16))
        for (std::int64_t r = 0; r < count; ++r)
            hadamardTransformRow(rows.subspan(static_cast<std::size_t>(r) * rowLength, rowLength), signs);
    };
    if (layout.kind == KLayout::Kind::Along && layout.inner == 1) {
        rotateRows(values);
        return;
    }
    if (layout.kind == KLayout::Kind::Along) {
        // K runs down columns (a weight-gradient input [batch, features], K the batch): each
        // group of 16 K positions is rotated in place, column by column, with no transpose.
        const std::int64_t groups = layout.k / static_cast<std::int64_t>(kHadamardSize);
        const auto inner = static_cast<std::size_t>(layout.inner);
#pragma omp parallel for collapse(2) schedule(static) if (values.size() >= (1 << 16))
        for (std::int64_t o = 0; o < layout.outer; ++o)
            for (std::int64_t g = 0; g < groups; ++g)
                hadamardTransformColumns(values.data() + static_cast<std::size_t>(o * layout.k + g * 16) * inner, inner,
                                         inner, signs);
        return;
    }
    std::vector<float> rows(values.size());
    gather(values, rows, layout);
    rotateRows(rows);
    scatter(rows, values, layout);
}

void GemmInputQuantizer::setRecipes(const OperandRecipes& recipes, const RecipeOptions& options)
{
    m_recipes = recipes;
    m_options = options;
    m_history = {};
}

OperandFormat GemmInputQuantizer::formatOf(GemmPass pass, GemmOperand operand, bool mayRotate) const
{
    const bool rotates = mayRotate && rotatesWeightGradient(m_recipes.activation, m_options) &&
                         rotatesWeightGradient(m_recipes.gradient, m_options);
    return operandFormat(m_recipes[operand], pass, operand, m_options, rotates);
}

float GemmInputQuantizer::delayedScaleFor(AmaxHistory& h, const GemmInputCall& call, MiniFloat element)
{
    // A new step closes the previous one: its amax joins the history and the scale for this
    // step follows from the history's largest (TE's amax_compute_algo "max", margin 0). An amax
    // of 0 or a non-finite one keeps the previous scale, as TE's _default_sf_compute does.
    if (call.training && h.open && h.step != call.step) {
        h.amaxes.push_back(h.pending);
        while (h.amaxes.size() > static_cast<std::size_t>(m_options.amaxHistory))
            h.amaxes.pop_front();
        h.open = false;
        const float amax = *std::max_element(h.amaxes.begin(), h.amaxes.end());
        if (amax > 0.0f && std::isfinite(amax))
            h.scale = std::min(miniFloatFormat(element).maxFinite() / amax, std::numeric_limits<float>::max());
    }
    return h.scale;
}

void GemmInputQuantizer::noteDelayedAmax(AmaxHistory& h, const GemmInputCall& call, const OperandFormat& format,
                                         float amax)
{
    if (!format.delayed || !call.training)
        return;
    h.pending = h.open ? std::max(h.pending, amax) : amax;
    h.open = true;
    h.step = call.step;
}

namespace {

// The chunk and strides of the block scales of a weight [rows, cols] in square tiles of `tile`,
// one fp32 scale each in [row tiles, column tiles], for a GEMM that runs K along its rows (a
// tile column is a chunk) or down its columns (a tile row is); false for any other layout (a
// convolution's weight).
bool tileScaleStrides(const Tensor& t, std::int64_t tile, const KLayout& layout, BlockScales& blocks)
{
    const std::int64_t rows = t.shape()[0], cols = t.numel() / rows;
    const std::int64_t columnTiles = (cols + tile - 1) / tile;
    blocks.chunk = blocks.group = tile;
    if (layout.inner == 1 && layout.outer == rows && layout.k == cols) {
        blocks.chunkStride = 1;
        blocks.indexStride = columnTiles;
    } else if (layout.outer == 1 && layout.k == rows && layout.inner == cols) {
        blocks.chunkStride = columnTiles;
        blocks.indexStride = 1;
    } else
        return false;
    return true;
}

// Where the block scales of an fp32-scaled operand (1x128 blocks along K, or a weight's 128x128
// tiles) lie for the block-scaled GEMM (BlockScales, without the scales themselves) and how many
// there are (`count`), where the layout is one a linear layer's GEMM reads (K along the rows, or
// K down the columns of a matrix); nothing otherwise (a convolution's weight, delayed scaling:
// the operand is then dequantised, and the GEMM counts its scales 1).
std::optional<BlockScales> blockScaleLayout(const Tensor& t, const KLayout& layout, const OperandFormat& format,
                                            std::int64_t& count)
{
    if (format.delayed || layout.kind != KLayout::Kind::Along)
        return std::nullopt;
    const auto blocksOf = [](std::int64_t length, std::int64_t block) { return (length + block - 1) / block; };
    BlockScales blocks;
    if (format.tile2d > 0 && format.format.scheme == ScalingScheme::PerTensor) {
        const std::int64_t rows = t.shape()[0], cols = t.numel() / rows;
        const auto tile = static_cast<std::int64_t>(format.tile2d);
        if (!tileScaleStrides(t, tile, layout, blocks))
            return std::nullopt; // a convolution's weight
        count = blocksOf(rows, tile) * blocksOf(cols, tile);
        return blocks;
    }
    if (format.format.scheme == ScalingScheme::Fp32Blocks && format.format.blockRows <= 1 &&
        format.format.blockSize > 0 && (layout.inner == 1 || layout.outer == 1)) {
        const auto block = static_cast<std::int64_t>(format.format.blockSize);
        const std::int64_t perK = blocksOf(layout.k, block);
        blocks.chunk = block;
        if (layout.inner == 1) { // [rows, blocks per row]
            blocks.chunkStride = 1;
            blocks.indexStride = perK;
            count = layout.outer * perK;
        } else { // [blocks along k, inner]
            blocks.chunkStride = layout.inner;
            blocks.indexStride = 1;
            count = perK * layout.inner;
        }
        return blocks;
    }
    return std::nullopt;
}

} // namespace

std::optional<GemmOperandValues> GemmInputQuantizer::reuse(const GemmInputCall& call, const GemmOperandValues& prepared,
                                                           GemmPass preparedFor, const Tensor& t, GemmPass pass,
                                                           GemmOperand operand, const KLayout& layout) const
{
    // A pass the recipe leaves unquantised (precision.recipe.passes) neither hands on nor takes
    // another pass's values.
    if (m_recipes[operand] == GemmRecipe::None || call.observer || !call.backend.keepsQuantizedOperands() ||
        prepared.values.shape() != t.shape() || !quantisesPass(preparedFor, m_options) ||
        !quantisesPass(pass, m_options))
        return std::nullopt;
    if (!prepared.blocks.present()) {
        if (!samePerTensorValues(preparedFor, pass, operand, call.mayRotate))
            return std::nullopt;
        return prepared;
    }
    if (!call.blockScaledGemm)
        return std::nullopt;
    // Both GEMMs' formats: the same square tiles, rounded to nearest (prepare()'s elements and
    // scales then depend on the tensor only), or `t` is prepared anew.
    const OperandFormat format = formatOf(pass, operand, call.mayRotate);
    const OperandFormat before = formatOf(preparedFor, operand, call.mayRotate);
    const auto tile = static_cast<std::int64_t>(format.tile2d);
    const auto sameTiles = [](const OperandFormat& a, const OperandFormat& b) {
        return a.tile2d == b.tile2d && a.format.scheme == b.format.scheme && a.format.element == b.format.element &&
               a.format.powerOfTwoScales == b.format.powerOfTwoScales && a.delayed == b.delayed &&
               a.hadamard == b.hadamard && a.format.encoding.rounding == b.format.encoding.rounding;
    };
    if (tile == 0 || format.format.scheme != ScalingScheme::PerTensor || format.delayed || format.hadamard ||
        format.format.encoding.rounding != Rounding::NearestEven || !sameTiles(format, before) ||
        prepared.blocks.chunk != tile || prepared.blocks.group != tile)
        return std::nullopt;
    GemmOperandValues again = prepared;
    if (!tileScaleStrides(t, tile, layout, again.blocks))
        return std::nullopt;
    return again;
}

bool GemmInputQuantizer::samePerTensorValues(GemmPass from, GemmPass to, GemmOperand operand, bool mayRotate) const
{
    if (m_recipes[operand] == GemmRecipe::None || !quantisesPass(from, m_options) || !quantisesPass(to, m_options))
        return false;
    const OperandFormat a = formatOf(from, operand, mayRotate);
    const OperandFormat b = formatOf(to, operand, mayRotate);
    const auto perTensor = [](const OperandFormat& f) {
        return f.format.scheme == ScalingScheme::PerTensor && f.tile2d == 0 && !f.hadamard &&
               f.format.encoding.rounding == Rounding::NearestEven;
    };
    return perTensor(a) && perTensor(b) && a.delayed == b.delayed && a.format.element == b.format.element &&
           a.format.powerOfTwoScales == b.format.powerOfTwoScales &&
           a.format.encoding.overflow == b.format.encoding.overflow;
}

GemmOperandValues GemmInputQuantizer::prepare(const GemmInputCall& call, const Tensor& t, GemmPass pass,
                                              GemmOperand operand, const KLayout& layout)
{
    const GemmOperand role = operand == GemmOperand::Weight && !call.weightIsWeight ? GemmOperand::Activation : operand;
    if (m_recipes[role] == GemmRecipe::None || !quantisesPass(pass, m_options))
        return {t, 1.0f, {}};
    MANTISSA_ASSERT(layout.count() == t.numel());
    Backend& backend = call.backend;
    const OperandFormat format =
        withScaleRounding(formatOf(pass, role, call.mayRotate), m_options, call.blockScaledGemm);
    OperandFormat seeded = format;
    seeded.format.encoding.seed = call.seed;
    // The Hadamard rotation comes first, on the host (an fp32 round trip, exact), so that its
    // sums are the same wherever the operand lies; the quantiser then reads the rotated values.
    Tensor source = t;
    if (format.hadamard) {
        std::vector<float> values = hostValues(backend, t);
        rotateAlongK(values, layout, hadamardSigns(call.seed));
        source = backend.empty(t.shape(), DType::F32);
        backend.upload(values.data(), source);
    }
    // The lens needs the codes, which the backends' quantisers do not keep: on sampled steps the
    // measuring quantiser runs on a host copy for the statistics (the same blocks, the same
    // values), and the GEMM still reads the backend's.
    const auto measure = [&](float delayedScale, std::uint64_t counter) {
        if (!call.observer)
            return;
        const std::vector<float> values = hostValues(backend, source);
        std::vector<float> quantized(values.size());
        QuantStats stats;
        quantizeGemmOperand(values, quantized, layout, seeded, t.shape(), delayedScale, counter, &stats);
        call.observer->gemmInput(call.layer, pass, operand, format, stats);
    };

    // fp32-scaled blocks for a GEMM that applies their scales: the elements and the scales,
    // where the backend quantises them so (else the dequantised values below).
    std::int64_t scaleCount = 0;
    if (call.blockScaledGemm)
        if (std::optional<BlockScales> blocks = blockScaleLayout(source, layout, seeded, scaleCount))
            if (std::optional<QuantizedBlocks> quantized = backend.quantizeOperandBlocks(
                    source, operandQuantization(layout, seeded, t.shape(), 1.0f, 0), scaleCount)) {
                measure(1.0f, 0);
                blocks->scales = std::move(quantized->scales);
                return {std::move(quantized->elements), 1.0f, std::move(*blocks)};
            }

    AmaxHistory& history = m_history[static_cast<int>(operand)];
    const float scale = format.delayed ? delayedScaleFor(history, call, format.format.element) : 1.0f;
    const std::uint64_t counter = stochasticCounter(call, pass, operand);
    try {
        measure(scale, counter);
        QuantizedOperand quantized =
            backend.quantizeOperand(source, operandQuantization(layout, seeded, t.shape(), scale, counter));
        noteDelayedAmax(history, call, format, quantized.amax);
        return {std::move(quantized.values), quantized.decodeScale, {}};
    } catch (const ConfigError& e) {
        throw ConfigError("layer " + call.layer + ", " + std::string(enumKey(pass)) + " " +
                          std::string(enumKey(operand)) + " under " + gemmRecipeName(m_recipes[role]) + ": " +
                          e.what());
    }
}

} // namespace mantissa
