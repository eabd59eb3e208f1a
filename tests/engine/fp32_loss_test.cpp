// The softmax and cross-entropy run in fp32 whatever the logits' dtype (backend.h): logits
// near fp16's limit, whose differences and losses are beyond it, give the exact finite loss and
// gradient, where the same formulas evaluated in fp16 give inf or NaN. Each case computes its
// reference in double and shows, with the engine's own fp16 rounding, that an fp16 loss fails
// on the same values, so the test would catch the loss moving to the logits' dtype.
#include "engine/backend/backend.h"
#include "engine/numerics/conversions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

using namespace mantissa;

namespace {

struct LossCase {
    DType logitType;
    std::int64_t classes;
    std::vector<float> logits; // [batch, classes], representable in logitType
    std::vector<float> labels;
    float lossScale;
};

std::int64_t batchOf(const LossCase& c) { return static_cast<std::int64_t>(c.labels.size()); }

struct Reference {
    float meanLoss = 0;
    std::vector<float> dlogits; // rounded to the logits' dtype
};

// log-sum-exp with the max subtracted, in double: the loss of a row is lse - z[label], the
// gradient lossScale * (softmax - onehot) / N.
Reference referenceLoss(const LossCase& c)
{
    const std::int64_t batch = batchOf(c);
    Reference r;
    double lossSum = 0;
    for (std::int64_t n = 0; n < batch; ++n) {
        const float* z = c.logits.data() + n * c.classes;
        double max = z[0];
        for (std::int64_t k = 1; k < c.classes; ++k)
            max = std::max(max, static_cast<double>(z[k]));
        double sum = 0;
        for (std::int64_t k = 0; k < c.classes; ++k)
            sum += std::exp(z[k] - max);
        const double lse = max + std::log(sum);
        const auto label = static_cast<std::int64_t>(c.labels[static_cast<std::size_t>(n)]);
        lossSum += lse - z[label];
        for (std::int64_t k = 0; k < c.classes; ++k) {
            const double p = std::exp(z[k] - lse);
            const double g = c.lossScale * (p - (k == label ? 1.0 : 0.0)) / static_cast<double>(batch);
            r.dlogits.push_back(roundToDType(static_cast<float>(g), c.logitType));
        }
    }
    r.meanLoss = static_cast<float>(lossSum / static_cast<double>(batch));
    return r;
}

float h(double v) { return roundToDType(static_cast<float>(v), DType::F16); }

// The stable formula with every operation rounded to fp16, as an fp16 loss kernel would do it:
// the logits cast to fp16, z - max, exp, the row sum, its log, the row loss and the batch sum.
struct Fp16Loss {
    float lossSum = 0;
    bool anyProbabilityNaN = false;
};

Fp16Loss lossInFp16(const LossCase& c, bool subtractMax)
{
    Fp16Loss out;
    for (std::int64_t n = 0; n < batchOf(c); ++n) {
        std::vector<float> z;
        for (std::int64_t k = 0; k < c.classes; ++k)
            z.push_back(h(c.logits[static_cast<std::size_t>(n * c.classes + k)]));
        float max = z[0];
        for (float v : z)
            max = std::max(max, v);
        const float shift = subtractMax ? max : 0.0f;
        float sum = 0;
        std::vector<float> e;
        for (float v : z) {
            e.push_back(h(std::exp(h(v - shift))));
            sum = h(sum + e.back());
        }
        for (float v : e)
            out.anyProbabilityNaN = out.anyProbabilityNaN || std::isnan(h(v / sum));
        const auto label = static_cast<std::size_t>(c.labels[static_cast<std::size_t>(n)]);
        const float rowLoss = h(h(std::log(sum)) - h(z[label] - shift));
        out.lossSum = h(out.lossSum + rowLoss);
    }
    return out;
}

struct EngineLoss {
    float meanLoss = 0;
    float correct = 0;
    std::vector<float> dlogits;
    DType dlogitType = DType::F32;
};

// Through the step's loss op, the one the trainer runs: the loss scale comes from the step's
// scalars and the result goes back to them.
EngineLoss engineLoss(const LossCase& c)
{
    auto backend = makeCpuBackend(1);
    StepScalars scalars;
    scalars.inputs = backend->empty({kStepInputCount}, DType::F32);
    scalars.state = backend->empty({kStepStateCount}, DType::F32);
    backend->fill(scalars.inputs, 0.0f);
    backend->fill(scalars.state, 0.0f);
    scalars.state.f32()[slot(StepState::LossScale)] = c.lossScale;
    const Shape shape{batchOf(c), c.classes};
    const Tensor logits = Tensor::fromFloats(shape, c.logits, c.logitType);
    EXPECT_EQ(logits.toFloats(), c.logits) << "the case's logits must be exact in its dtype";
    const Tensor labels = Tensor::fromFloats({batchOf(c)}, c.labels);
    Tensor dlogits = backend->empty(shape, c.logitType);
    backend->softmaxCrossEntropy(logits, labels, scalars, dlogits);
    return {scalars.state.f32()[slot(StepState::Loss)], scalars.state.f32()[slot(StepState::Correct)],
            dlogits.toFloats(), dlogits.dtype()};
}

TEST(Fp32Loss, Fp16LogitsNearTheLimitGiveTheExactLossAndGradient)
{
    // fp16 holds up to 65504 (spacing 32 above 32768). Row 0's label is 120000 below the
    // max; row 1 is right; rows 2 and 3 have two logits 32 apart and the third 120000 away.
    const LossCase c{DType::F16,
                     3,
                     {60000, -60000, 0, 60000, -60000, 0, -60000, 60000, 59968, 59968, 60000, -59968},
                     {1, 0, 2, 0},
                     8.0f};
    const Reference ref = referenceLoss(c);
    // (120000 + 0 + 32 + 32) / 4, the log terms (e^-32 and smaller) below fp32's resolution.
    ASSERT_EQ(ref.meanLoss, 30016.0f);

    // The same in fp16 arithmetic: z - max overflows to -inf and the row loss to +inf with the
    // max subtracted; without it exp(60000) is inf and inf / inf NaN.
    const Fp16Loss stable = lossInFp16(c, true);
    ASSERT_TRUE(std::isinf(stable.lossSum)) << stable.lossSum;
    const Fp16Loss naive = lossInFp16(c, false);
    ASSERT_TRUE(naive.anyProbabilityNaN);

    const EngineLoss got = engineLoss(c);
    EXPECT_EQ(got.meanLoss, ref.meanLoss);
    EXPECT_EQ(got.correct, 1.0f); // only row 1's arg-max is its label
    EXPECT_EQ(got.dlogitType, DType::F16);
    EXPECT_EQ(got.dlogits, ref.dlogits);
    // lossScale 8 over 4 rows: +-2 where the softmax is one-hot and the label is elsewhere.
    EXPECT_EQ(got.dlogits, (std::vector<float>{2, -2, 0, 0, 0, 0, 0, 2, -2, -2, 2, 0}));
}

TEST(Fp32Loss, Bf16LogitsBeyondTheFp16RangeGiveTheExactLossAndGradient)
{
    // bf16 reaches 3.4e38 with 8 bits of precision (spacing 1024 at 2^17): logits beyond 65504
    // that an fp16 loss could not even hold.
    const LossCase c{DType::BF16, 3, {131072, 130048, -131072, -131072, 131072, 262144}, {1, 0}, 1024.0f};
    const Reference ref = referenceLoss(c);
    // Row 0: 1024 (e^-1024 is below double's range); row 1: 393216.
    ASSERT_EQ(ref.meanLoss, (1024.0f + 393216.0f) / 2);
    ASSERT_TRUE(std::isinf(h(c.logits[0]))) << "the logits must be out of fp16's range";
    ASSERT_TRUE(std::isnan(lossInFp16(c, true).lossSum)); // inf - inf once cast to fp16

    const EngineLoss got = engineLoss(c);
    EXPECT_EQ(got.meanLoss, ref.meanLoss);
    EXPECT_EQ(got.correct, 0.0f);
    EXPECT_EQ(got.dlogitType, DType::BF16);
    EXPECT_EQ(got.dlogits, ref.dlogits);
    EXPECT_EQ(got.dlogits, (std::vector<float>{512, -512, 0, -512, 0, 512}));
}

} // namespace
