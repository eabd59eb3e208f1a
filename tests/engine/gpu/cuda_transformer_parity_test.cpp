// The transformer ops of the Backend contract (row norms, embeddings, the positional
// addition, strided-batched GEMMs, the axis swap, the attention softmax) on the CUDA backend
// against the CPU backend, in the manner of cuda_parity_test: a table of cases, each run in
// fp32, fp16 and bf16 from the same seeded inputs on both, every output compared under the
// tolerance stated beside it (parity_check.h). Exact where the CUDA kernels keep the CPU's
// order of fp32 operations (copies, the embedding's scatter-add, the positional gradient, the
// norm statistics and softmax computed in a 16-bit type, which are one left-to-right loop on
// both); otherwise the tolerance of a sum in another order. Without a usable GPU, or without
// the CUDA backend in the build, every case is skipped with the reason.
#include "device_under_test.h"
#include "parity_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

using namespace mantissa;
using namespace mantissa::test;

namespace {

constexpr std::uint32_t kSeed = 20261125;
const std::vector<DType> kAllTypes{DType::F32, DType::F16, DType::BF16};

struct TransformerCase {
    std::string name;
    Op op;
    std::function<void(OpRun&, DType)> run;
};

std::string typeName(DType t) { return std::string(dtypeName(t)); }

// The arithmetic types a case is run with in a run of type t: fp32, and t itself when it is a
// 16-bit type (the "compute" setting of a norm's statistics or of attention's softmax).
std::vector<DType> arithmeticsFor(DType t)
{
    return t == DType::F32 ? std::vector<DType>{DType::F32} : std::vector<DType>{DType::F32, t};
}

// Whole numbers in [0, vocabulary): token ids, repeated often in a batch longer than the
// vocabulary, as text is.
Draw tokenIds(std::int64_t vocabulary)
{
    return [vocabulary](std::mt19937& g, std::size_t) {
        return static_cast<float>(std::uniform_int_distribution<std::int64_t>(0, vocabulary - 1)(g));
    };
}

// --- normalisation over rows ------------------------------------------------------------------

TransformerCase rowNorm(RowNormKind kind, std::int64_t rows, std::int64_t width, bool withBias, float lo, float hi)
{
    const std::string name = std::string(kind == RowNormKind::LayerNorm ? "layerNorm" : "rmsNorm") + "_" +
                             std::to_string(rows) + "x" + std::to_string(width) + (withBias ? "" : "_noBias") +
                             (lo >= 100 ? "_large" : "");
    return {name, Op::Normalization, [=](OpRun& r, DType t) {
                const Shape shape{rows, width};
                Tensor x = r.input(shape, t, uniform(lo, hi));
                Tensor gain = r.input({width}, DType::F32, uniform(0.5f, 1.5f));
                Tensor bias = r.input({width}, DType::F32, uniform(-0.5f, 0.5f));
                Tensor dy = r.input(shape, t, uniform(-1, 1));
                for (DType statistics : arithmeticsFor(t)) {
                    const std::string at = " (statistics " + typeName(statistics) + ")";
                    Tensor y = r.output(shape, t);
                    Tensor mean = r.output({rows}, DType::F32), invStd = r.output({rows}, DType::F32);
                    r.backend().rowNormForward(kind, x, gain, withBias ? &bias : nullptr, y, mean, invStd, 1e-5f,
                                               statistics);
                    // fp32 statistics are double sums in another order; 16-bit ones the CPU's loop.
                    const Tolerance stats = statistics == DType::F32 ? reduction(width, DType::F32) : exact();
                    r.keep("mean" + at, mean, stats);
                    r.keep("invStd" + at, invStd, stats);
                    // A few fp32 operations per element from those statistics, the last a fused
                    // multiply-add on the GPU that the CPU's compiler may or may not fuse: where the
                    // bias cancels the product an ulp of either is many of y, so the allowance is
                    // relative to the largest |y|.
                    r.keep("y" + at, y, reduction(width, DType::F32));

                    Tensor dx = r.output(shape, t);
                    Tensor dgain = r.output({width}, DType::F32), dbias = r.output({width}, DType::F32);
                    r.backend().rowNormBackward(kind, x, dy, gain, mean, invStd, dx, dgain,
                                                withBias ? &dbias : nullptr);
                    r.keep("dx" + at, dx, reduction(width, DType::F32));
                    r.keep("dgain" + at, dgain, reduction(rows, DType::F32));
                    if (withBias)
                        r.keep("dbias" + at, dbias, reduction(rows, DType::F32));
                }
            }};
}

// --- embeddings ---------------------------------------------------------------------------------

TransformerCase embedding(std::int64_t rows, std::int64_t vocabulary, std::int64_t width)
{
    const std::string name =
        "embedding_" + std::to_string(rows) + "ids_" + std::to_string(vocabulary) + "x" + std::to_string(width);
    return {name, Op::Embedding, [=](OpRun& r, DType t) {
                Tensor ids = r.input({rows}, DType::F32, tokenIds(vocabulary));
                Tensor table = r.input({vocabulary, width}, t, uniform(-1, 1));
                Tensor y = r.output({rows, width}, t);
                r.backend().embeddingForward(ids, table, y);
                r.keep("y", y, exact());

                // Repeated tokens sum their rows in row order, in fp32, on both: exact.
                Tensor dy = r.input({rows, width}, t, uniform(-1, 1));
                Tensor dtable = r.output({vocabulary, width}, t);
                r.backend().embeddingBackward(ids, dy, dtable, false);
                r.keep("dtable", dtable, exact());
                // A tied head wrote its gradient first: the rows are added to it.
                Tensor tied = r.input({vocabulary, width}, t, uniform(-1, 1));
                r.backend().embeddingBackward(ids, dy, tied, true);
                r.keep("dtable accumulated", tied, exact());
            }};
}

TransformerCase addBroadcast(std::int64_t samples, std::int64_t period, std::int64_t tableSize)
{
    const std::string name =
        "addBroadcast_" + std::to_string(samples) + "x" + std::to_string(period) + "_table" + std::to_string(tableSize);
    return {name, Op::Embedding, [=](OpRun& r, DType t) {
                Tensor x = r.input({samples, period}, t, uniform(-2, 2));
                Tensor table = r.input({tableSize}, t, uniform(-1, 1));
                Tensor y = r.output({samples, period}, t);
                r.backend().addBroadcast(x, table, y, period);
                r.keep("y", y, exact()); // one fp32 addition, one rounding

                Tensor dy = r.input({samples, period}, t, uniform(-1, 1));
                Tensor dtable = r.output({tableSize}, t);
                r.backend().addBroadcastBackward(dy, dtable, period);
                r.keep("dtable", dtable, exact()); // double sums, samples in order, on both
            }};
}

// --- attention ------------------------------------------------------------------------------------

TransformerCase gemmStridedBatched(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
                                   std::int64_t batch, std::int64_t gap, float alpha, float beta)
{
    const std::string name = std::string("gemmStridedBatched") + (ta == Transpose::Yes ? "T" : "N") +
                             (tb == Transpose::Yes ? "T" : "N") + "_" + std::to_string(batch) + "x" +
                             std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                             (gap ? "_gap" + std::to_string(gap) : "") + (beta != 0 ? "_accumulate" : "");
    return {name, Op::Attention, [=](OpRun& r, DType t) {
                // A and B may lie apart (gap elements between entries); C is packed, so that every
                // value of it is written.
                const std::int64_t strideA = m * k + gap, strideB = k * n + gap, strideC = m * n;
                Tensor a = r.input({batch * strideA}, t, uniform(-1, 1));
                Tensor b = r.input({batch * strideB}, t, uniform(-1, 1));
                Tensor c = beta != 0 ? r.input({batch * strideC}, t, uniform(-1, 1)) : r.output({batch * strideC}, t);
                r.backend().gemmStridedBatched(ta, tb, m, n, k, alpha, a, strideA, b, strideB, beta, c, strideC, batch);
                r.keep("C", c, reduction(k + (beta != 0 ? 1 : 0), t));
            }};
}

TransformerCase swapAxes(std::int64_t outer, std::int64_t rows, std::int64_t cols, std::int64_t inner)
{
    const std::string name = "swapAxes_" + std::to_string(outer) + "x" + std::to_string(rows) + "x" +
                             std::to_string(cols) + "x" + std::to_string(inner);
    return {name, Op::Attention, [=](OpRun& r, DType t) {
                Tensor x = r.input({outer * rows * cols * inner}, t, specials());
                for (DType to : kAllTypes) {
                    Tensor y = r.output({outer * rows * cols * inner}, to);
                    r.backend().swapAxes(x, y, outer, rows, cols, inner);
                    r.keep("y as " + typeName(to), y, exact());
                }
            }};
}

TransformerCase softmax(std::int64_t planes, std::int64_t queries, std::int64_t keys, bool causal, float range)
{
    const std::string name = "softmax_" + std::to_string(planes) + "x" + std::to_string(queries) + "x" +
                             std::to_string(keys) + (causal ? "_causal" : "") +
                             (range > 100 ? "_range" + std::to_string(static_cast<int>(range)) : "");
    return {name, Op::Attention, [=](OpRun& r, DType t) {
                const Shape shape{planes, queries, keys};
                // Under the causal mask the hidden keys hold NaN: a softmax that read one would
                // turn its row NaN.
                const Draw visible = uniform(-range, range);
                const Draw masked = [=](std::mt19937& g, std::size_t i) {
                    const auto key = static_cast<std::int64_t>(i) % keys;
                    const auto query = (static_cast<std::int64_t>(i) / keys) % queries;
                    const float v = visible(g, i);
                    return key > query + (keys - queries) ? NAN : v;
                };
                Tensor scores = r.input(shape, t, causal ? masked : visible);
                for (DType arithmetic : arithmeticsFor(t)) {
                    const std::string at = " (arithmetic " + typeName(arithmetic) + ")";
                    Tensor probs = r.output(shape, t);
                    r.backend().softmaxForward(scores, probs, queries, keys, causal, arithmetic);
                    // fp32: libm exp and a sum in another order; 16-bit: the CPU's loop, rounded alike.
                    r.keep("probs" + at, probs, arithmetic == DType::F32 ? reduction(keys, DType::F32) : exact());
                }
                Tensor probs = r.input(shape, t, uniform(0, 1));
                Tensor dprobs = r.input(shape, t, uniform(-1, 1));
                Tensor dscores = r.output(shape, t);
                r.backend().softmaxBackward(probs, dprobs, dscores, keys);
                r.keep("dscores", dscores, reduction(keys, DType::F32));
            }};
}

// Scores beyond fp16's range in a softmax computed in fp16: inf - inf makes the row NaN on
// both backends, the failure the setting exists to show. (fp16 runs only: bf16 holds them.)
TransformerCase softmaxOverflow()
{
    return {"softmaxInfinity", Op::Attention, [](OpRun& r, DType t) {
                const Shape shape{2, 5, 9};
                Tensor scores = r.input(shape, t, with(uniform(-4, 4), INFINITY, 13, 3));
                Tensor probs = r.output(shape, t);
                r.backend().softmaxForward(scores, probs, 5, 9, false, t == DType::F32 ? DType::F16 : t);
                r.keep("probs", probs, exact());
            }};
}

std::vector<TransformerCase> buildCases()
{
    std::vector<TransformerCase> cases;
    for (RowNormKind kind : {RowNormKind::LayerNorm, RowNormKind::RmsNorm}) {
        cases.push_back(rowNorm(kind, 7, 33, true, 2, 4));     // a mean of 3 against a spread of 1
        cases.push_back(rowNorm(kind, 64, 128, false, -2, 2)); // char-gpt's width
        cases.push_back(rowNorm(kind, 3, 300, true, -1, 1));   // wider than a block
        // 16-bit statistics of values near 250: squares of deviations overflow fp16 and the
        // running sum of 64 values stops taking in small ones.
        cases.push_back(rowNorm(kind, 5, 64, true, 200, 300));
    }
    cases.push_back(embedding(40, 11, 6));
    cases.push_back(embedding(512, 300, 130)); // more columns than one block's threads
    cases.push_back(addBroadcast(4, 30, 48));
    cases.push_back(addBroadcast(16, 128, 128));
    for (Transpose ta : {Transpose::No, Transpose::Yes})
        for (Transpose tb : {Transpose::No, Transpose::Yes})
            cases.push_back(gemmStridedBatched(ta, tb, 5, 7, 8, 3, 0, 1.0f, 0.0f));
    // Attention's two products: Q K^T scaled, and P V.
    cases.push_back(gemmStridedBatched(Transpose::No, Transpose::Yes, 16, 16, 32, 8, 0, 0.1767767f, 0.0f));
    cases.push_back(gemmStridedBatched(Transpose::No, Transpose::No, 16, 32, 16, 8, 0, 1.0f, 0.0f));
    cases.push_back(gemmStridedBatched(Transpose::Yes, Transpose::No, 6, 9, 33, 4, 5, 0.5f, 0.75f));
    cases.push_back(swapAxes(2, 5, 3, 4));
    cases.push_back(swapAxes(4, 16, 4, 8)); // [B, T, H, dh] to [B, H, T, dh]
    cases.push_back(swapAxes(1, 7, 1, 9));
    cases.push_back(softmax(3, 7, 7, false, 4));
    cases.push_back(softmax(3, 7, 7, true, 4));
    cases.push_back(softmax(2, 5, 9, true, 4)); // more keys than queries
    cases.push_back(softmax(2, 128, 128, true, 8));
    cases.push_back(softmax(1, 4, 300, false, 30000)); // large logits: exp of large differences is 0
    cases.push_back(softmaxOverflow());
    return cases;
}

const std::vector<TransformerCase>& transformerCases()
{
    static const std::vector<TransformerCase> cases = buildCases();
    return cases;
}

struct CaseParam {
    std::size_t index;
    DType dtype;
};

std::string paramName(const CaseParam& p) { return transformerCases()[p.index].name + "_" + typeName(p.dtype); }

void PrintTo(const CaseParam& p, std::ostream* os) { *os << paramName(p); }

std::vector<CaseParam> caseParams()
{
    std::vector<CaseParam> params;
    for (std::size_t i = 0; i < transformerCases().size(); ++i)
        for (DType t : kAllTypes)
            params.push_back({i, t});
    return params;
}

class CudaTransformerParity : public DeviceTest, public ::testing::WithParamInterface<CaseParam> {};

TEST_P(CudaTransformerParity, MatchesCpuBackend)
{
    const TransformerCase& c = transformerCases()[GetParam().index];
    const DType t = GetParam().dtype;
    if (!device().supports(c.op, t)) {
        if (t == DType::BF16)
            GTEST_SKIP() << device().name() << " does not support this op family in bf16";
        FAIL() << device().name() << " reports no support for this op family in " << dtypeName(t);
    }
    OpRun expected(oracle(), kSeed), actual(device(), kSeed);
    c.run(expected, t);
    c.run(actual, t);
    ASSERT_EQ(expected.kept().size(), actual.kept().size());
    for (std::size_t i = 0; i < expected.kept().size(); ++i) {
        const KeptOutput& e = expected.kept()[i];
        const Deviation d = compare(e, actual.kept()[i]);
        RecordProperty("worst:" + e.name, std::to_string(d.ratio));
        EXPECT_EQ(d.count, 0u) << paramName(GetParam()) << ", " << e.name << ": " << describe(d, e);
    }
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaTransformerParity, ::testing::ValuesIn(caseParams()),
                         [](const ::testing::TestParamInfo<CaseParam>& info) { return paramName(info.param); });

} // namespace
