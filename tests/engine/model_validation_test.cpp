// Model specs as a user writes them (JSON): every layer type's errors name the layer
// ("layer N (type): ...") and say what is wrong; valid specs get the shapes, counts and
// extents the editor shows; built models nest residual names and run in mixed precision.
#include "engine/config/run_config.h"
#include "engine/model/layer_factory.h"
#include "engine/model/model.h"
#include "engine/model/model_validation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

ModelSpec modelFromJson(const std::string& input, const std::string& layers, int classes = 10)
{
    const std::string json = R"({"model": {"input": )" + input + R"(, "classes": )" + std::to_string(classes) +
                             R"(, "layers": )" + layers + "}}";
    return parseRunConfig(json, "test").model;
}

struct ErrorCase {
    std::string name;
    std::string input, layers;
    int errorLayer;
    std::vector<std::string> phrases; // each must appear in the message, prefix first
};

void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

class ModelErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ModelErrors, NameTheLayerAndTheMismatch)
{
    const ErrorCase& c = GetParam();
    const ModelReport report = validateModel(modelFromJson(c.input, c.layers));
    ASSERT_FALSE(report.valid());
    EXPECT_EQ(report.errorLayer, c.errorLayer) << report.error;
    ASSERT_FALSE(c.phrases.empty());
    EXPECT_EQ(report.error.rfind(c.phrases.front(), 0), 0u) << "prefix of: " << report.error;
    for (const std::string& phrase : c.phrases)
        EXPECT_NE(report.error.find(phrase), std::string::npos)
            << "\"" << phrase << "\" missing from: " << report.error;
    EXPECT_FALSE(report.layers[static_cast<std::size_t>(c.errorLayer)].error.empty());
}

const std::string kImage = "[1, 28, 28]";
const std::string kHead = R"({"type": "flatten"}, {"type": "linear", "units": 10})";

const ErrorCase kErrorCases[] = {
    // conv2d
    {"convOnFlatInput",
     kImage,
     R"([{"type": "flatten"}, {"type": "conv2d", "filters": 8}])",
     1,
     {"layer 1 (conv2d): ", "expects an image [channels, height, width] but receives [784]", "before the flatten"}},
    {"convKernelTooLarge",
     "[1, 3, 3]",
     R"([{"type": "conv2d", "filters": 4, "kernel": 5}, )" + kHead + "]",
     0,
     {"layer 0 (conv2d): ", "kernel 5 does not fit a 3x3 input with padding 0"}},
    {"convNoFilters",
     kImage,
     R"([{"type": "conv2d"}, )" + kHead + "]",
     0,
     {"layer 0 (conv2d): ", "filters must be positive (got 0)"}},
    // pools
    {"maxpoolNoOutput",
     kImage,
     R"([{"type": "maxpool", "kernel": 2}, {"type": "maxpool", "kernel": 2}, {"type": "maxpool", "kernel": 2},
         {"type": "maxpool", "kernel": 2}, {"type": "maxpool", "kernel": 2}, )" +
         kHead + "]",
     4,
     {"layer 4 (maxpool): ", "kernel 2 leaves no output (output size 0) for a 1x1 input"}},
    {"avgpoolKernelTooLarge",
     "[3, 4, 4]",
     R"([{"type": "avgpool", "kernel": 5}, )" + kHead + "]",
     0,
     {"layer 0 (avgpool): ", "output size 0", "4x4"}},
    {"avgpoolPaddingMoreThanHalf",
     kImage,
     R"([{"type": "avgpool", "kernel": 2, "padding": 2}, )" + kHead + "]",
     0,
     {"layer 0 (avgpool): ", "padding 2 is more than half the kernel 2"}},
    {"maxpoolOnFlatInput",
     "[64]",
     R"([{"type": "maxpool", "kernel": 2}, {"type": "linear", "units": 10}])",
     0,
     {"layer 0 (maxpool): ", "expects an image", "[64]"}},
    // batchnorm
    {"batchnormOnSequence",
     "[4, 5]",
     R"([{"type": "batchnorm"}, )" + kHead + "]",
     0,
     {"layer 0 (batchnorm): ", "expects [channels] or [channels, height, width] but receives [4, 5]"}},
    {"batchnormEpsilon",
     kImage,
     R"([{"type": "batchnorm", "epsilon": 0}, )" + kHead + "]",
     0,
     {"layer 0 (batchnorm): ", "epsilon must be positive"}},
    // dropout
    // residual
    {"residualIdentityShapes",
     "[8, 14, 14]",
     R"([{"type": "residual", "layers": [{"type": "conv2d", "filters": 16, "padding": 1}]}, )" + kHead + "]",
     0,
     {"layer 0 (residual): ", "maps [8, 14, 14] to [16, 14, 14]", "identity shortcut needs equal shapes",
      R"("shortcut": "projection")"}},
    {"residualEmptyBody",
     kImage,
     R"([{"type": "residual", "layers": []}, )" + kHead + "]",
     0,
     {"layer 0 (residual): ", "has no layers"}},
    {"residualBodyError",
     kImage,
     R"([{"type": "relu"}, {"type": "residual", "layers": [{"type": "relu"}, {"type": "conv2d", "filters": 1, "kernel": 31}]}, )" +
         kHead + "]",
     1,
     {"layer 1 (residual): ", "body layer 1 (conv2d): ", "kernel 31 does not fit a 28x28 input"}},
    {"residualBodyFlattens",
     kImage,
     R"([{"type": "residual", "shortcut": "projection", "layers": [{"type": "flatten"}]}, {"type": "linear", "units": 10}])",
     0,
     {"layer 0 (residual): ", "turns [1, 28, 28] into [784]", "flatten after the block"}},
    {"residualNoWholeStride",
     "[2, 7, 7]",
     R"([{"type": "residual", "shortcut": "projection", "layers": [{"type": "conv2d", "filters": 4}]}, )" + kHead + "]",
     0,
     {"layer 0 (residual): ", "no strided 1x1 projection maps [2, 7, 7] to [4, 5, 5]"}},
    // the model as a whole
    {"wrongClassCount",
     "[32]",
     R"([{"type": "dropout"}, {"type": "linear", "units": 7}])",
     1,
     {"layer 1 (linear): ", "produces [7] but the model has 10 classes"}},
};

// A value outside its field's legal range is refused when the config is read, naming the field by
// its path (the config tables, engine/config/config_field.h), before any model is built.
TEST(ModelValidation, OutOfRangeLayerFieldsAreRefusedWhenRead)
{
    const std::pair<std::string, std::string> cases[] = {
        {R"({"type": "conv2d", "filters": 4, "stride": -1})", "model.layers[0].stride must be 0 to 1024 (got -1)"},
        {R"({"type": "conv2d", "filters": 4, "padding": -2})", "model.layers[0].padding must be 0 to 1024 (got -2)"},
        {R"({"type": "conv2d", "filters": 4, "kernel": 0})", "model.layers[0].kernel must be 1 to 1024 (got 0)"},
        {R"({"type": "batchnorm", "momentum": 1.5})", "model.layers[0].momentum must be 0 to 1 (got 1.5)"},
        {R"({"type": "dropout", "rate": 1.0})", "model.layers[0].rate must be 0 to 0.99 (got 1)"},
        {R"({"type": "dropout", "rate": -0.1})", "model.layers[0].rate must be 0 to 0.99 (got -0.1)"},
    };
    for (const auto& [layer, message] : cases) {
        try {
            modelFromJson(kImage, "[" + layer + ", " + kHead + "]");
            ADD_FAILURE() << layer << " was accepted";
        } catch (const ConfigError& e) {
            EXPECT_EQ(std::string(e.what()), "test: " + message);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Specs, ModelErrors, ::testing::ValuesIn(kErrorCases),
                         [](const ::testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

// W2, the cnn workload, exactly as its preset writes it.
const std::string kCnnLayers = R"([
    {"type": "conv2d", "filters": 32, "kernel": 3, "padding": 1, "bias": false},
    {"type": "batchnorm"},
    {"type": "relu"},
    {"type": "maxpool", "kernel": 2},
    {"type": "conv2d", "filters": 64, "kernel": 3, "padding": 1, "bias": false},
    {"type": "batchnorm"},
    {"type": "relu"},
    {"type": "maxpool", "kernel": 2},
    {"type": "flatten"},
    {"type": "linear", "units": 256, "inputs": 3136, "activation": "relu"},
    {"type": "linear", "units": 10}])";

TEST(ModelValidation, CnnWorkloadShapesCountsAndExtents)
{
    const ModelReport report = validateModel(modelFromJson(kImage, kCnnLayers));
    ASSERT_TRUE(report.valid()) << report.error;
    const std::vector<Shape> outputs{{32, 28, 28}, {32, 28, 28}, {32, 28, 28}, {32, 14, 14}, {64, 14, 14}, {64, 14, 14},
                                     {64, 14, 14}, {64, 7, 7},   {3136},       {256},        {10}};
    ASSERT_EQ(report.layers.size(), outputs.size());
    for (std::size_t i = 0; i < outputs.size(); ++i)
        EXPECT_EQ(report.layers[i].outputShape, outputs[i]) << "layer " << i;
    EXPECT_EQ(report.layers[0].parameters, 32 * 9);
    EXPECT_EQ(report.layers[1].parameters, 2 * 32);
    EXPECT_EQ(report.layers[4].parameters, 64 * 32 * 9);
    EXPECT_EQ(report.layers[0].flopsPerSample, 2 * 32 * 28 * 28 * 9);
    EXPECT_EQ(report.layers[4].flopsPerSample, 2 * 64 * 14 * 14 * 32 * 9);
    EXPECT_EQ(report.totalParameters, 32 * 9 + 64 + 64 * 32 * 9 + 128 + 3136 * 256 + 256 + 2570);
    const std::vector<std::pair<std::string, std::int64_t>> conv2{
        {"in channels", 32}, {"out channels", 64}, {"GEMM K (in channels x kernel area)", 288}};
    EXPECT_EQ(report.layers[4].tensorCoreExtents, conv2);
}

TEST(ModelValidation, WindowDefaultsAndExplicitStrides)
{
    // Pools default to stride = kernel, conv2d to 1; explicit strides win.
    const ModelReport report = validateModel(modelFromJson("[3, 12, 12]", R"([
        {"type": "avgpool", "kernel": 3},
        {"type": "maxpool", "kernel": 2, "stride": 1},
        {"type": "conv2d", "filters": 4, "kernel": 3, "padding": 1},
        {"type": "conv2d", "filters": 4, "kernel": 3, "stride": 2, "padding": 1},
        {"type": "flatten"}, {"type": "linear", "units": 10}])"));
    ASSERT_TRUE(report.valid()) << report.error;
    EXPECT_EQ(report.layers[0].outputShape, (Shape{3, 4, 4}));
    EXPECT_EQ(report.layers[1].outputShape, (Shape{3, 3, 3}));
    EXPECT_EQ(report.layers[2].outputShape, (Shape{4, 3, 3}));
    EXPECT_EQ(report.layers[3].outputShape, (Shape{4, 2, 2}));
}

TEST(ModelValidation, UnsetStrideSurvivesTheJsonRoundTrip)
{
    RunConfig config;
    config.model = modelFromJson(kImage, kCnnLayers);
    const std::string json = runConfigToJson(config);
    EXPECT_EQ(json.find("\"stride\""), std::string::npos) << json;
    const RunConfig again = parseRunConfig(json, "round trip");
    EXPECT_EQ(again.model.layers[3].stride, 0);
    EXPECT_TRUE(validateModel(again.model).valid());
}

TEST(ModelValidation, ResidualAggregatesItsLayers)
{
    const ModelReport report = validateModel(modelFromJson("[8, 6, 6]", R"([
        {"type": "residual", "shortcut": "projection", "layers": [
            {"type": "conv2d", "filters": 16, "kernel": 3, "stride": 2, "padding": 1, "bias": false},
            {"type": "batchnorm"}]},
        {"type": "flatten"}, {"type": "linear", "units": 10}])"));
    ASSERT_TRUE(report.valid()) << report.error;
    const LayerReport& block = report.layers[0];
    EXPECT_EQ(block.outputShape, (Shape{16, 3, 3}));
    // conv 16*8*9, batchnorm 2*16, projection 1x1 conv 16*8
    EXPECT_EQ(block.parameters, 16 * 8 * 9 + 32 + 16 * 8);
    // conv + batchnorm (one multiply-add per value) + projection + the addition
    EXPECT_EQ(block.flopsPerSample, 2 * 16 * 9 * 8 * 9 + 2 * 144 + 2 * 16 * 9 * 8 + 144);
    ASSERT_EQ(block.tensorCoreExtents.size(), 6u);
    EXPECT_EQ(block.tensorCoreExtents[0].first, "0.residual.0.conv2d: in channels");
    EXPECT_EQ(block.tensorCoreExtents[5],
              (std::pair<std::string, std::int64_t>{"0.residual.shortcut: GEMM K (in channels x kernel area)", 8}));
}

// --- built models ------------------------------------------------------------------------------------

const std::string kResidualLayers = R"([
    {"type": "conv2d", "filters": 8, "kernel": 3, "padding": 1, "bias": false},
    {"type": "batchnorm"},
    {"type": "relu"},
    {"type": "residual", "layers": [
        {"type": "conv2d", "filters": 8, "kernel": 3, "padding": 1, "activation": "relu"},
        {"type": "batchnorm", "precision": "fp32"}]},
    {"type": "residual", "shortcut": "projection", "layers": [
        {"type": "conv2d", "filters": 16, "kernel": 3, "stride": 2, "padding": 1}]},
    {"type": "avgpool", "kernel": 2, "padding": 1},
    {"type": "dropout", "rate": 0.25},
    {"type": "flatten"},
    {"type": "linear", "units": 10}])";

// Every kind in the engine's table builds (the factory's switch covers it) into a layer that
// reports that kind, whose key then names the layer's parameters.
TEST(ModelBuild, EveryLayerKindBuildsALayerOfThatKind)
{
    for (const EnumEntry<LayerKind>& entry : enumEntries<LayerKind>()) {
        SCOPED_TRACE(std::string(entry.key));
        LayerSpec spec;
        spec.type = entry.value;
        spec.units = 3;
        spec.filters = 2;
        spec.kernel = 2;
        spec.vocabulary = 5;
        spec.body = {LayerSpec{}};
        spec.body[0].type = LayerKind::Relu;
        // Token ids for an embedding, tokens [tokens, features] for the layers that take them.
        const std::set<LayerKind> takeTokens{LayerKind::LayerNorm, LayerKind::RmsNorm, LayerKind::PositionalEmbedding,
                                             LayerKind::Attention, LayerKind::Mlp,     LayerKind::Transformer};
        Shape input({2, 4, 4});
        if (entry.value == LayerKind::Linear)
            input = Shape({8});
        else if (entry.value == LayerKind::TokenEmbedding)
            input = Shape({6});
        else if (takeTokens.contains(entry.value))
            input = Shape({6, 4});
        const LayerPtr layer = createLayer(spec, input);
        ASSERT_TRUE(layer);
        EXPECT_EQ(layer->kind(), entry.value);
    }
}

TEST(ModelBuild, ResidualNamesNestAndBuffersAreNamed)
{
    auto backend = makeCpuBackend(2);
    Model model(modelFromJson("[1, 8, 8]", kResidualLayers), PrecisionMode::MixedFp16, *backend, 1);
    std::vector<std::string> names;
    for (Parameter* p : model.parametersInBackwardOrder())
        names.push_back(p->name);
    const std::vector<std::string> expected{"8.linear.weight",
                                            "8.linear.bias",
                                            "4.residual.shortcut.weight",
                                            "4.residual.0.conv2d.weight",
                                            "4.residual.0.conv2d.bias",
                                            "3.residual.1.batchnorm.gamma",
                                            "3.residual.1.batchnorm.beta",
                                            "3.residual.0.conv2d.weight",
                                            "3.residual.0.conv2d.bias",
                                            "1.batchnorm.gamma",
                                            "1.batchnorm.beta",
                                            "0.conv2d.weight"};
    EXPECT_EQ(names, expected);
    std::vector<std::string> buffers;
    for (const auto& [name, tensor] : model.buffers()) {
        buffers.push_back(name);
        EXPECT_EQ(tensor->dtype(), DType::F32) << name;
    }
    EXPECT_EQ(buffers,
              (std::vector<std::string>{"1.batchnorm.running_mean", "1.batchnorm.running_var",
                                        "3.residual.1.batchnorm.running_mean", "3.residual.1.batchnorm.running_var"}));
    // Sub-layers inherit the block's compute type unless they override it; batch-norm
    // parameters stay fp32 whatever the layer computes in.
    for (Parameter* p : model.parametersInBackwardOrder()) {
        const bool norm = p->name.find("batchnorm") != std::string::npos;
        EXPECT_EQ(p->working.dtype(), norm ? DType::F32 : DType::F16) << p->name;
        EXPECT_EQ(p->master.dtype(), DType::F32) << p->name;
    }
}

TEST(ModelBuild, MixedAndPurePrecisionRunForwardAndBackward)
{
    for (PrecisionMode mode :
         {PrecisionMode::Fp32, PrecisionMode::MixedFp16, PrecisionMode::MixedBf16, PrecisionMode::Fp16}) {
        SCOPED_TRACE(precisionModeName(mode));
        auto backend = makeCpuBackend(2);
        Model model(modelFromJson("[1, 8, 8]", kResidualLayers), mode, *backend, 1);
        std::vector<float> pixels(4 * 64);
        for (std::size_t i = 0; i < pixels.size(); ++i)
            pixels[i] = std::sin(static_cast<float>(i));
        Tensor x = Tensor::fromFloats({4, 1, 8, 8}, pixels);
        PassState pass{*backend};
        ModelForward forward = model.forward(pass, x);
        ASSERT_EQ(forward.logits.shape(), (Shape{4, 10}));
        EXPECT_EQ(forward.logits.dtype(), PrecisionPolicy(mode).dtype(TensorRole::Activation));
        Tensor labels = Tensor::fromFloats({4}, {1, 2, 3, 4});
        Tensor dlogits = backend->empty(forward.logits.shape(), forward.logits.dtype());
        const LossResult loss = backend->softmaxCrossEntropy(forward.logits, labels, 1.0f, &dlogits);
        EXPECT_TRUE(std::isfinite(loss.meanLoss));
        model.backward(pass, dlogits, forward);
        for (Parameter* p : model.parametersInBackwardOrder()) {
            double sum = 0;
            for (float v : p->grad.toFloats())
                sum += std::abs(v);
            EXPECT_TRUE(std::isfinite(sum) && sum > 0) << p->name << " has no gradient";
        }
    }
}

} // namespace
