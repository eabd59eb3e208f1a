// export-model's engine side (engine/onnx/export_onnx.h): a model imported from PyTorch's ONNX
// file, its weights and running statistics changed as training would change them, is written
// back into its graph; importing the written file gives every parameter and statistic the
// same bits, and the same logits bit for bit on a batch in inference mode (where batch
// normalisation reads the running statistics). ResNet-18 covers convolutions and batch
// normalisation, the ViT MatMul weights read through a Transpose, a class token and a learned
// positional table held outside any engine layer. A preset's layer list is written as a new
// graph, and the same holds for it.
#include "engine/config/presets.h"
#include "engine/model/model.h"
#include "engine/onnx/export_onnx.h"
#include "engine/onnx/onnx_model.h"
#include "engine/util/check.h"
#include "torch_fixtures.h"

#include <gtest/gtest.h>

#include <bit>
#include <filesystem>
#include <map>
#include <random>

using namespace mantissa;
using namespace mantissa::onnx_import;

namespace {

RunConfig configFor(const std::string& path, const std::vector<std::int64_t>& sampleShape)
{
    installOnnxModelSupport();
    RunConfig config;
    config.data.dataset = DatasetKind::Synthetic;
    useOnnxModel(config, path, sampleShape);
    return config;
}

std::vector<float> values(Backend& backend, const Tensor& t)
{
    std::vector<float> out(static_cast<std::size_t>(t.numel()));
    backend.download(t, out.data());
    return out;
}

// Moves every weight by a little noise and every running statistic by a factor, as training
// does, so that a file that still held the original values would be caught.
void perturb(Model& model, Backend& backend)
{
    std::mt19937 rng(3);
    std::normal_distribution<float> noise(0.0f, 0.01f);
    std::uniform_real_distribution<float> factor(1.0f, 1.5f);
    for (Parameter* p : model.parametersInBackwardOrder()) {
        std::vector<float> v = values(backend, p->master);
        for (float& x : v)
            x += noise(rng);
        backend.upload(v.data(), p->master);
        if (p->working.dtype() != p->master.dtype())
            backend.cast(p->master, p->working);
    }
    for (auto& [name, tensor] : model.buffers()) {
        std::vector<float> v = values(backend, *tensor);
        for (float& x : v)
            x = x * factor(rng) + noise(rng); // zeros move too; variances (1 at first) stay positive
        backend.upload(v.data(), *tensor);
    }
}

std::map<std::string, std::vector<float>> namedValues(Model& model, Backend& backend)
{
    std::map<std::string, std::vector<float>> out;
    for (Parameter* p : model.parametersInBackwardOrder())
        out[p->name] = values(backend, p->master);
    for (auto& [name, tensor] : model.buffers())
        out[name] = values(backend, *tensor);
    return out;
}

std::vector<float> inferenceLogits(Model& model, Backend& backend, const Shape& batchShape)
{
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<std::size_t>(batchShape.numel()));
    for (float& v : x)
        v = normal(rng);
    Tensor input = backend.empty(batchShape, DType::F32);
    backend.upload(x.data(), input);
    PassState pass{backend};
    pass.training = false;
    return values(backend, model.forward(pass, input).logits);
}

std::size_t differingBits(const std::vector<float>& a, const std::vector<float>& b)
{
    std::size_t differ = a.size() == b.size() ? 0 : std::max(a.size(), b.size());
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        differ += std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i]);
    return differ;
}

// Exports `config`'s model after perturbing it, imports the file again and compares.
void checkRoundTrip(const RunConfig& config, const std::string& label)
{
    SCOPED_TRACE(label);
    const std::vector<std::int64_t> sampleShape = config.model.input;
    auto backend = makeCpuBackend(2);
    Model trained(config.model, PrecisionMode::Fp32, *backend, 1);
    const auto original = namedValues(trained, *backend);
    perturb(trained, *backend);
    const auto changed = namedValues(trained, *backend);

    const std::string out = (std::filesystem::path(testing::TempDir()) / (label + "-exported.onnx")).string();
    const ExportSummary summary = exportTrainedOnnx(config, trained, *backend, out);
    EXPECT_EQ(summary.initializers, static_cast<std::int64_t>(changed.size()));
    EXPECT_EQ(summary.parameters, static_cast<std::int64_t>(trained.parametersInBackwardOrder().size()));
    EXPECT_EQ(summary.bytes, std::filesystem::file_size(out));

    Model reimported(configFor(out, sampleShape).model, PrecisionMode::Fp32, *backend, 1);
    const auto loaded = namedValues(reimported, *backend);
    ASSERT_EQ(loaded.size(), changed.size());
    std::size_t tensorsChanged = 0;
    for (const auto& [name, v] : changed) {
        ASSERT_TRUE(loaded.contains(name)) << name;
        EXPECT_EQ(differingBits(loaded.at(name), v), 0u) << name;
        tensorsChanged += differingBits(original.at(name), v) > 0;
    }
    EXPECT_EQ(tensorsChanged, changed.size()); // the perturbation reached every tensor

    std::vector<std::int64_t> batch{2};
    batch.insert(batch.end(), sampleShape.begin(), sampleShape.end());
    const std::vector<float> before = inferenceLogits(trained, *backend, Shape(batch));
    const std::vector<float> after = inferenceLogits(reimported, *backend, Shape(batch));
    EXPECT_EQ(differingBits(before, after), 0u);
    EXPECT_GT(before.size(), 0u);
}

void checkFixtureRoundTrip(const std::string& fixture)
{
    const auto sampleShape = fixtures::facts(fixture).at("sample_shape").get<std::vector<std::int64_t>>();
    checkRoundTrip(configFor(fixtures::kModels + fixture + ".onnx", sampleShape), fixture);
}

} // namespace

TEST(OnnxExport, ResNetWeightsAndRunningStatisticsRoundTripBitForBit) { checkFixtureRoundTrip("resnet18"); }

TEST(OnnxExport, VitWeightsHeldOutsideLayersRoundTripBitForBit) { checkFixtureRoundTrip("vit"); }

// [K, N] MatMul weights read as they are: the layers hold their transposes, and the export
// writes them back in the file's layout (one is square, where the shape cannot tell).
TEST(OnnxExport, PlainMatMulWeightsGoBackInTheFilesLayout)
{
    checkRoundTrip(configFor(std::string(MANTISSA_ONNX_MODELS) + "/small/plain_matmul.onnx", {8}), "plain_matmul");
}

// A preset's layer list becomes a new graph: fused activations, convolutions, batch
// normalisation, pools, flatten, and residual blocks with identity and projection shortcuts.
TEST(OnnxExport, PresetsBecomeGraphsThatImportToTheSameBits)
{
    for (const char* preset : {"mlp", "cnn", "resnet-small", "deep-mlp"})
        checkRoundTrip(presetConfig(preset), preset);
}

TEST(OnnxExport, ALayerWithoutAnOnnxFormIsNamedAndNothingIsWritten)
{
    auto backend = makeCpuBackend(1);
    const RunConfig config = presetConfig("char-gpt");
    Model model(config.model, PrecisionMode::Fp32, *backend, 1);
    const std::string out = testing::TempDir() + "/never.onnx";
    try {
        exportTrainedOnnx(config, model, *backend, out);
        FAIL() << "char-gpt exported";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("layer 0.token_embedding (token_embedding) has no ONNX form here yet"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(out));
}
