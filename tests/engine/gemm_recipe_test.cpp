// The sub-16-bit recipes (issue 17): every GEMM of a linear layer (forward, data gradient,
// weight gradient) and a convolution's under each recipe against an independent reference
// (the inputs quantised with the block_quantizer functions along K, transposed by hand,
// multiplied in double and rounded to bf16), delayed scaling's history, the bad inputs, and
// short training runs that learn, repeat, and show what keeping the first and last layers buys.
#include "engine/backend/backend.h"
#include "engine/data/dataset.h"
#include "engine/model/gemm_inputs.h"
#include "engine/model/layers/conv2d.h"
#include "engine/model/layers/linear.h"
#include "engine/model/model.h"
#include "engine/numerics/block_quantizer.h"
#include "engine/numerics/conversions.h"
#include "engine/numerics/hadamard_transform.h"
#include "engine/numerics/minifloat_codec.h"
#include "engine/train/trainer.h"
#include "engine/util/check.h"
#include "recorded_training.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

using namespace mantissa;

namespace {

float roundToBf16(float v) { return roundToDType(v, DType::BF16); }

constexpr PrecisionMode kRecipes[] = {PrecisionMode::Fp8Hybrid, PrecisionMode::Fp8E4m3, PrecisionMode::Fp8Block,
                                      PrecisionMode::Mxfp8,     PrecisionMode::Mxfp6,   PrecisionMode::Mxfp4,
                                      PrecisionMode::Nvfp4};

// Heavy-tailed values (a few outliers per row make blocks clip and small values flush),
// already bf16 as a layer's activations and gradients are.
std::vector<float> randomValues(std::size_t n, std::uint32_t seed)
{
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) {
        x = normal(gen) * (uniform(gen) < 0.05f ? 30.0f : 1.0f) * 0.01f;
        x = roundToBf16(x);
    }
    return v;
}

std::vector<float> transpose(const std::vector<float>& m, std::int64_t rows, std::int64_t cols)
{
    std::vector<float> t(m.size());
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c)
            t[static_cast<std::size_t>(c * rows + r)] = m[static_cast<std::size_t>(r * cols + c)];
    return t;
}

// Rows of length k quantise-dequantised with the block quantiser directly.
std::vector<float> quantizedRows(const std::vector<float>& v, std::size_t k, const OperandFormat& f)
{
    std::vector<float> out(v.size());
    quantizeDequantize(v, out, f.format.isBlocked() ? k : 0, f.format);
    return out;
}

// An operand as a recipe's GEMM takes it (gemm_inputs.h), computed with the block quantiser
// directly: a per-tensor format gives the FP8 elements and the tensor's decode scale (the GEMM
// multiplies the elements and scales the sum once, as FP8 hardware does); the block formats
// give the quantise-dequantised values and scale 1.
struct RefOperand {
    std::vector<float> values;
    float scale = 1.0f;
};
RefOperand referenceOperand(const std::vector<float>& v, std::size_t k, const OperandFormat& f)
{
    if (f.format.scheme != ScalingScheme::PerTensor || f.tile2d > 0)
        return {quantizedRows(v, k, f)};
    const QuantizedTensor q = quantize(v, 0, f.format);
    RefOperand o{std::vector<float>(v.size()), q.blocks.front().scale};
    for (std::size_t i = 0; i < v.size(); ++i)
        o.values[i] = decodeMiniFloat(q.codes[i], f.format.element);
    return o;
}

// A weight [rows, cols] by the recipe: 128x128 tiles each with its own per-tensor scale
// (fp8-block), else rows along K.
RefOperand quantizedWeight(const std::vector<float>& w, std::int64_t rows, std::int64_t cols, const OperandFormat& f,
                           bool kAlongRows)
{
    if (f.tile2d == 0) {
        if (kAlongRows)
            return referenceOperand(w, static_cast<std::size_t>(cols), f);
        RefOperand o = referenceOperand(transpose(w, rows, cols), static_cast<std::size_t>(rows), f);
        o.values = transpose(o.values, cols, rows);
        return o;
    }
    std::vector<float> out(w.size());
    const auto t = static_cast<std::int64_t>(f.tile2d);
    for (std::int64_t r0 = 0; r0 < rows; r0 += t)
        for (std::int64_t c0 = 0; c0 < cols; c0 += t) {
            std::vector<float> tile, q;
            for (std::int64_t r = r0; r < std::min(rows, r0 + t); ++r)
                for (std::int64_t c = c0; c < std::min(cols, c0 + t); ++c)
                    tile.push_back(w[static_cast<std::size_t>(r * cols + c)]);
            q.resize(tile.size());
            quantizeDequantize(tile, q, 0, f.format);
            std::size_t i = 0;
            for (std::int64_t r = r0; r < std::min(rows, r0 + t); ++r)
                for (std::int64_t c = c0; c < std::min(cols, c0 + t); ++c)
                    out[static_cast<std::size_t>(r * cols + c)] = q[i++];
        }
    return {out};
}

// C[m, n] = sum_k A[m, k] B[n, k] in double, and the fp32 accumulation-order bound.
struct Product {
    std::vector<double> value, bound;
};
Product multiply(const std::vector<float>& a, const std::vector<float>& b, std::int64_t m, std::int64_t n,
                 std::int64_t k)
{
    Product p;
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            double sum = 0, magnitude = 0;
            for (std::int64_t l = 0; l < k; ++l) {
                const double term = static_cast<double>(a[static_cast<std::size_t>(i * k + l)]) *
                                    b[static_cast<std::size_t>(j * k + l)];
                sum += term;
                magnitude += std::abs(term);
            }
            p.value.push_back(sum);
            p.bound.push_back(static_cast<double>(k) * std::ldexp(1.0, -24) * magnitude);
        }
    return p;
}

// The same for a recipe's operands: the fp32 sum multiplied by fl(scale_a * scale_b), whose
// rounding adds half an ulp of fp32 to the bound.
Product multiply(const RefOperand& a, const RefOperand& b, std::int64_t m, std::int64_t n, std::int64_t k)
{
    Product p = multiply(a.values, b.values, m, n, k);
    const double scale = a.scale * b.scale; // fp32, as the backend forms it
    for (std::size_t i = 0; i < p.value.size(); ++i) {
        p.value[i] *= scale;
        p.bound[i] = p.bound[i] * scale + std::ldexp(1.0, -24) * (std::abs(p.value[i]) + p.bound[i] * scale);
    }
    return p;
}

// Each result equals the reference rounded to bf16, or lies between the roundings of the
// reference minus and plus the fp32 accumulation-order bound.
void expectMatches(const std::vector<float>& got, const Product& ref, const std::string& what)
{
    ASSERT_EQ(got.size(), ref.value.size()) << what;
    int exact = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const float lo = roundToBf16(static_cast<float>(ref.value[i] - ref.bound[i]));
        const float hi = roundToBf16(static_cast<float>(ref.value[i] + ref.bound[i]));
        exact += got[i] == roundToBf16(static_cast<float>(ref.value[i])) ? 1 : 0;
        ASSERT_TRUE(got[i] >= lo && got[i] <= hi) << what << " element " << i << ": got " << got[i] << ", reference "
                                                  << ref.value[i] << " +- " << ref.bound[i];
    }
    EXPECT_GT(exact, static_cast<int>(got.size() * 9 / 10)) << what; // the bound is rarely needed
}

struct LinearCase {
    std::int64_t batch = 64, in = 160, out = 48; // 160: one full and one partial 1x128 tile
};

RecipeOptions roundToNearest()
{
    RecipeOptions o;
    o.stochasticRounding = RecipeSwitch::Off; // the reference rounds to nearest
    return o;
}

} // namespace

TEST(GemmRecipe, LinearGemmsMatchTheReferenceUnderEveryRecipe)
{
    auto backend = makeCpuBackend(1);
    const LinearCase c;
    for (const PrecisionMode mode : kRecipes) {
        SCOPED_TRACE(precisionModeName(mode));
        const PrecisionPolicy policy(mode, roundToNearest());
        Linear layer(c.in, c.out, false, "", false);
        layer.setName("0.linear");
        layer.applyPrecision(policy, policy.layer());
        ASSERT_EQ(layer.gemmRecipes(), OperandRecipes::all(policy.recipe()));
        layer.createParameters(*backend, DType::F32, 7);
        Parameter& weight = *layer.parameters()[0];
        const std::vector<float> w = weight.working.toFloats();
        const std::vector<float> x = randomValues(static_cast<std::size_t>(c.batch * c.in), 1);
        const std::vector<float> dy = randomValues(static_cast<std::size_t>(c.batch * c.out), 2);

        PassState pass{*backend, true, 42, 3};
        ForwardResult forward = layer.forward(pass, Tensor::fromFloats({c.batch, c.in}, x, DType::BF16));
        ASSERT_EQ(forward.output.dtype(), DType::BF16);
        const Tensor dx =
            layer.backward(pass, Tensor::fromFloats({c.batch, c.out}, dy, DType::BF16), forward.context.get());

        const GemmRecipe recipe = policy.recipe();
        const OperandFormat fa = operandFormat(recipe, GemmOperand::Activation, roundToNearest());
        const OperandFormat fw = operandFormat(recipe, GemmOperand::Weight, roundToNearest());
        const OperandFormat fg = operandFormat(recipe, GemmOperand::Gradient, roundToNearest());
        const auto in = static_cast<std::size_t>(c.in), out = static_cast<std::size_t>(c.out),
                   batch = static_cast<std::size_t>(c.batch);
        // forward: K = in
        expectMatches(
            forward.output.toFloats(),
            multiply(referenceOperand(x, in, fa), quantizedWeight(w, c.out, c.in, fw, true), c.batch, c.out, c.in),
            "forward");
        // data gradient: K = out, so W is quantised along its columns
        RefOperand wAlongOut = quantizedWeight(w, c.out, c.in, fw, false);
        wAlongOut.values = transpose(wAlongOut.values, c.out, c.in);
        expectMatches(dx.toFloats(), multiply(referenceOperand(dy, out, fg), wAlongOut, c.batch, c.in, c.out), "dgrad");
        // weight gradient: K = batch, both operands transposed, and under nvfp4 rotated along K
        // by the random Hadamard transform with the pass seed's signs before they are quantised
        const auto rotated = [&](std::vector<float> rows, std::size_t k) {
            if (rotatesWeightGradient(recipe, roundToNearest()))
                for (std::size_t begin = 0; begin < rows.size(); begin += k)
                    hadamardTransformRow(std::span(rows).subspan(begin, k), hadamardSigns(42));
            return rows;
        };
        const RefOperand dyT = referenceOperand(rotated(transpose(dy, c.batch, c.out), batch), batch, fg);
        const RefOperand xT = referenceOperand(rotated(transpose(x, c.batch, c.in), batch), batch, fa);
        expectMatches(weight.grad.toFloats(), multiply(dyT, xT, c.out, c.in, c.batch), "wgrad");
    }
}

namespace {

// The operand as quantizeGemmOperand gives it, in an fp32 tensor (the recipes' operands before
// they could be bf16), rotated first where the format says so (with the signs of the pass seed
// 42 the tests use), with its decode scale.
struct Fp32Operand {
    Tensor values;
    float scale = 1.0f;
};
Fp32Operand fp32Operand(const Tensor& t, const KLayout& layout, const OperandFormat& f)
{
    std::vector<float> values = t.toFloats();
    if (f.hadamard)
        rotateAlongK(values, layout, hadamardSigns(42));
    std::vector<float> out(values.size());
    const float scale = quantizeGemmOperand(values, out, layout, f, t.shape(), 1.0f, 0, nullptr);
    return {Tensor::fromFloats(t.shape(), out, DType::F32), scale};
}

void expectSameBits(const Tensor& got, const Tensor& want, const std::string& what)
{
    ASSERT_EQ(got.dtype(), want.dtype()) << what;
    const std::vector<float> g = got.toFloats(), w = want.toFloats();
    ASSERT_EQ(g.size(), w.size()) << what;
    for (std::size_t i = 0; i < g.size(); ++i)
        ASSERT_EQ(std::bit_cast<std::uint32_t>(g[i]), std::bit_cast<std::uint32_t>(w[i]))
            << what << " element " << i << ": " << g[i] << ", the fp32 operands give " << w[i];
}

} // namespace

// With cpu_kernels emulated every GEMM gives the bits of the same operands held in fp32 tensors
// and multiplied by the fp32 kernels: a bf16 operand holds the same values (the FP8 elements of
// a per-tensor recipe, the dequantised values of MX) and is widened exactly; per-tensor
// recipes scale the fp32 sum by the product of the decode scales. (Native bf16 kernels sum
// the same products in their own order.) fp8-block's linear layers are the exception: their
// GEMM scales each K-chunk (block_scaled_gemm_test).
TEST(GemmRecipe, EmulatedKernelsGiveTheBitsOfFp32Operands)
{
    auto backend = makeCpuBackend(CpuOptions{1, CpuKernels::Emulated});
    const LinearCase c;
    std::vector<PrecisionMode> modes(std::begin(kRecipes), std::end(kRecipes));
    modes.push_back(PrecisionMode::Fp8Delayed); // its first step's scale is 1
    for (const PrecisionMode mode : modes) {
        SCOPED_TRACE(precisionModeName(mode));
        const PrecisionPolicy policy(mode, roundToNearest());
        const GemmRecipe recipe = policy.recipe();
        const OperandFormat fa = operandFormat(recipe, GemmOperand::Activation, roundToNearest());
        const OperandFormat fw = operandFormat(recipe, GemmOperand::Weight, roundToNearest());
        const OperandFormat fg = operandFormat(recipe, GemmOperand::Gradient, roundToNearest());
        // The weight-gradient inputs of a linear layer, rotated where the recipe says (nvfp4).
        const OperandFormat faW =
            operandFormat(recipe, GemmPass::WeightGrad, GemmOperand::Activation, roundToNearest(), true);
        const OperandFormat fgW =
            operandFormat(recipe, GemmPass::WeightGrad, GemmOperand::Gradient, roundToNearest(), true);

        Linear linear(c.in, c.out, false, "", false);
        linear.setName("0.linear");
        linear.applyPrecision(policy, policy.layer());
        linear.createParameters(*backend, DType::F32, 7);
        Parameter& weight = *linear.parameters()[0];
        const Tensor x =
            Tensor::fromFloats({c.batch, c.in}, randomValues(static_cast<std::size_t>(c.batch * c.in), 1), DType::BF16);
        const Tensor dy = Tensor::fromFloats({c.batch, c.out},
                                             randomValues(static_cast<std::size_t>(c.batch * c.out), 2), DType::BF16);
        PassState pass{*backend, true, 42, 0};
        ForwardResult forward = linear.forward(pass, x);
        const Tensor dx = linear.backward(pass, dy, forward.context.get());

        // fp8-block's linear GEMMs scale each K-chunk's partial sums instead of multiplying
        // dequantised values (block_scaled_gemm_test); its convolutions below still do.
        if (recipe != GemmRecipe::Fp8Block) {
            Tensor y = backend->empty({c.batch, c.out}, forward.output.dtype());
            const Fp32Operand fx = fp32Operand(x, KLayout::rows(c.batch, c.in), fa);
            const Fp32Operand fwt = fp32Operand(weight.working, KLayout::rows(c.out, c.in), fw);
            backend->gemm(Transpose::No, Transpose::Yes, c.batch, c.out, c.in,
                          OperandScales{fx.scale, fwt.scale}.product(), fx.values, fwt.values, 0.0f, y);
            expectSameBits(forward.output, y, "forward");
            Tensor dw = backend->empty(weight.grad.shape(), weight.grad.dtype());
            const Fp32Operand fdyT = fp32Operand(dy, KLayout::along(1, c.batch, c.out), fgW);
            const Fp32Operand fxT = fp32Operand(x, KLayout::along(1, c.batch, c.in), faW);
            backend->gemm(Transpose::Yes, Transpose::No, c.out, c.in, c.batch,
                          OperandScales{fdyT.scale, fxT.scale}.product(), fdyT.values, fxT.values, 0.0f, dw);
            expectSameBits(weight.grad, dw, "wgrad");
            Tensor dxWant = backend->empty({c.batch, c.in}, dx.dtype());
            const Fp32Operand fdy = fp32Operand(dy, KLayout::rows(c.batch, c.out), fg);
            const Fp32Operand fwd = fp32Operand(weight.working, KLayout::along(1, c.out, c.in), fw);
            backend->gemm(Transpose::No, Transpose::No, c.batch, c.in, c.out,
                          OperandScales{fdy.scale, fwd.scale}.product(), fdy.values, fwd.values, 0.0f, dxWant);
            expectSameBits(dx, dxWant, "dgrad");
        }

        if (recipe == GemmRecipe::Nvfp4)
            continue; // 16-element blocks need channel counts that are multiples of 16 (below: 40)
        // A convolution: blocks along channels forward and backward-data, across batch x pixels
        // for the filter gradient (40 channels: a full and a padded block of 32).
        const std::int64_t n = 3, cin = 40, hw = 6, cout = 24;
        Conv2d conv(Shape({cin, hw, hw}), cout, 3, 1, 1, false, "", false);
        conv.setName("1.conv2d");
        conv.applyPrecision(policy, policy.layer());
        conv.createParameters(*backend, DType::F32, 3);
        Parameter& filter = *conv.parameters()[0];
        const Tensor cx = Tensor::fromFloats({n, cin, hw, hw},
                                             randomValues(static_cast<std::size_t>(n * cin * hw * hw), 5), DType::BF16);
        const Tensor cdy = Tensor::fromFloats(
            {n, cout, hw, hw}, randomValues(static_cast<std::size_t>(n * cout * hw * hw), 6), DType::BF16);
        ForwardResult cf = conv.forward(pass, cx);
        const Tensor cdx = conv.backward(pass, cdy, cf.context.get());
        ConvGeometry g{n, cin, hw, hw, cout, 3, 3, 1, 1, 1, 1, hw, hw};
        // A convolution's GEMM takes no block scales: fp8-block's tiles then have power-of-two
        // scales (precision.recipe.power_of_two_scales auto); the other recipes' formats are as is.
        const auto forConv = [](const OperandFormat& f) { return withScaleRounding(f, roundToNearest(), false); };
        if (recipe == GemmRecipe::Fp8Block)
            EXPECT_TRUE(forConv(fa).format.powerOfTwoScales && forConv(fw).format.powerOfTwoScales &&
                        forConv(fg).format.powerOfTwoScales);
        else
            EXPECT_FALSE(forConv(fa).format.powerOfTwoScales || forConv(fw).format.powerOfTwoScales ||
                         forConv(fg).format.powerOfTwoScales);
        const std::int64_t pixels = hw * hw;
        Tensor cy = backend->empty(cf.output.shape(), cf.output.dtype());
        const Fp32Operand cfx = fp32Operand(cx, KLayout::along(n, cin, pixels), forConv(fa));
        const Fp32Operand cfw = fp32Operand(filter.working, KLayout::along(cout, cin, 9), forConv(fw));
        backend->conv2dForward(cfx.values, cfw.values, nullptr, cy, g, {cfx.scale, cfw.scale});
        expectSameBits(cf.output, cy, "conv forward");
        Tensor cdw = backend->empty(filter.grad.shape(), filter.grad.dtype());
        const Fp32Operand cfxT = fp32Operand(cx, KLayout::around(n, cin, pixels), forConv(fa));
        const Fp32Operand cfdyT = fp32Operand(cdy, KLayout::around(n, cout, pixels), forConv(fg));
        backend->conv2dBackwardFilter(cfxT.values, cfdyT.values, cdw, nullptr, g, {cfxT.scale, cfdyT.scale});
        expectSameBits(filter.grad, cdw, "conv wgrad");
        Tensor cdxWant = backend->empty(cdx.shape(), cdx.dtype());
        const Fp32Operand cfdy = fp32Operand(cdy, KLayout::along(n, cout, pixels), forConv(fg));
        const Fp32Operand cfwd = fp32Operand(filter.working, KLayout::along(1, cout, cin * 9), forConv(fw));
        backend->conv2dBackwardData(cfdy.values, cfwd.values, cdxWant, g, {cfdy.scale, cfwd.scale});
        expectSameBits(cdx, cdxWant, "conv dgrad");
    }
}

// fp8-block on a GEMM that takes no block scales (a convolution's): with power_of_two_scales
// auto or on, every tile's scale is a power of two, so the dequantised values are bf16 numbers
// and reach the GEMM as bf16 (the native kernels read them); off keeps fp32 scales and fp32
// values. Either way the values are the reference quantiser's for that format, bit for bit.
TEST(GemmRecipe, Fp8BlockConvolutionOperandsArePowerOfTwoScaledBf16Values)
{
    auto backend = makeCpuBackend(1);
    const std::int64_t n = 4, channels = 160, pixels = 9; // one full and one partial 1x128 tile per pixel
    const Tensor x = Tensor::fromFloats({n, channels, 3, 3},
                                        randomValues(static_cast<std::size_t>(n * channels * pixels), 11), DType::BF16);
    const KLayout layout = KLayout::along(n, channels, pixels);
    std::vector<float> offValues, autoValues;
    for (const RecipeSwitch option : {RecipeSwitch::Auto, RecipeSwitch::On, RecipeSwitch::Off}) {
        SCOPED_TRACE(std::string(enumKey(option)));
        RecipeOptions options = roundToNearest();
        options.powerOfTwoScales = option;
        GemmInputQuantizer quantizer;
        quantizer.setRecipes(OperandRecipes::all(GemmRecipe::Fp8Block), options);
        const std::string layer = "1.conv2d";
        const GemmOperandValues v =
            quantizer.prepare({*backend, layer}, x, GemmPass::Forward, GemmOperand::Activation, layout);
        const bool powerOfTwo = option != RecipeSwitch::Off;
        EXPECT_EQ(v.values.dtype(), powerOfTwo ? DType::BF16 : DType::F32);
        EXPECT_FALSE(v.blocks.present());
        OperandFormat format = operandFormat(GemmRecipe::Fp8Block, GemmOperand::Activation, options);
        format.format.powerOfTwoScales = powerOfTwo;
        const Fp32Operand want = fp32Operand(x, layout, format);
        expectSameBits(Tensor::fromFloats(x.shape(), v.values.toFloats(), DType::F32), want.values, "values");
        (powerOfTwo ? autoValues : offValues) = v.values.toFloats();
    }
    EXPECT_NE(autoValues, offValues) << "power-of-two scales must change the quantised values";
    // A linear layer's GEMM applies the fp32 tile scales itself: auto leaves them as they are.
    RecipeOptions options = roundToNearest();
    EXPECT_FALSE(withScaleRounding(operandFormat(GemmRecipe::Fp8Block, GemmOperand::Weight, options), options, true)
                     .format.powerOfTwoScales);
    options.powerOfTwoScales = RecipeSwitch::On;
    EXPECT_TRUE(withScaleRounding(operandFormat(GemmRecipe::Fp8Block, GemmOperand::Weight, options), options, true)
                    .format.powerOfTwoScales);
    EXPECT_FALSE(withScaleRounding(operandFormat(GemmRecipe::Mxfp8, GemmOperand::Weight, options), options, false)
                     .format.powerOfTwoScales)
        << "MX scales are E8M0 already; the option is fp8-block's";
}

// Per-tensor FP8 (docs/formats.md, "The FP8 GEMM"): the layer hands the GEMM the E4M3
// elements (bf16 numbers) and the decode scale 1 / (448 / amax), and the backend sums the
// elements' products in fp32, multiplies the sum once by fl(scale_a * scale_b), then adds the
// bias, then rounds once: checked bit for bit against the same kernel's unscaled fp32 sums.
TEST(GemmRecipe, Fp8ElementsAreSummedThenScaledOnceBeforeTheBias)
{
    auto backend = makeCpuBackend(1);
    GemmInputQuantizer quantizer;
    quantizer.setRecipes(OperandRecipes::all(GemmRecipe::Fp8E4m3), roundToNearest());
    const std::string layer = "0.linear";
    const std::int64_t m = 24, n = 40, k = 96;
    const std::vector<float> x = randomValues(static_cast<std::size_t>(m * k), 3);
    const GemmOperandValues a = quantizer.prepare({*backend, layer}, Tensor::fromFloats({m, k}, x, DType::BF16),
                                                  GemmPass::Forward, GemmOperand::Activation, KLayout::rows(m, k));
    ASSERT_EQ(a.values.dtype(), DType::BF16);
    float amax = 0.0f;
    for (const float v : x)
        amax = std::max(amax, std::abs(v));
    EXPECT_EQ(a.scale, 1.0f / (448.0f / amax));
    for (const float e : a.values.toFloats())
        ASSERT_EQ(decodeMiniFloat(encodeMiniFloat(e, MiniFloat::E4M3), MiniFloat::E4M3), e) << "not an E4M3 value";
    const GemmOperandValues b =
        quantizer.prepare({*backend, layer}, Tensor::fromFloats({n, k}, randomValues(n * k, 4), DType::BF16),
                          GemmPass::Forward, GemmOperand::Weight, KLayout::rows(n, k));
    const OperandScales scales{a.scale, b.scale};
    const float s = scales.product();
    const Tensor bias = Tensor::fromFloats({n}, randomValues(static_cast<std::size_t>(n), 5), DType::BF16);
    const std::vector<float> biasValues = bias.toFloats();
    auto expectScaled = [&](const Tensor& got, const std::vector<float>& sums, std::int64_t inner,
                            const std::vector<float>* addBias, const std::string& what) {
        std::vector<float> want(sums.size());
        for (std::size_t i = 0; i < sums.size(); ++i) {
            // volatile: rounded to fp32 here, as the definition says, not contracted with the
            // bias's addition into one fused multiply-add.
            const volatile float scaled = sums[i] * s;
            want[i] = roundToBf16(addBias ? scaled + (*addBias)[i / static_cast<std::size_t>(inner) % addBias->size()]
                                          : scaled);
        }
        expectSameBits(got, Tensor::fromFloats(got.shape(), want, DType::BF16), what);
    };

    Tensor sums = backend->empty({m, n}, DType::F32), c = backend->empty({m, n}, DType::BF16);
    backend->gemm(Transpose::No, Transpose::Yes, m, n, k, 1.0f, a.values, b.values, 0.0f, sums);
    backend->gemm(Transpose::No, Transpose::Yes, m, n, k, s, a.values, b.values, 0.0f, c);
    expectScaled(c, sums.toFloats(), 1, nullptr, "gemm");
    backend->gemmRowBias(Transpose::No, Transpose::Yes, m, n, k, a.values, b.values, bias, c, scales);
    // bias[j] on row r, column j: index i = r * n + j, so the bias index is i % n.
    expectScaled(c, sums.toFloats(), 1, &biasValues, "gemmRowBias");
    // Into fp32, where one rounding more or less shows in the last bit: the scaled sum is rounded
    // before the bias joins it, as the CUDA backend does (__fmul_rn, then the bias).
    Tensor c32 = backend->empty({m, n}, DType::F32);
    backend->gemmRowBias(Transpose::No, Transpose::Yes, m, n, k, a.values, b.values, bias, c32, scales);
    const std::vector<float> sumValues = sums.toFloats(), got32 = c32.toFloats();
    int fusedWouldDiffer = 0;
    for (std::size_t i = 0; i < sumValues.size(); ++i) {
        const volatile float scaled = sumValues[i] * s;
        const float bj = biasValues[i % static_cast<std::size_t>(n)];
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got32[i]), std::bit_cast<std::uint32_t>(scaled + bj)) << "element " << i;
        fusedWouldDiffer += std::fma(sumValues[i], s, bj) != scaled + bj;
    }
    EXPECT_GT(fusedWouldDiffer, 0) << "no element tells two roundings from a fused multiply-add";

    // A convolution: forward with bias, backward data, and the filter gradient with the bias
    // gradient, which sums dy's elements alone and takes dy's scale only.
    const std::int64_t images = 2, cin = 8, hw = 5, cout = n;
    const ConvGeometry g{images, cin, hw, hw, cout, 3, 3, 1, 1, 1, 1, hw, hw};
    const std::vector<float> elementsA = a.values.toFloats(), elementsB = b.values.toFloats();
    const Tensor cx = Tensor::fromFloats(
        {images, cin, hw, hw}, std::vector<float>(elementsA.begin(), elementsA.begin() + images * cin * hw * hw),
        DType::BF16);
    const Tensor cw = Tensor::fromFloats(
        {cout, cin, 3, 3}, std::vector<float>(elementsB.begin(), elementsB.begin() + cout * cin * 9), DType::BF16);
    Tensor ysum = backend->empty({images, cout, hw, hw}, DType::F32), y = backend->empty(ysum.shape(), DType::BF16);
    backend->conv2dForward(cx, cw, nullptr, ysum, g);
    backend->conv2dForward(cx, cw, &bias, y, g, scales);
    expectScaled(y, ysum.toFloats(), hw * hw, &biasValues, "conv forward");
    const Tensor cdy = Tensor::fromFloats(ysum.shape(), y.toFloats(), DType::BF16);
    Tensor dxsum = backend->empty(cx.shape(), DType::F32), dx = backend->empty(cx.shape(), DType::BF16);
    backend->conv2dBackwardData(cdy, cw, dxsum, g);
    backend->conv2dBackwardData(cdy, cw, dx, g, scales);
    expectScaled(dx, dxsum.toFloats(), 1, nullptr, "conv dgrad");
    Tensor dwsum = backend->empty(cw.shape(), DType::F32), dw = backend->empty(cw.shape(), DType::BF16);
    Tensor dbsum = backend->empty({cout}, DType::F32), db = backend->empty({cout}, DType::BF16);
    backend->conv2dBackwardFilter(cx, cdy, dwsum, &dbsum, g);
    backend->conv2dBackwardFilter(cx, cdy, dw, &db, g, scales);
    expectScaled(dw, dwsum.toFloats(), 1, nullptr, "conv wgrad");
    std::vector<float> dbWant = dbsum.toFloats();
    for (float& v : dbWant)
        v = roundToBf16(v * scales.b);
    expectSameBits(db, Tensor::fromFloats(db.shape(), dbWant, DType::BF16), "conv bias gradient");
}

TEST(GemmRecipe, QuantisationChangesTheProduct)
{
    // The reference above would pass for a layer that quantised nothing only if quantising
    // changed nothing; it does change the product, by more under 4 bits than under 8.
    auto backend = makeCpuBackend(1);
    const LinearCase c;
    const std::vector<float> x = randomValues(static_cast<std::size_t>(c.batch * c.in), 1);
    auto outputFor = [&](PrecisionMode mode) {
        const PrecisionPolicy policy(mode);
        Linear layer(c.in, c.out, false, "", false);
        layer.setName("0.linear");
        layer.applyPrecision(policy, policy.layer());
        layer.createParameters(*backend, DType::F32, 7);
        PassState pass{*backend, false, 42, 0};
        return layer.forward(pass, Tensor::fromFloats({c.batch, c.in}, x, DType::BF16)).output.toFloats();
    };
    const std::vector<float> bf16 = outputFor(PrecisionMode::MixedBf16);
    auto error = [&](PrecisionMode mode) {
        const std::vector<float> y = outputFor(mode);
        double e = 0;
        for (std::size_t i = 0; i < y.size(); ++i)
            e += std::pow(static_cast<double>(y[i]) - bf16[i], 2);
        return e;
    };
    const double mxfp8 = error(PrecisionMode::Mxfp8), mxfp4 = error(PrecisionMode::Mxfp4);
    EXPECT_GT(mxfp8, 0.0);
    EXPECT_GT(mxfp4, 10 * mxfp8);
}

TEST(GemmRecipe, ConvolutionBlocksRunAlongChannelsAndBatch)
{
    // Forward: blocks of 32 input channels at each pixel; weight gradient: blocks along batch
    // x pixels for each channel. One image row is checked against a direct convolution.
    auto backend = makeCpuBackend(1);
    const PrecisionPolicy policy(PrecisionMode::Mxfp8);
    const std::int64_t n = 2, cin = 64, hw = 4, cout = 32;
    Conv2d layer(Shape({cin, hw, hw}), cout, 3, 1, 1, false, "", false);
    layer.setName("0.conv2d");
    layer.applyPrecision(policy, policy.layer());
    layer.createParameters(*backend, DType::F32, 3);
    Parameter& weight = *layer.parameters()[0];
    const std::vector<float> w = weight.working.toFloats();
    const std::vector<float> x = randomValues(static_cast<std::size_t>(n * cin * hw * hw), 5);
    const std::vector<float> dy = randomValues(static_cast<std::size_t>(n * cout * hw * hw), 6);
    PassState pass{*backend, true, 1, 0};
    ForwardResult forward = layer.forward(pass, Tensor::fromFloats({n, cin, hw, hw}, x, DType::BF16));
    layer.backward(pass, Tensor::fromFloats({n, cout, hw, hw}, dy, DType::BF16), forward.context.get());

    const OperandFormat f = operandFormat(GemmRecipe::Mxfp8, GemmOperand::Activation, {});
    const std::int64_t pixels = hw * hw;
    // x as [n, pixel, channel] rows, quantised along channels, back to NCHW.
    auto alongChannels = [&](const std::vector<float>& v, std::int64_t images, std::int64_t channels,
                             std::int64_t pixels) {
        std::vector<float> result(v.size());
        for (std::int64_t i = 0; i < images; ++i) {
            const std::vector<float> plane(v.begin() + i * channels * pixels, v.begin() + (i + 1) * channels * pixels);
            const std::vector<float> q =
                transpose(quantizedRows(transpose(plane, channels, pixels), static_cast<std::size_t>(channels), f),
                          pixels, channels);
            std::copy(q.begin(), q.end(), result.begin() + i * channels * pixels);
        }
        return result;
    };
    const std::vector<float> xq = alongChannels(x, n, cin, pixels);
    // weights [cout, cin, 9]: along cin for each (cout, tap)
    const std::vector<float> wq = alongChannels(w, cout, cin, 9);
    const std::vector<float> y = forward.output.toFloats();
    int checked = 0;
    for (std::int64_t o = 0; o < cout; ++o)
        for (std::int64_t py = 0; py < hw; ++py)
            for (std::int64_t px = 0; px < hw; ++px) {
                double sum = 0, magnitude = 0;
                for (std::int64_t ci = 0; ci < cin; ++ci)
                    for (std::int64_t ky = 0; ky < 3; ++ky)
                        for (std::int64_t kx = 0; kx < 3; ++kx) {
                            const std::int64_t iy = py + ky - 1, ix = px + kx - 1;
                            if (iy < 0 || ix < 0 || iy >= hw || ix >= hw)
                                continue;
                            const double t =
                                static_cast<double>(xq[static_cast<std::size_t>((ci * hw + iy) * hw + ix)]) *
                                wq[static_cast<std::size_t>(((o * cin + ci) * 3 + ky) * 3 + kx)];
                            sum += t;
                            magnitude += std::abs(t);
                        }
                const double bound = cin * 9 * std::ldexp(1.0, -24) * magnitude;
                const float got = y[static_cast<std::size_t>((o * hw + py) * hw + px)]; // image 0
                EXPECT_GE(got, roundToBf16(static_cast<float>(sum - bound)));
                EXPECT_LE(got, roundToBf16(static_cast<float>(sum + bound)));
                ++checked;
            }
    EXPECT_EQ(checked, cout * pixels);

    // Weight gradient of tap (1, 1) (no padding involved): K = n x pixels per channel.
    auto alongBatch = [&](const std::vector<float>& v, std::int64_t channels) {
        std::vector<float> rows(v.size()); // [channel, n * pixels]
        for (std::int64_t i = 0; i < n; ++i)
            for (std::int64_t ch = 0; ch < channels; ++ch)
                for (std::int64_t p = 0; p < pixels; ++p)
                    rows[static_cast<std::size_t>((ch * n + i) * pixels + p)] =
                        v[static_cast<std::size_t>((i * channels + ch) * pixels + p)];
        return quantizedRows(rows, static_cast<std::size_t>(n * pixels), f);
    };
    const std::vector<float> dyRows = alongBatch(dy, cout), xRows = alongBatch(x, cin);
    const std::vector<float> dw = weight.grad.toFloats();
    for (std::int64_t o = 0; o < cout; ++o)
        for (std::int64_t ci = 0; ci < cin; ++ci) {
            double sum = 0, magnitude = 0;
            for (std::int64_t k = 0; k < n * pixels; ++k) {
                const double t = static_cast<double>(dyRows[static_cast<std::size_t>(o * n * pixels + k)]) *
                                 xRows[static_cast<std::size_t>(ci * n * pixels + k)];
                sum += t;
                magnitude += std::abs(t);
            }
            const double bound = n * pixels * std::ldexp(1.0, -24) * magnitude;
            const float got = dw[static_cast<std::size_t>(((o * cin + ci) * 3 + 1) * 3 + 1)];
            EXPECT_GE(got, roundToBf16(static_cast<float>(sum - bound)));
            EXPECT_LE(got, roundToBf16(static_cast<float>(sum + bound)));
        }
}

TEST(GemmRecipe, DelayedScalingUsesThePreviousStepsAmax)
{
    auto backend = makeCpuBackend(1);
    RecipeOptions options;
    options.amaxHistory = 2;
    const PrecisionPolicy policy(PrecisionMode::Fp8Delayed, options);
    const LinearCase c;
    Linear layer(c.in, c.out, false, "", false);
    layer.setName("0.linear");
    layer.applyPrecision(policy, policy.layer());
    layer.createParameters(*backend, DType::F32, 7);
    const std::vector<float> w = layer.parameters()[0]->working.toFloats();
    const std::vector<float> x = randomValues(static_cast<std::size_t>(c.batch * c.in), 1);
    // The tensor a layer sees is bf16, so the reference scales and rounds it the same way.
    auto scaledInput = [&](float factor) {
        std::vector<float> scaled = x;
        for (float& v : scaled)
            v = roundToBf16(v * factor);
        return scaled;
    };
    auto forwardAt = [&](std::uint64_t step, float factor) {
        const std::vector<float> scaled = scaledInput(factor);
        PassState pass{*backend, true, 42, step};
        return layer.forward(pass, Tensor::fromFloats({c.batch, c.in}, scaled, DType::BF16)).output.toFloats();
    };
    const OperandFormat current = operandFormat(GemmRecipe::Fp8Hybrid, GemmOperand::Activation, {});
    auto currentReference = [&](float factor) {
        const std::vector<float> scaled = scaledInput(factor);
        return multiply(referenceOperand(scaled, static_cast<std::size_t>(c.in), current),
                        referenceOperand(w, static_cast<std::size_t>(c.in), current), c.batch, c.out, c.in);
    };
    forwardAt(0, 1.0f); // scale 1: no history yet
    // Step 1 scales by step 0's amax: with the same tensor that is current scaling.
    expectMatches(forwardAt(1, 1.0f), currentReference(1.0f), "step 1");
    // Steps 2 and 3 see x * 0.3 with x's amax still in the history of 2: the scale is too
    // small for the tensor, and the product differs from current scaling's.
    forwardAt(2, 0.3f);
    const std::vector<float> stale = forwardAt(3, 0.3f);
    const Product fresh = currentReference(0.3f);
    int differing = 0;
    for (std::size_t i = 0; i < stale.size(); ++i)
        differing += std::abs(stale[i] - fresh.value[i]) > 2 * fresh.bound[i] + std::abs(fresh.value[i]) / 128 ? 1 : 0;
    EXPECT_GT(differing, 0);
    // Step 4: the history holds only x * 0.3's amax, so the scale is current scaling's again.
    expectMatches(forwardAt(4, 0.3f), fresh, "step 4");
}

TEST(GemmRecipe, BadInputsNameTheFieldAndTheLayer)
{
    auto backend = makeCpuBackend(1);
    RunConfig c = test_support::smallSyntheticConfig(PrecisionMode::Nvfp4);
    c.recipe.keepFirstLast = RecipeSwitch::Off; // the last layer has 4 units
    try {
        Model model(c.model, c.precision, *backend, 1, c.recipe);
        FAIL() << "nvfp4 accepted a layer of 4 units";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("layer 3 (linear)"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("3.linear's out features (4)"), std::string::npos) << e.what();
    }
    // Kept in bf16 by default, the same model builds.
    c.recipe.keepFirstLast = RecipeSwitch::Auto;
    EXPECT_NO_THROW(Model(c.model, c.precision, *backend, 1, c.recipe));

    EXPECT_THROW(parseRunConfig(R"({"model": {"layers": []}, "precision": {"mode": "fp7"}})", "t"), ConfigError);
    try {
        parseRunConfig(
            R"({"model": {"layers": []}, "precision": {"mode": "mxfp8", "recipe": {"scale_rule": "round"}}})", "t");
        FAIL();
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("precision.recipe.scale_rule"), std::string::npos) << e.what();
    }
    try {
        parseRunConfig(
            R"({"model": {"layers": []}, "precision": {"mode": "fp8-delayed", "recipe": {"amax_history": 0}}})", "t");
        FAIL();
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("precision.recipe.amax_history"), std::string::npos) << e.what();
    }
    const RunConfig parsed = parseRunConfig(
        R"({"model": {"layers": []}, "precision": {"mode": "mxfp4", "recipe": {"scale_rule": "rceil", "keep_first_last": "off"}}})",
        "t");
    EXPECT_EQ(parsed.precision, PrecisionMode::Mxfp4);
    EXPECT_EQ(parsed.recipe.scaleRule, MxScaleRule::RCeil);
    EXPECT_EQ(parseRunConfig(runConfigToJson(parsed), "t").recipe, parsed.recipe);
}

TEST(GemmRecipe, OverridesAndTheFirstAndLastLayers)
{
    const PrecisionPolicy policy(PrecisionMode::Mxfp8);
    EXPECT_EQ(policy.layer().gemmRecipes, OperandRecipes::all(GemmRecipe::Mxfp8));
    EXPECT_EQ(policy.layer().activation, DType::BF16);
    EXPECT_EQ(policy.layer().master, DType::F32);
    EXPECT_EQ(policy.layer(LayerPrecision::Bf16).gemmRecipes, OperandRecipes::all(GemmRecipe::None));
    EXPECT_EQ(policy.layer(LayerPrecision::Fp32).gemmRecipes, OperandRecipes::all(GemmRecipe::None));
    EXPECT_EQ(policy.layer(LayerPrecision::Fp32).activation, DType::F32);
    EXPECT_EQ(policy.resolveLossScale(LossScaleType::Auto), LossScaleType::None);

    auto backend = makeCpuBackend(1);
    auto recipes = [&](PrecisionMode mode, RecipeSwitch keep) {
        RunConfig c = test_support::smallSyntheticConfig(mode);
        c.recipe.keepFirstLast = keep;
        Model model(c.model, c.precision, *backend, 1, c.recipe);
        // The layers that run the GEMMs: a linear layer inside its activation's wrapper.
        std::vector<GemmRecipe> out;
        for (const GemmSite& site : gemmSites(model.graph()))
            out.push_back(site.layer->gemmRecipes().activation);
        return out;
    };
    using R = GemmRecipe;
    EXPECT_EQ(recipes(PrecisionMode::Mxfp8, RecipeSwitch::Auto), (std::vector{R::Mxfp8, R::Mxfp8, R::Mxfp8}));
    EXPECT_EQ(recipes(PrecisionMode::Mxfp4, RecipeSwitch::Auto), (std::vector{R::None, R::Mxfp4, R::None}));
    EXPECT_EQ(recipes(PrecisionMode::Mxfp4, RecipeSwitch::Off), (std::vector{R::Mxfp4, R::Mxfp4, R::Mxfp4}));
    EXPECT_EQ(recipes(PrecisionMode::Mxfp8, RecipeSwitch::On), (std::vector{R::None, R::Mxfp8, R::None}));
}

namespace {

using test::meanOf;

using test::TrainedRun;

TrainedRun train(const RunConfig& config) { return test::trainRecordingLosses(config); }

} // namespace

TEST(GemmRecipe, TrainingLearnsAndRepeats)
{
    for (const PrecisionMode mode : {PrecisionMode::Fp8Hybrid, PrecisionMode::Mxfp8, PrecisionMode::Nvfp4}) {
        SCOPED_TRACE(precisionModeName(mode));
        RunConfig c = test_support::smallSyntheticConfig(mode);
        c.model.layers[1].units = 32;
        const TrainedRun a = train(c), b = train(c);
        ASSERT_EQ(a.summary.status, RunStatus::Finished);
        const std::size_t n = a.losses.size();
        ASSERT_GE(n, 16u);
        EXPECT_LT(meanOf(a.losses, n - 4, n), 0.5 * meanOf(a.losses, 0, 4));
        EXPECT_GT(a.summary.testAccuracy, 0.9f);
        EXPECT_EQ(a.losses, b.losses); // bit for bit, stochastic rounding included
        c.training.seed += 1;
        EXPECT_NE(train(c).losses, a.losses);
    }
}

TEST(GemmRecipe, Mxfp4KeepingTheFirstAndLastLayersHelps)
{
    // The first layer reads raw pixels and the last writes logits: 4-bit GEMMs there cost the
    // most, which is why NVIDIA's NVFP4 and the MX recipes keep them in higher precision.
    RunConfig c = test_support::smallSyntheticConfig(PrecisionMode::Mxfp4);
    c.data.syntheticNoise = 2.0f; // hard enough that the last digits of the logits matter
    c.training.epochs = 3;
    auto finalLoss = [&](RecipeSwitch keep) {
        c.recipe.keepFirstLast = keep;
        const TrainedRun run = train(c);
        const std::size_t n = run.losses.size();
        std::printf("keep_first_last %s: loss over the last 8 steps %.4f, test accuracy %.4f\n",
                    std::string(enumKey(keep)).c_str(), meanOf(run.losses, n - 8, n), run.summary.testAccuracy);
        return meanOf(run.losses, n - 8, n);
    };
    const double kept = finalLoss(RecipeSwitch::On), quantised = finalLoss(RecipeSwitch::Off);
    EXPECT_GT(quantised, kept);
}
