// A per-layer precision override (issue 15, section 6): the overridden layer computes in its
// own dtype, and the model casts the activations entering and leaving it, rounding them to
// the receiving layer's dtype. Checked on values, not only dtypes: the overridden linear
// layers get a 0/1 weight matrix that adds neighbouring inputs, y[j] = x[j] + x[j+1], so the
// exact output tells whether its inputs were rounded to its dtype before the sum.
#include "engine/config/run_config.h"
#include "engine/model/model.h"
#include "engine/numerics/conversions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace mantissa {
namespace {

constexpr std::int64_t kBatch = 4, kWidth = 16;

// Records every top-level layer's output and input gradient as floats with their dtype.
class RecordingTap final : public LayerTap {
public:
    struct Seen {
        DType dtype = DType::F32;
        std::vector<float> values;
    };
    void afterForward(std::size_t index, const Tensor& output) override
    {
        outputs[index] = {output.dtype(), output.toFloats()};
    }
    void afterBackward(std::size_t index, const Tensor& inputGradient) override
    {
        if (inputGradient.defined())
            gradients[index] = inputGradient.dtype();
    }
    std::map<std::size_t, Seen> outputs;
    std::map<std::size_t, DType> gradients;
};

ModelSpec modelFromLayers(const std::string& layers)
{
    const std::string json = R"({"model": {"input": [16], "classes": 4, "layers": )" + layers + "}}";
    return parseRunConfig(json, "test").model;
}

// y[j] = x[j] + x[(j + 1) % width]: 0/1 weights, exact in every dtype.
void setNeighbourSumWeights(Backend& backend, Layer& linear)
{
    Parameter& weight = *linear.parameters().at(0);
    ASSERT_EQ(weight.working.shape(), (Shape{kWidth, kWidth}));
    std::vector<float> w(kWidth * kWidth, 0.0f);
    for (std::int64_t j = 0; j < kWidth; ++j) {
        w[static_cast<std::size_t>(j * kWidth + j)] = 1;
        w[static_cast<std::size_t>(j * kWidth + (j + 1) % kWidth)] = 1;
    }
    backend.upload(w.data(), weight.master);
    if (!weight.working.sharesStorageWith(weight.master))
        backend.upload(w.data(), weight.working);
}

// What a layer computing in `type` makes of `in` under the neighbour-sum weights: its inputs
// rounded to `type`, added (exactly, in fp32), the sum rounded to `type`.
std::vector<float> neighbourSums(const std::vector<float>& in, DType type, bool roundInputs = true)
{
    std::vector<float> out(in.size());
    for (std::int64_t n = 0; n < kBatch; ++n) {
        for (std::int64_t j = 0; j < kWidth; ++j) {
            float a = in[static_cast<std::size_t>(n * kWidth + j)];
            float b = in[static_cast<std::size_t>(n * kWidth + (j + 1) % kWidth)];
            if (roundInputs) {
                a = roundToDType(a, type);
                b = roundToDType(b, type);
            }
            out[static_cast<std::size_t>(n * kWidth + j)] = roundToDType(a + b, type);
        }
    }
    return out;
}

std::vector<float> reluRounded(const std::vector<float>& in, DType type)
{
    std::vector<float> out;
    for (float v : in)
        out.push_back(std::max(0.0f, roundToDType(v, type)));
    return out;
}

bool allRepresentable(const std::vector<float>& values, DType type)
{
    return std::all_of(values.begin(), values.end(), [&](float v) { return roundToDType(v, type) == v; });
}

Tensor input()
{
    std::vector<float> values(kBatch * kWidth);
    for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = std::sin(0.37f * static_cast<float>(i) + 0.1f) * 3.0f;
    return Tensor::fromFloats({kBatch, kWidth}, values);
}

// Runs forward and backward with the tap installed.
RecordingTap runPasses(Model& model, Backend& backend)
{
    RecordingTap tap;
    PassState pass{backend};
    pass.tap = &tap;
    ModelForward forward = model.forward(pass, input());
    Tensor labels = Tensor::fromFloats({kBatch}, {0, 1, 2, 3});
    Tensor dlogits = backend.empty(forward.logits.shape(), forward.logits.dtype());
    backend.softmaxCrossEntropy(forward.logits, labels, 1.0f, &dlogits);
    model.backward(pass, dlogits, forward);
    return tap;
}

TEST(PrecisionOverride, MixedFp16KeepsOneLinearInFp32AndOneInBf16)
{
    auto backend = makeCpuBackend(1);
    Model model(modelFromLayers(R"([
        {"type": "linear", "units": 16, "bias": false},
        {"type": "linear", "units": 16, "bias": false, "precision": "fp32"},
        {"type": "relu"},
        {"type": "linear", "units": 16, "bias": false, "precision": "bf16"},
        {"type": "linear", "units": 4}])"),
                PrecisionMode::MixedFp16, *backend, 3);
    const std::vector<Layer*> layers = model.layers();
    const std::vector<DType> compute{DType::F16, DType::F32, DType::F16, DType::BF16, DType::F16};
    for (std::size_t i = 0; i < layers.size(); ++i)
        EXPECT_EQ(layers[i]->computeType(), compute[i]) << "layer " << i;
    // Weights in the layer's own type, masters fp32 as in every mixed run.
    for (std::size_t i : {0u, 1u, 3u, 4u}) {
        for (Parameter* p : layers[i]->parameters()) {
            EXPECT_EQ(p->working.dtype(), compute[i]) << p->name;
            EXPECT_EQ(p->master.dtype(), DType::F32) << p->name;
        }
    }
    setNeighbourSumWeights(*backend, *layers[1]);
    setNeighbourSumWeights(*backend, *layers[3]);

    const RecordingTap tap = runPasses(model, *backend);
    for (std::size_t i = 0; i < layers.size(); ++i)
        EXPECT_EQ(tap.outputs.at(i).dtype, compute[i]) << "output of layer " << i;
    const std::vector<float>& fp16Out = tap.outputs.at(0).values;
    // Entering the fp32 layer: fp16 widens exactly, and the sums are kept in fp32, finer than
    // fp16 could hold them.
    const std::vector<float>& fp32Out = tap.outputs.at(1).values;
    EXPECT_EQ(fp32Out, neighbourSums(fp16Out, DType::F32));
    EXPECT_FALSE(allRepresentable(fp32Out, DType::F16)) << "the fp32 layer's sums fit fp16: the test proves nothing";
    // Leaving it: the relu (fp16) receives the sums rounded to fp16.
    EXPECT_EQ(tap.outputs.at(2).values, reluRounded(fp32Out, DType::F16));
    // Entering the bf16 layer: its inputs are rounded to bf16 before the sum, which a layer
    // fed the fp16 values unrounded would not match.
    const std::vector<float>& reluOut = tap.outputs.at(2).values;
    EXPECT_EQ(tap.outputs.at(3).values, neighbourSums(reluOut, DType::BF16));
    EXPECT_NE(neighbourSums(reluOut, DType::BF16), neighbourSums(reluOut, DType::BF16, false))
        << "rounding the inputs first changes no sum: the test proves nothing";
    // Backward: each layer's dx leaves in its own type; the model casts it for the next.
    for (std::size_t i = 1; i < layers.size(); ++i)
        EXPECT_EQ(tap.gradients.at(i), compute[i]) << "dx of layer " << i;
    for (std::size_t i : {0u, 1u, 3u, 4u})
        for (Parameter* p : layers[i]->parameters())
            EXPECT_EQ(p->grad.dtype(), compute[i]) << p->name;
}

TEST(PrecisionOverride, Fp32RunComputesOneLinearInFp16)
{
    auto backend = makeCpuBackend(1);
    Model model(modelFromLayers(R"([
        {"type": "linear", "units": 16, "bias": false},
        {"type": "linear", "units": 16, "bias": false, "precision": "fp16"},
        {"type": "relu"},
        {"type": "linear", "units": 4}])"),
                PrecisionMode::Fp32, *backend, 3);
    const std::vector<Layer*> layers = model.layers();
    const std::vector<DType> compute{DType::F32, DType::F16, DType::F32, DType::F32};
    for (std::size_t i = 0; i < layers.size(); ++i)
        EXPECT_EQ(layers[i]->computeType(), compute[i]) << "layer " << i;
    Parameter& weight = *layers[1]->parameters().at(0);
    EXPECT_EQ(weight.working.dtype(), DType::F16);
    EXPECT_EQ(weight.master.dtype(), DType::F32); // an fp16 copy of fp32 weights, as in mixed precision
    setNeighbourSumWeights(*backend, *layers[1]);

    const RecordingTap tap = runPasses(model, *backend);
    const std::vector<float>& fp32In = tap.outputs.at(0).values;
    ASSERT_FALSE(allRepresentable(fp32In, DType::F16));
    // Entering: the fp32 activations are rounded to fp16, then summed and rounded again.
    EXPECT_EQ(tap.outputs.at(1).dtype, DType::F16);
    EXPECT_EQ(tap.outputs.at(1).values, neighbourSums(fp32In, DType::F16));
    EXPECT_NE(neighbourSums(fp32In, DType::F16), neighbourSums(fp32In, DType::F16, false))
        << "rounding the inputs first changes no sum: the test proves nothing";
    // Leaving: fp16 widens to fp32 exactly.
    EXPECT_EQ(tap.outputs.at(2).dtype, DType::F32);
    EXPECT_EQ(tap.outputs.at(2).values, reluRounded(tap.outputs.at(1).values, DType::F32));
    EXPECT_EQ(tap.gradients.at(1), DType::F16);
    EXPECT_EQ(weight.grad.dtype(), DType::F16);
    EXPECT_EQ(tap.gradients.at(2), DType::F32);
}

// Pure bf16 keeps no fp32 masters, so a layer kept in fp32 keeps its own weights in fp32; inside
// a residual block the layers without an override follow the block.
TEST(PrecisionOverride, PureBf16KeepsAnFp32LayerInsideABlockInFp32)
{
    auto backend = makeCpuBackend(1);
    Model model(modelFromLayers(R"([
        {"type": "residual", "layers": [
            {"type": "linear", "units": 16, "precision": "fp32"},
            {"type": "linear", "units": 16}]},
        {"type": "residual", "precision": "fp32", "layers": [{"type": "linear", "units": 16}]},
        {"type": "linear", "units": 4}])"),
                PrecisionMode::Bf16, *backend, 3);
    std::map<std::string, DType> expected{{"0.residual.0.linear.weight", DType::F32},
                                          {"0.residual.0.linear.bias", DType::F32},
                                          {"0.residual.1.linear.weight", DType::BF16},
                                          {"0.residual.1.linear.bias", DType::BF16},
                                          {"1.residual.0.linear.weight", DType::F32},
                                          {"1.residual.0.linear.bias", DType::F32},
                                          {"2.linear.weight", DType::BF16},
                                          {"2.linear.bias", DType::BF16}};
    for (Parameter* p : model.parametersInBackwardOrder()) {
        ASSERT_TRUE(expected.contains(p->name)) << p->name;
        EXPECT_EQ(p->working.dtype(), expected[p->name]) << p->name;
        EXPECT_EQ(p->master.dtype(), expected[p->name]) << p->name;
        EXPECT_TRUE(p->working.sharesStorageWith(p->master)) << p->name << ": the weights are their own masters";
        expected.erase(p->name);
    }
    EXPECT_TRUE(expected.empty());
    const RecordingTap tap = runPasses(model, *backend);
    EXPECT_EQ(tap.outputs.at(0).dtype, DType::BF16);
    EXPECT_EQ(tap.outputs.at(1).dtype, DType::F32);
    EXPECT_EQ(tap.outputs.at(2).dtype, DType::BF16);
}

} // namespace
} // namespace mantissa
