// precision.recipe.passes = backward: a recipe quantises only the backward pass's GEMMs (data
// and weight gradient), the forward GEMM multiplying the layer's bf16 values as mixed-bf16
// does (Tseng et al.'s MXFP4 training). The forward pass gives mixed-bf16's logits bit for bit,
// the numerics lens sees quantised inputs in the backward GEMMs only, and the gradients are
// those of the quantised backward, not mixed-bf16's.
#include "engine/backend/backend.h"
#include "engine/config/run_config.h"
#include "engine/lens/numerics_probe.h"
#include "engine/model/model.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

#include <random>

using namespace mantissa;

namespace {

RunConfig passesConfig(PrecisionMode mode, RecipePasses passes)
{
    RunConfig c = test_support::smallSyntheticConfig(mode);
    c.model.input = {64};
    c.data.syntheticShape = {64};
    c.model.classes = 16;
    c.model.layers = {test_support::layerSpec(LayerKind::Linear, 32, Activation::Relu),
                      test_support::layerSpec(LayerKind::Linear, 16)};
    c.recipe.keepFirstLast = RecipeSwitch::Off;
    c.recipe.passes = passes;
    return c;
}

std::vector<float> inputs(std::size_t n)
{
    std::mt19937 gen(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v)
        x = normal(gen);
    return v;
}

struct Pass {
    std::vector<float> logits, firstWeightGradient;
    std::vector<GemmInputNumerics> gemmInputs;
};

Pass run(const RunConfig& c)
{
    auto backend = makeCpuBackend(1);
    Model model(c.model, c.precision, *backend, 5, c.recipe);
    ProbeSettings settings;
    settings.gemmInputs = true;
    NumericsProbe probe(model, *backend, settings);
    PassState pass{*backend, true, 42, 1};
    pass.tap = &probe;
    ModelForward forward = model.forward(pass, Tensor::fromFloats({32, 64}, inputs(32 * 64), DType::F32));
    Tensor dlogits = backend->empty(forward.logits.shape(), forward.logits.dtype());
    backend->fill(dlogits, 0.01f);
    model.backward(pass, dlogits, forward);
    return {forward.logits.toFloats(), model.layers()[0]->parameters()[0]->grad.toFloats(), probe.record(1).gemmInputs};
}

} // namespace

TEST(RecipePasses, BackwardOnlyKeepsTheForwardInBf16AndQuantisesTheBackward)
{
    const Pass bf16 = run(passesConfig(PrecisionMode::MixedBf16, RecipePasses::All));
    for (const PrecisionMode mode :
         {PrecisionMode::Mxfp4, PrecisionMode::Mxfp8, PrecisionMode::Nvfp4, PrecisionMode::Fp8Hybrid}) {
        SCOPED_TRACE(precisionModeName(mode));
        const Pass all = run(passesConfig(mode, RecipePasses::All));
        const Pass backward = run(passesConfig(mode, RecipePasses::Backward));
        EXPECT_EQ(backward.logits, bf16.logits);
        EXPECT_NE(all.logits, bf16.logits);
        // Both layers' backward GEMMs read quantised inputs (the first computes no dx); no
        // forward GEMM does.
        EXPECT_EQ(backward.gemmInputs.size(), 2u + 4u);
        for (const GemmInputNumerics& g : backward.gemmInputs)
            EXPECT_NE(g.pass, GemmPass::Forward) << g.layer;
        EXPECT_EQ(all.gemmInputs.size(), 4u + 6u);
        // The weight gradient is the quantised backward's: not mixed-bf16's.
        EXPECT_NE(backward.firstWeightGradient, bf16.firstWeightGradient);
    }
}

TEST(RecipePasses, TheFieldRoundTripsAndIsWrittenOnlyWhenSet)
{
    RunConfig c = passesConfig(PrecisionMode::Mxfp4, RecipePasses::All);
    EXPECT_EQ(runConfigToJson(c).find("\"passes\""), std::string::npos);
    c.recipe.passes = RecipePasses::Backward;
    const std::string json = runConfigToJson(c);
    EXPECT_NE(json.find("\"passes\": \"backward\""), std::string::npos) << json;
    EXPECT_EQ(parseRunConfig(json, "test").recipe.passes, RecipePasses::Backward);
    EXPECT_THROW(parseRunConfig(R"({"precision": {"mode": "mxfp4", "recipe": {"passes": "forward"}}})", "test"),
                 ConfigError);
}
