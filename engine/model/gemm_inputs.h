#pragma once
// The one place where a layer's GEMM inputs are quantised by the run's recipe
// (engine/precision/gemm_recipe.h). Every layer that multiplies (linear, conv2d, and any layer
// whose projections go through the backend's GEMM) hands each operand to
// Layer::gemmInput() before the GEMM; without a recipe the operand comes back untouched.
//
// The backend quantises an operand into a new tensor (Backend::quantizeOperand). Under
// per-tensor scaling (fp8-hybrid, fp8-e4m3, fp8-delayed) the tensor holds the FP8 elements
// themselves, always bf16 numbers, and the tensor's decode scale comes with it: the GEMM
// multiplies the elements with fp32 accumulation and multiplies the sum once by the product of
// the two decode scales, as FP8 tensor cores and cuBLASLt's scaled FP8 GEMMs do (docs/formats.md,
// "The FP8 GEMM"). Under fp32-scaled blocks (fp8-block's 1x128 tiles and 128x128 blocks), for a
// GEMM that applies block scales (a linear layer's, Backend::gemmBlockScaled), it holds the
// elements too, and the blocks' decode scales come with it, laid out by K-chunk
// (docs/formats.md, "The block-scaled FP8 GEMM"), where the backend quantises so
// (Backend::quantizeOperandBlocks: the CPU). Otherwise the block formats hand over the
// quantise-dequantised values (element times its block's scale), in bf16 when every one is a
// bf16 (MX) and the backend writes them so, and in fp32 otherwise. Either way the backend's GEMM
// and convolution multiply with fp32 accumulation (bf16 natively where the CPU can) and write
// the layer's bf16 output. Blocks run along the
// GEMM's reduction dimension K (KLayout says where K lies in the operand's buffer); an
// operand whose K is not contiguous is gathered so that it is, quantised, and scattered back.
// A convolution's blocks are formed over the stored tensor as an implicit GEMM over NHWC data
// reads it: along the channels at each pixel for the forward and data-gradient GEMMs (K's
// channel part), along batch x space for each channel for the weight gradient. The
// overlapping patches of an explicit im2col are not re-blocked each on their own.
#include "engine/backend/backend.h"
#include "engine/numerics/quant_stats.h"
#include "engine/precision/gemm_recipe.h"
#include "engine/tensor/tensor.h"

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>

namespace mantissa {

class Backend;
struct OperandQuantization; // engine/numerics/operand_quantization.h

// Where K lies in an operand's row-major buffer.
//  Along:  the buffer is [outer, k, inner]; a block runs along k for each (outer, inner).
//          rows(r, k) is [r, k, 1], the contiguous case.
//  Around: the buffer is [k1, outer, k2]; a block runs along (k1, k2) for each outer (the
//          weight gradient of a convolution, whose K is batch x pixels and whose "rows" are
//          the channels).
struct KLayout {
    enum class Kind : std::uint8_t { Along, Around };
    Kind kind = Kind::Along;
    std::int64_t outer = 1, k = 1, inner = 1; // Around: k1 = outer, rows = k, k2 = inner

    static KLayout rows(std::int64_t rows, std::int64_t k) { return {Kind::Along, rows, k, 1}; }
    static KLayout along(std::int64_t outer, std::int64_t k, std::int64_t inner)
    {
        return {Kind::Along, outer, k, inner};
    }
    static KLayout around(std::int64_t k1, std::int64_t rows, std::int64_t k2) { return {Kind::Around, k1, rows, k2}; }
    // Values per row once K is contiguous: the rowLength of the block quantiser.
    std::int64_t rowLength() const { return kind == Kind::Along ? k : outer * inner; }
    std::int64_t count() const { return outer * k * inner; }
};

// Receives what the quantisation did to each operand on the steps the numerics lens samples.
// Only a set observer makes prepare() measure: the statistics need the codes, which the fast
// quantiser (fast_quantizer.h) never materialises, so measuring takes the slow path.
class GemmInputObserver {
public:
    virtual ~GemmInputObserver() = default;
    virtual void gemmInput(const std::string& layer, GemmPass pass, GemmOperand operand, const OperandFormat& format,
                           const QuantStats& stats) = 0;
};

// Whether the GEMM of an operand in `format` multiplies its elements and scales the fp32 sum
// (per-tensor scaling, current or delayed) rather than multiplying dequantised values.
bool multipliesElements(const OperandFormat& format);

// Host-side quantisation of one operand (no state): `values` and `out` in the layout's order.
// `out` receives what the GEMM multiplies: the elements when multipliesElements(format), else
// the quantise-dequantised values; the return value is the decode scale the GEMM's fp32 sum is
// multiplied by (1 for the block formats). `shape` is the operand tensor's, which 2D tiles
// read: fp32 tiles (format.tile2d) cover the matrix [shape[0], the rest]; NVFP4's 16x16 tiles
// (format.blockRows > 1) ignore `layout` and tile the weight as weightTileLayout(shape) gathers
// it, [out, kernel positions x in]: for a linear weight [out, in] that is the matrix itself, for
// a convolution's [out, in, kh, kw] one [out, in] matrix per kernel position, so a tile is 16
// output x 16 input channels, the values a 1x16 block along K holds in the forward and in the
// data-gradient GEMM. `delayedScale` is the fp32 scale a delayed-scaling operand is encoded
// with. When `stats` is given it receives what the quantisation did (measured on the
// dequantised values). Throws ConfigError when the format refuses the layout (a partial NVFP4
// block).
float quantizeGemmOperand(std::span<const float> values, std::span<float> out, const KLayout& layout,
                          const OperandFormat& format, const Shape& shape, float delayedScale,
                          std::uint64_t firstCounter, QuantStats* stats);

// The layout a weight is tiled in whichever GEMM reads it: [shape[0], shape[1], the rest].
KLayout weightTileLayout(const Shape& weightShape);

// quantizeGemmOperand's work as a request a backend runs where the operand lies
// (Backend::quantizeOperand, engine/numerics/operand_quantization.h): the same blocks, the same
// stochastic counters, the elements and their decode scale under per-tensor scaling.
OperandQuantization operandQuantization(const KLayout& gemmLayout, const OperandFormat& format, const Shape& shape,
                                        float delayedScale, std::uint64_t firstCounter);

// `values` (in `layout`'s order) rotated in place along K by the random Hadamard transform
// with `signs` (hadamard_transform.h): groups of 16 consecutive values of each row's K.
void rotateAlongK(std::span<float> values, const KLayout& layout, std::uint16_t signs);

// What one call of GemmInputQuantizer::prepare needs to know about the pass.
struct GemmInputCall {
    Backend& backend;
    const std::string& layer; // for messages and the lens
    bool training = true;     // eval passes do not move the delayed-scaling history
    std::uint64_t seed = 0, step = 0;
    GemmInputObserver* observer = nullptr; // set on sampled steps
    // The layer lets the recipe's random Hadamard transform rotate its weight-gradient inputs
    // (Layer::weightGradientMayRotate); the signs are drawn from `seed`.
    bool mayRotate = false;
    // The GEMM applies per-block decode scales (Backend::gemmBlockScaled: a linear layer's;
    // a convolution's cannot, Layer::gemmTakesBlockScales): fp32-scaled blocks then come as
    // elements with their scales instead of dequantised values.
    bool blockScaledGemm = false;
    // The weight operand is a weight, which the recipe may scale in 2D tiles (fp8-block's
    // 128x128, NVFP4's 16x16). False for attention's products, whose right operand (K or V) is
    // an activation: it takes the activation's format, blocked along K.
    bool weightIsWeight = true;
};

// An operand as its GEMM reads it: the GEMM multiplies `values` with fp32 accumulation and
// multiplies the sum by the product of its two operands' `scale` (1 unless `values` holds
// per-tensor FP8 elements), before any bias and the rounding to the output's dtype. With
// `blocks` present, `values` holds fp32-scaled blocks' elements and the GEMM is
// Backend::gemmBlockScaled with these decode scales (`scale` is then 1).
struct GemmOperandValues {
    Tensor values;
    float scale = 1.0f;
    BlockScales blocks;
};

// A layer's quantisation state: its recipe and, for delayed scaling, the amax history of
// each operand (per tensor, as Transformer Engine keeps one per GEMM input).
class GemmInputQuantizer {
public:
    void setRecipes(const OperandRecipes& recipes, const RecipeOptions& options);
    const OperandRecipes& recipes() const { return m_recipes; }
    // Whether any operand role is quantised.
    bool quantises() const { return m_recipes.any(); }
    const RecipeOptions& options() const { return m_options; }

    // `t` as the GEMM of `pass` should read it: `t` itself (scale 1) without a recipe, else a
    // tensor of the same shape holding the elements or the quantise-dequantised values (see
    // quantizeGemmOperand), with its decode scale. The backend quantises it where it lies
    // (Backend::quantizeOperand, or quantizeOperandBlocks for a GEMM that applies block
    // scales), in bf16 where the values allow and the backend chooses to, the same values on
    // every backend. This class decides what is quantised how (formats, layouts, the
    // delayed-scaling history, the lens's statistics) and never where. A weight-gradient input
    // the recipe rotates comes back rotated and quantised: the GEMM's product is the weight
    // gradient only with both of its inputs prepared here.
    GemmOperandValues prepare(const GemmInputCall& call, const Tensor& t, GemmPass pass, GemmOperand operand,
                              const KLayout& layout);

    // prepare() for `t` with `layout` and `pass` without quantising it again, where `prepared`
    // is what prepare() gave for `t` (unchanged since) in the GEMM of `preparedFor` and these
    // are the same elements and scales: an operand under a per-tensor format that both GEMMs
    // share (samePerTensorValues: an activation in the forward and the weight gradient, a
    // gradient in the weight and the data gradient, a weight in the forward and the data
    // gradient), or a weight in square tiles with block scales (fp8-block's 128x128, whose
    // tiles do not depend on which way K runs through the weight; the scales' strides are laid
    // out for `layout`). Nothing when that is not so (the caller prepares `t` anew); sampled
    // steps prepare anew too, so that the lens measures every GEMM input.
    std::optional<GemmOperandValues> reuse(const GemmInputCall& call, const GemmOperandValues& prepared,
                                           GemmPass preparedFor, const Tensor& t, GemmPass pass, GemmOperand operand,
                                           const KLayout& layout) const;

    // Whether prepare() gives `operand` the same values and decode scale in the GEMMs of `from`
    // and `to` of one step, whatever the tensor and however K runs through it: one per-tensor
    // format in both, rounded to nearest, not rotated. A per-tensor scale follows from the
    // whole tensor (current scaling) or from the amax history, which moves only between steps
    // (delayed scaling), and each element is rounded on its own.
    bool samePerTensorValues(GemmPass from, GemmPass to, GemmOperand operand, bool mayRotate) const;

    // The scale a delayed-scaling operand uses at `step` (tests and the lens).
    float delayedScale(GemmOperand operand) const { return m_history[static_cast<int>(operand)].scale; }

    // An operand's delayed-scaling state: what a saved training state keeps (checkpoint.cpp), so
    // that a resumed run scales its next step as the run it continues would have.
    struct AmaxHistory {
        std::deque<float> amaxes; // the previous steps', newest last
        float pending = 0.0f;     // the largest amax of the open step
        bool open = false;
        std::uint64_t step = 0;
        float scale = 1.0f; // Transformer Engine starts from 1
        bool operator==(const AmaxHistory&) const = default;
    };
    // By operand (GemmOperand's order).
    const std::array<AmaxHistory, 3>& amaxHistories() const { return m_history; }
    void restoreAmaxHistories(const std::array<AmaxHistory, 3>& histories) { m_history = histories; }

private:
    float delayedScaleFor(AmaxHistory& h, const GemmInputCall& call, MiniFloat element);
    // The open step's amax of a delayed-scaling operand joins the history (training passes only).
    static void noteDelayedAmax(AmaxHistory& h, const GemmInputCall& call, const OperandFormat& format, float amax);

    // The format `operand` takes in the GEMM of `pass` (GemmOperand::Weight standing for an
    // activation where weightIsWeight is false), before withScaleRounding; the Hadamard
    // rotation only where both weight-gradient inputs' recipes rotate, as it cancels only then.
    OperandFormat formatOf(GemmPass pass, GemmOperand operand, bool mayRotate) const;

    OperandRecipes m_recipes;
    RecipeOptions m_options;
    std::array<AmaxHistory, 3> m_history;
};

} // namespace mantissa
