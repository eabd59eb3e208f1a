// fp8-block's GEMM (docs/formats.md, "The block-scaled FP8 GEMM"): the FP8 elements of each
// 128-wide K-chunk multiplied into fp32 partial sums, each chunk's sums scaled by its decode
// scales (row tile x column block) and added in order (one fused multiply-add per chunk), then
// the bias, then one rounding. Checked against a naive per-chunk reference, bit for bit where every partial sum
// is exact (small integer elements) and within the fp32 summation-order bound otherwise, on
// the native bf16 kernels and the emulated (fp32) ones, and through a linear layer's three
// GEMMs under the recipe against the block quantiser's own elements and scales.
#include "engine/backend/backend.h"
#include "engine/backend/cpu/block_scaled_bf16_kernel.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/onednn_runtime.h"
#include "engine/model/gemm_inputs.h"
#include "engine/model/layers/linear.h"
#include "engine/numerics/block_quantizer.h"
#include "engine/numerics/conversions.h"
#include "engine/numerics/minifloat_codec.h"
#include "engine/precision/precision_policy.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <utility>

using namespace mantissa;

namespace {

constexpr std::int64_t kChunk = 128;

float roundToBf16(float v) { return roundToDType(v, DType::BF16); }

// A GEMM operand as the reference reads it: op(X)[index, k] (index = m for A, n for B) with
// its decode scale per (chunk, index).
struct RefOperand {
    std::int64_t rows = 0, k = 0; // op(X) is [rows, k]
    std::vector<float> values;    // [rows, k]
    std::vector<float> scales;    // [chunks, rows]
    float at(std::int64_t r, std::int64_t kk) const { return values[static_cast<std::size_t>(r * k + kk)]; }
    float scale(std::int64_t c, std::int64_t r) const { return scales[static_cast<std::size_t>(c * rows + r)]; }
};

std::int64_t chunksOf(std::int64_t k) { return (k + kChunk - 1) / kChunk; }

// C[i, j] = sum over chunks c, in order from 0, of fl(sa * sb) * P_c in fp32, each joining the
// running sum in one fused multiply-add, then + bias;
// P_c summed in double (exact for the integer elements; `bound` gets the fp32 order bound).
struct Reference {
    std::vector<float> value;
    std::vector<double> bound;
};
Reference reference(const RefOperand& a, const RefOperand& b, const std::vector<float>* bias)
{
    Reference r;
    for (std::int64_t i = 0; i < a.rows; ++i)
        for (std::int64_t j = 0; j < b.rows; ++j) {
            float acc = 0.0f;
            double bound = 0.0;
            for (std::int64_t c = 0; c < chunksOf(a.k); ++c) {
                double sum = 0.0, magnitude = 0.0;
                const std::int64_t end = std::min(a.k, (c + 1) * kChunk);
                for (std::int64_t kk = c * kChunk; kk < end; ++kk) {
                    const double term = static_cast<double>(a.at(i, kk)) * b.at(j, kk);
                    sum += term;
                    magnitude += std::abs(term);
                }
                const float scale = a.scale(c, i) * b.scale(c, j);
                acc = std::fma(scale, static_cast<float>(sum), acc);
                bound += static_cast<double>(end - c * kChunk) * std::ldexp(1.0, -24) * magnitude * std::abs(scale);
            }
            if (bias)
                acc = acc + (*bias)[static_cast<std::size_t>(j)];
            r.value.push_back(acc);
            // The order bound of P_c, carried through the scaling and the chunk sum (each
            // changes a perturbation by at most a few ulps of the result).
            r.bound.push_back(bound * 1.01 + 4.0 * std::ldexp(1.0, -24) * std::abs(acc));
        }
    return r;
}

// op(X) [rows, k] laid out in a buffer as the GEMM reads it: transposed means the buffer is
// [k, rows].
std::vector<float> layOut(const RefOperand& x, bool transposed)
{
    std::vector<float> out(x.values.size());
    for (std::int64_t r = 0; r < x.rows; ++r)
        for (std::int64_t kk = 0; kk < x.k; ++kk)
            out[static_cast<std::size_t>(transposed ? kk * x.rows + r : r * x.k + kk)] = x.at(r, kk);
    return out;
}

// Elements: integers in [-16, 16] (E4M3 numbers whose 128-term sums are exact in fp32 in any
// order), or any finite E4M3 value; scales: 1x128 tiles (one per row and chunk, group 1) or
// 128x128 blocks (one per 128 rows and chunk).
RefOperand randomOperand(std::int64_t rows, std::int64_t k, bool integers, std::int64_t group, std::uint32_t seed)
{
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int> small(-16, 16), code(0, 0xff);
    std::uniform_real_distribution<float> scale(1e-3f, 4e-3f);
    RefOperand x{rows, k, {}, {}};
    for (std::int64_t i = 0; i < rows * k; ++i) {
        float v = 0.0f;
        if (integers)
            v = static_cast<float>(small(gen));
        else
            do
                v = decodeMiniFloat(static_cast<std::uint8_t>(code(gen)), MiniFloat::E4M3);
            while (!std::isfinite(v));
        x.values.push_back(v);
    }
    std::vector<float> perGroup(static_cast<std::size_t>(chunksOf(k) * ((rows + group - 1) / group)));
    for (float& s : perGroup)
        s = scale(gen);
    const std::int64_t groups = (rows + group - 1) / group;
    for (std::int64_t c = 0; c < chunksOf(k); ++c)
        for (std::int64_t r = 0; r < rows; ++r)
            x.scales.push_back(perGroup[static_cast<std::size_t>(c * groups + r / group)]);
    return x;
}

// The scales as a BlockScales over [chunks, groups] (chunk-major).
BlockScales blockScales(const RefOperand& x, std::int64_t group)
{
    const std::int64_t groups = (x.rows + group - 1) / group;
    std::vector<float> compact;
    for (std::int64_t c = 0; c < chunksOf(x.k); ++c)
        for (std::int64_t g = 0; g < groups; ++g)
            compact.push_back(x.scale(c, g * group));
    return {Tensor::fromFloats({static_cast<std::int64_t>(compact.size())}, compact, DType::F32), kChunk, group, groups,
            1};
}

struct Case {
    Transpose ta, tb;
    std::int64_t m, n, k;
};

// The three products of a linear layer (forward x W^T, weight gradient dy^T x, data gradient
// dy W), with K: several full chunks and a short one, whole chunks only, exactly one chunk, and
// less than one. Each operand either K-contiguous (packed chunk by chunk) or K-major (its
// chunks read where they lie), with and without a short last chunk, and both ways round.
const Case kCases[] = {
    {Transpose::No, Transpose::Yes, 40, 136, 300},
    {Transpose::Yes, Transpose::No, 136, 72, 256},
    {Transpose::Yes, Transpose::No, 40, 72, 300},
    {Transpose::No, Transpose::No, 24, 160, 400},
    {Transpose::Yes, Transpose::Yes, 16, 48, 264},
    {Transpose::No, Transpose::No, 24, 160, 128},
    {Transpose::No, Transpose::No, 33, 40, 100},
    {Transpose::No, Transpose::Yes, 8, 264, 1},
    // An odd K over several chunks (the last K-pair half empty), one row, one column, and
    // column counts around the own kernel's 64-column panels.
    {Transpose::No, Transpose::Yes, 13, 65, 257},
    {Transpose::Yes, Transpose::No, 7, 1, 301},
    {Transpose::No, Transpose::No, 1, 200, 385},
    {Transpose::Yes, Transpose::Yes, 19, 64, 511},
};

void runCase(Backend& backend, const Case& c, bool integers, bool withBias, DType out, std::vector<float>& got,
             Reference& want)
{
    const RefOperand a = randomOperand(c.m, c.k, integers, 1, 11);
    const RefOperand b = randomOperand(c.n, c.k, integers, 128, 12);
    const Shape shapeA = c.ta == Transpose::No ? Shape({c.m, c.k}) : Shape({c.k, c.m});
    const Shape shapeB = c.tb == Transpose::No ? Shape({c.k, c.n}) : Shape({c.n, c.k});
    // op(B) is [k, n]: its buffer is [k, n] untransposed, i.e. B's "rows" (n) transposed.
    const Tensor ta = Tensor::fromFloats(shapeA, layOut(a, c.ta == Transpose::Yes), DType::BF16);
    const Tensor tb = Tensor::fromFloats(shapeB, layOut(b, c.tb == Transpose::No), DType::BF16);
    std::vector<float> biasValues;
    for (std::int64_t j = 0; j < c.n; ++j)
        biasValues.push_back(roundToBf16(0.01f * static_cast<float>(j % 7) - 0.03f));
    const Tensor bias = Tensor::fromFloats({c.n}, biasValues, DType::BF16);
    Tensor result = backend.empty({c.m, c.n}, out);
    backend.gemmBlockScaled(c.ta, c.tb, c.m, c.n, c.k, ta, tb, withBias ? &bias : nullptr, result,
                            {blockScales(a, 1), blockScales(b, 128)});
    got = result.toFloats();
    want = reference(a, b, withBias ? &biasValues : nullptr);
}

// A CPU backend that takes the own block-scaled kernel where it runs, or oneDNN's route
// (allowBlockScaledBf16Kernel: the plan is fixed when the backend is made).
std::unique_ptr<Backend> backendTaking(bool ownKernel, CpuOptions options)
{
    const bool previous = cpu::allowBlockScaledBf16Kernel(ownKernel);
    auto backend = makeCpuBackend(options);
    cpu::allowBlockScaledBf16Kernel(previous);
    return backend;
}

std::string describe(const Case& c)
{
    return std::string(c.ta == Transpose::Yes ? "T" : "N") + (c.tb == Transpose::Yes ? "T" : "N") + " " +
           std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k);
}

} // namespace

// Integer elements: every partial sum is exact, so the kernel's summation order cannot show,
// and the result is the reference's bits (fp32 output), or their one rounding to bf16.
TEST(BlockScaledGemm, GivesThePerChunkScaledSumsBitForBit)
{
    struct Route {
        int threads;
        CpuKernels kernels;
        bool ownKernel; // false: oneDNN's batched chunk products also where the own kernel runs
    };
    for (const Route& route : {Route{1, CpuKernels::Auto, true}, Route{2, CpuKernels::Auto, true},
                               Route{1, CpuKernels::Auto, false}, Route{1, CpuKernels::Emulated, true}}) {
        auto backend = backendTaking(route.ownKernel, CpuOptions{route.threads, route.kernels});
        for (const Case& c : kCases)
            for (const bool withBias : {false, true})
                for (const DType out : {DType::F32, DType::BF16, DType::F16}) {
                    SCOPED_TRACE(describe(c) + (withBias ? " bias " : " ") + std::string(dtypeName(out)) +
                                 (route.kernels == CpuKernels::Emulated ? " emulated"
                                  : route.ownKernel                     ? " native where the CPU can"
                                                                        : " native, oneDNN's route") +
                                 ", threads " + std::to_string(route.threads));
                    std::vector<float> got;
                    Reference want;
                    runCase(*backend, c, true, withBias, out, got, want);
                    ASSERT_EQ(got.size(), want.value.size());
                    for (std::size_t i = 0; i < got.size(); ++i) {
                        const float expected = roundToDType(want.value[i], out);
                        ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(expected))
                            << "element " << i << ": got " << got[i] << ", want " << expected;
                    }
                }
    }
}

// Any E4M3 elements: a partial sum of 128 products may round, in the kernel's own order; the
// result lies within that order's bound of the reference, and the native kernels agree with the
// emulated ones (the oracle) to the same bound.
TEST(BlockScaledGemm, NativeAndEmulatedAgreeWithTheReference)
{
    auto emulated = makeCpuBackend(CpuOptions{1, CpuKernels::Emulated});
    for (const bool ownKernel : {true, false}) {
        auto native = backendTaking(ownKernel, CpuOptions{1, CpuKernels::Auto});
        for (const Case& c : kCases) {
            SCOPED_TRACE(describe(c) + (ownKernel ? "" : ", oneDNN's route"));
            std::vector<float> gotNative, gotEmulated;
            Reference want;
            runCase(*native, c, false, true, DType::F32, gotNative, want);
            runCase(*emulated, c, false, true, DType::F32, gotEmulated, want);
            for (std::size_t i = 0; i < want.value.size(); ++i) {
                ASSERT_NEAR(gotNative[i], want.value[i], want.bound[i]) << "native, element " << i;
                ASSERT_NEAR(gotEmulated[i], want.value[i], want.bound[i]) << "emulated, element " << i;
                ASSERT_NEAR(gotNative[i], gotEmulated[i], 2.0 * want.bound[i]) << "element " << i;
            }
        }
    }
}

namespace {

// The operand of a linear layer's GEMM from the block quantiser directly: values [rows, k]
// (K contiguous) in 1x128 tiles along K.
RefOperand tiledRows(const std::vector<float>& values, std::int64_t rows, std::int64_t k, const QuantFormat& format)
{
    const QuantizedTensor q = quantize(values, static_cast<std::size_t>(k), format);
    RefOperand x{rows, k, {}, {}};
    for (const std::uint8_t code : q.codes)
        x.values.push_back(decodeMiniFloat(code, format.element));
    const std::size_t perRow = q.blocksPerRow();
    for (std::int64_t c = 0; c < chunksOf(k); ++c)
        for (std::int64_t r = 0; r < rows; ++r)
            x.scales.push_back(q.blocks[static_cast<std::size_t>(r) * perRow + static_cast<std::size_t>(c)].scale);
    return x;
}

// A weight [out, in] in 128x128 blocks, each a tensor of its own; as the forward GEMM's B
// (K = in) or, transposed, as the data gradient's (K = out).
RefOperand weightBlocks(const std::vector<float>& w, std::int64_t out, std::int64_t in, const QuantFormat& format,
                        bool kAlongOut)
{
    std::vector<float> elements(w.size());
    std::vector<float> tileScale(static_cast<std::size_t>(chunksOf(out) * chunksOf(in)));
    for (std::int64_t r0 = 0; r0 < out; r0 += kChunk)
        for (std::int64_t c0 = 0; c0 < in; c0 += kChunk) {
            std::vector<float> tile;
            for (std::int64_t r = r0; r < std::min(out, r0 + kChunk); ++r)
                for (std::int64_t c = c0; c < std::min(in, c0 + kChunk); ++c)
                    tile.push_back(w[static_cast<std::size_t>(r * in + c)]);
            const QuantizedTensor q = quantize(tile, 0, format);
            tileScale[static_cast<std::size_t>(r0 / kChunk * chunksOf(in) + c0 / kChunk)] = q.blocks.front().scale;
            std::size_t i = 0;
            for (std::int64_t r = r0; r < std::min(out, r0 + kChunk); ++r)
                for (std::int64_t c = c0; c < std::min(in, c0 + kChunk); ++c)
                    elements[static_cast<std::size_t>(r * in + c)] = decodeMiniFloat(q.codes[i++], format.element);
        }
    const std::int64_t rows = kAlongOut ? in : out, k = kAlongOut ? out : in;
    RefOperand x{rows, k, {}, {}};
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t kk = 0; kk < k; ++kk)
            x.values.push_back(elements[static_cast<std::size_t>(kAlongOut ? kk * in + r : r * in + kk)]);
    for (std::int64_t c = 0; c < chunksOf(k); ++c)
        for (std::int64_t r = 0; r < rows; ++r)
            x.scales.push_back(kAlongOut ? tileScale[static_cast<std::size_t>(c * chunksOf(in) + r / kChunk)]
                                         : tileScale[static_cast<std::size_t>(r / kChunk * chunksOf(in) + c)]);
    return x;
}

std::vector<float> transposed(const std::vector<float>& m, std::int64_t rows, std::int64_t cols)
{
    std::vector<float> t(m.size());
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c)
            t[static_cast<std::size_t>(c * rows + r)] = m[static_cast<std::size_t>(r * cols + c)];
    return t;
}

std::vector<float> randomBf16(std::size_t n, std::uint32_t seed)
{
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v)
        x = roundToBf16(normal(gen) * (uniform(gen) < 0.05f ? 30.0f : 1.0f) * 0.01f);
    return v;
}

void expectWithin(const std::vector<float>& got, const Reference& want, const std::string& what)
{
    ASSERT_EQ(got.size(), want.value.size()) << what;
    int exact = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const float lo = roundToBf16(static_cast<float>(want.value[i] - want.bound[i]));
        const float hi = roundToBf16(static_cast<float>(want.value[i] + want.bound[i]));
        exact += got[i] == roundToBf16(want.value[i]) ? 1 : 0;
        ASSERT_TRUE(got[i] >= lo && got[i] <= hi)
            << what << " element " << i << ": got " << got[i] << ", reference " << want.value[i];
    }
    EXPECT_GT(exact, static_cast<int>(got.size() * 9 / 10)) << what;
}

} // namespace

// A linear layer under fp8-block, all three GEMMs, each with two K-chunks (the second short):
// the layer's bf16 results are the reference built from the block quantiser's elements and
// scales (1x128 tiles along K for x and dy, 128x128 blocks for W), rounded once, within the
// order bound of the partial sums; on native and on emulated kernels.
TEST(BlockScaledGemm, LinearLayerUnderFp8BlockMatchesTheReference)
{
    const std::int64_t batch = 200, in = 160, out = 136;
    for (const CpuKernels kernels : {CpuKernels::Auto, CpuKernels::Emulated}) {
        SCOPED_TRACE(kernels == CpuKernels::Emulated ? "emulated" : "native where the CPU can");
        auto backend = makeCpuBackend(CpuOptions{1, kernels});
        const PrecisionPolicy policy(PrecisionMode::Fp8Block, RecipeOptions{});
        Linear layer(in, out, true, "", false);
        layer.setName("0.linear");
        layer.applyPrecision(policy, policy.layer());
        layer.createParameters(*backend, DType::F32, 7);
        Parameter& weight = *layer.parameters()[0];
        Parameter& bias = *layer.parameters()[1];
        const std::vector<float> biasValues = randomBf16(static_cast<std::size_t>(out), 9);
        backend->upload(biasValues.data(), bias.working);
        const std::vector<float> w = weight.working.toFloats();
        const std::vector<float> x = randomBf16(static_cast<std::size_t>(batch * in), 1);
        const std::vector<float> dy = randomBf16(static_cast<std::size_t>(batch * out), 2);
        PassState pass{*backend, true, 42, 3};
        ForwardResult forward = layer.forward(pass, Tensor::fromFloats({batch, in}, x, DType::BF16));
        const Tensor dx =
            layer.backward(pass, Tensor::fromFloats({batch, out}, dy, DType::BF16), forward.context.get());

        const QuantFormat tiles = operandFormat(GemmRecipe::Fp8Block, GemmOperand::Activation, {}).format;
        const QuantFormat blocks = operandFormat(GemmRecipe::Fp8Block, GemmOperand::Weight, {}).format;
        expectWithin(forward.output.toFloats(),
                     reference(tiledRows(x, batch, in, tiles), weightBlocks(w, out, in, blocks, false), &biasValues),
                     "forward");
        expectWithin(dx.toFloats(),
                     reference(tiledRows(dy, batch, out, tiles), weightBlocks(w, out, in, blocks, true), nullptr),
                     "dgrad");
        expectWithin(weight.grad.toFloats(),
                     reference(tiledRows(transposed(dy, batch, out), out, batch, tiles),
                               tiledRows(transposed(x, batch, in), in, batch, tiles), nullptr),
                     "wgrad");
    }
}

namespace {

struct CountingObserver final : GemmInputObserver {
    int calls = 0;
    void gemmInput(const std::string&, GemmPass, GemmOperand, const OperandFormat&, const QuantStats&) override
    {
        ++calls;
    }
};

} // namespace

// The data gradient reads the forward's quantised weight again (GemmInputQuantizer::reuse):
// the same elements, bit for bit, and the same scale at every (chunk, column) as quantising the
// weight anew for the data gradient's layout; never for an operand whose quantisation depends
// on the layout (1x128 tiles along K) or on a sampled step.
TEST(BlockScaledGemm, DataGradientReadsTheForwardWeightAgain)
{
    auto backend = makeCpuBackend(CpuOptions{1, CpuKernels::Auto});
    const std::int64_t out = 200, in = 300; // partial tiles at the right and bottom edges
    const Tensor w = Tensor::fromFloats({out, in}, randomBf16(static_cast<std::size_t>(out * in), 5), DType::BF16);
    const std::string layer = "1.linear";
    GemmInputCall call{*backend, layer};
    call.blockScaledGemm = true;
    const KLayout forwardLayout = KLayout::rows(out, in), dataGradLayout = KLayout::along(1, out, in);

    GemmInputQuantizer quantizer;
    quantizer.setRecipes(OperandRecipes::all(GemmRecipe::Fp8Block), {});
    const GemmOperandValues forward = quantizer.prepare(call, w, GemmPass::Forward, GemmOperand::Weight, forwardLayout);
    ASSERT_TRUE(forward.blocks.present());
    const std::optional<GemmOperandValues> again =
        quantizer.reuse(call, forward, GemmPass::Forward, w, GemmPass::DataGrad, GemmOperand::Weight, dataGradLayout);
    ASSERT_TRUE(again.has_value());
    const GemmOperandValues fresh = quantizer.prepare(call, w, GemmPass::DataGrad, GemmOperand::Weight, dataGradLayout);
    ASSERT_TRUE(fresh.blocks.present());
    EXPECT_EQ(again->values.data(), forward.values.data()); // read again, not copied
    ASSERT_EQ(again->values.dtype(), fresh.values.dtype());
    const std::vector<float> againValues = again->values.toFloats(), freshValues = fresh.values.toFloats();
    for (std::size_t i = 0; i < freshValues.size(); ++i)
        ASSERT_EQ(std::bit_cast<std::uint32_t>(againValues[i]), std::bit_cast<std::uint32_t>(freshValues[i]))
            << "element " << i;
    const BlockScales& a = again->blocks;
    const BlockScales& f = fresh.blocks;
    EXPECT_EQ(a.chunk, f.chunk);
    EXPECT_EQ(a.group, f.group);
    const std::vector<float> againScales = a.scales.toFloats(), freshScales = f.scales.toFloats();
    for (std::int64_t c = 0; c < chunksOf(out); ++c) // K = out for the data gradient; index = in
        for (std::int64_t j = 0; j < in; ++j)
            ASSERT_EQ(againScales[static_cast<std::size_t>(c * a.chunkStride + j / a.group * a.indexStride)],
                      freshScales[static_cast<std::size_t>(c * f.chunkStride + j / f.group * f.indexStride)])
                << "chunk " << c << ", column " << j;

    // 1x128 tiles along K: the weight-gradient GEMM's x^T is another quantisation than the
    // forward's x.
    const Tensor x = Tensor::fromFloats({64, in}, randomBf16(static_cast<std::size_t>(64 * in), 6), DType::BF16);
    const GemmOperandValues xq =
        quantizer.prepare(call, x, GemmPass::Forward, GemmOperand::Activation, KLayout::rows(64, in));
    ASSERT_TRUE(xq.blocks.present());
    EXPECT_FALSE(quantizer.reuse(call, xq, GemmPass::Forward, x, GemmPass::WeightGrad, GemmOperand::Activation,
                                 KLayout::along(1, 64, in)));
    // A sampled step measures the data gradient's weight as well.
    CountingObserver observer;
    GemmInputCall sampled = call;
    sampled.observer = &observer;
    EXPECT_FALSE(quantizer.reuse(sampled, forward, GemmPass::Forward, w, GemmPass::DataGrad, GemmOperand::Weight,
                                 dataGradLayout));
    // (Per-tensor FP8 operands are read again without block scales: per_tensor_reuse_test.)
}

// Where the CPU has avx512_bf16 and oneDNN runs its avx512_core_bf16 kernels (not AMX), the
// native path sums the K-chunks on Mantissa's own kernel, and the run's kernel lines say so
// once it has run; elsewhere it takes oneDNN's batched products and says nothing of it.
TEST(BlockScaledGemm, OwnKernelRunsWhereThePlanSaysAndIsNamed)
{
    auto backend = makeCpuBackend(CpuOptions{1, CpuKernels::Auto});
    const auto* cpu = dynamic_cast<CpuBackend*>(backend.get());
    ASSERT_NE(cpu, nullptr);
    const cpu::CpuKernelPlan& plan = cpu->kernelPlan();
    EXPECT_EQ(plan.ownBlockScaledKernel,
              plan.nativeBf16 && cpu::blockScaledBf16KernelRuns() && cpu::oneDnnIsaName() == "avx512_core_bf16");
    const std::string kOwn = "block-scaled bf16 GEMM: Mantissa's avx512_bf16 kernel";
    EXPECT_EQ(backend->kernelPaths().find(kOwn), std::string::npos) << "named before it ran";
    std::vector<float> got;
    Reference want;
    runCase(*backend, {Transpose::No, Transpose::Yes, 16, 64, 300}, true, false, DType::F32, got, want);
    EXPECT_EQ(backend->kernelPaths().find(kOwn) != std::string::npos, plan.ownBlockScaledKernel)
        << backend->kernelPaths();
    auto oneDnnRoute = backendTaking(false, CpuOptions{1, CpuKernels::Auto});
    EXPECT_FALSE(dynamic_cast<CpuBackend&>(*oneDnnRoute).kernelPlan().ownBlockScaledKernel);
    runCase(*oneDnnRoute, {Transpose::No, Transpose::Yes, 16, 64, 300}, true, false, DType::F32, got, want);
    EXPECT_EQ(oneDnnRoute->kernelPaths().find(kOwn), std::string::npos) << oneDnnRoute->kernelPaths();
    if (!plan.ownBlockScaledKernel)
        GTEST_SKIP() << "this CPU runs oneDNN's kernels for the block-scaled GEMM (" << plan.bf16Path
                     << "); the own kernel was not exercised";
}

// A NaN or an infinity among the elements reaches the sums of its own row and column only, as
// in the reference; every other sum keeps its bits (the own kernel's zero padding and K-pairs
// never mix a value into another row's or column's sums).
TEST(BlockScaledGemm, NonFiniteElementsStayInTheirRowAndColumn)
{
    for (const int threads : {1, 2}) {
        auto backend = makeCpuBackend(CpuOptions{threads, CpuKernels::Auto});
        const std::int64_t m = 14, n = 70, k = 301;
        RefOperand a = randomOperand(m, k, true, 1, 21);
        RefOperand b = randomOperand(n, k, true, 128, 22);
        a.values[static_cast<std::size_t>(3 * k + 300)] = std::numeric_limits<float>::quiet_NaN(); // the last, odd K
        b.values[static_cast<std::size_t>(65 * k + 5)] = std::numeric_limits<float>::infinity();   // second panel
        for (std::int64_t i = 0; i < m; ++i) // no 0 x infinity: every row's sum in column 65 is infinite
            a.values[static_cast<std::size_t>(i * k + 5)] = i % 2 == 0 ? 3.0f : -2.0f;
        for (const auto& [ta, tb] :
             {std::pair{Transpose::No, Transpose::Yes}, std::pair{Transpose::Yes, Transpose::No}}) {
            SCOPED_TRACE("threads " + std::to_string(threads) + (ta == Transpose::Yes ? " TN" : " NT"));
            const Tensor tensorA = Tensor::fromFloats(ta == Transpose::No ? Shape({m, k}) : Shape({k, m}),
                                                      layOut(a, ta == Transpose::Yes), DType::BF16);
            const Tensor tensorB = Tensor::fromFloats(tb == Transpose::No ? Shape({k, n}) : Shape({n, k}),
                                                      layOut(b, tb == Transpose::No), DType::BF16);
            Tensor result = backend->empty({m, n}, DType::F32);
            backend->gemmBlockScaled(ta, tb, m, n, k, tensorA, tensorB, nullptr, result,
                                     {blockScales(a, 1), blockScales(b, 128)});
            const std::vector<float> got = result.toFloats();
            const Reference want = reference(a, b, nullptr);
            for (std::int64_t i = 0; i < m; ++i)
                for (std::int64_t j = 0; j < n; ++j) {
                    const std::size_t at = static_cast<std::size_t>(i * n + j);
                    if (i == 3)
                        ASSERT_TRUE(std::isnan(got[at])) << "row 3, column " << j << ": " << got[at];
                    else if (j == 65)
                        ASSERT_TRUE(std::isinf(got[at]) && std::isinf(want.value[at]) &&
                                    std::signbit(got[at]) == std::signbit(want.value[at]))
                            << "row " << i << ", column 65: got " << got[at] << ", reference " << want.value[at];
                    else
                        ASSERT_EQ(std::bit_cast<std::uint32_t>(got[at]), std::bit_cast<std::uint32_t>(want.value[at]))
                            << "row " << i << ", column " << j;
                }
        }
    }
}

// Results below fp32's normal range (scales of 2^-70 each, so sums of a few units times 2^-140):
// the bf16 and fp16 outputs are the reference's fp32 result rounded to nearest even, subnormals
// kept (the own kernel rounds its last chunk in registers, where the bf16 conversion
// instruction would read an fp32 subnormal as zero).
TEST(BlockScaledGemm, SubnormalResultsRoundLikeTheReference)
{
    auto backend = makeCpuBackend(CpuOptions{1, CpuKernels::Auto});
    const std::int64_t m = 5, n = 70, k = 256;
    RefOperand a = randomOperand(m, k, true, 1, 31);
    RefOperand b = randomOperand(n, k, true, 128, 32);
    std::fill(a.scales.begin(), a.scales.end(), std::ldexp(1.0f, -70));
    std::fill(b.scales.begin(), b.scales.end(), std::ldexp(1.0f, -70));
    const Tensor tensorA = Tensor::fromFloats({m, k}, layOut(a, false), DType::BF16);
    const Tensor tensorB = Tensor::fromFloats({n, k}, layOut(b, false), DType::BF16);
    const Reference want = reference(a, b, nullptr);
    int subnormal = 0;
    for (const float v : want.value)
        subnormal += v != 0.0f && std::fpclassify(v) == FP_SUBNORMAL ? 1 : 0;
    ASSERT_GT(subnormal, static_cast<int>(want.value.size() / 2)) << "the case must produce fp32 subnormals";
    for (const DType out : {DType::BF16, DType::F16, DType::F32}) {
        Tensor result = backend->empty({m, n}, out);
        backend->gemmBlockScaled(Transpose::No, Transpose::Yes, m, n, k, tensorA, tensorB, nullptr, result,
                                 {blockScales(a, 1), blockScales(b, 128)});
        const std::vector<float> got = result.toFloats();
        for (std::size_t i = 0; i < got.size(); ++i)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]),
                      std::bit_cast<std::uint32_t>(roundToDType(want.value[i], out)))
                << dtypeName(out) << " element " << i << ": reference " << want.value[i];
    }
}
