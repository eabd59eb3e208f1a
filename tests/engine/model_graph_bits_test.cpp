// Every preset trains to the same float32 bits as the golden file records: the train loss of a
// few steps and a checksum of every parameter's and buffer's final values (with their names), in
// fp32, mixed fp16, mixed bf16 and one sub-16-bit recipe each, plus a small model whose residual
// block carries per-layer overrides. The golden values were recorded before the model became a
// graph of ops, so a change in how a model is built, named, cast or differentiated shows here as
// a changed bit, and the line that differs names the preset and the mode.
//
// The runs use the emulated CPU kernels on one thread: their results do not depend on which
// 16-bit instructions the CPU has. The fp32 GEMMs and convolutions are oneDNN's, whose blocking,
// and so summation order, differs between instruction sets: the golden file names the one it was
// recorded on (oneDNN's ISA), and on another the cases skip, saying so. To compare a change there,
// record the file before it with MANTISSA_WRITE_MODEL_GRAPH_BITS=1, which rewrites the golden file
// before the tests compare with it.
#include "engine/backend/backend.h"
#include "engine/backend/cpu/onednn_runtime.h"
#include "engine/config/presets.h"
#include "engine/data/dataset.h"
#include "engine/train/trainer.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

constexpr std::int64_t kSteps = 3;
constexpr std::int64_t kBatch = 4;

struct Case {
    std::string preset; // a preset's name, or "small-conv-overrides"
    PrecisionMode mode;
};

// What CTest's list shows for a case, rather than its bytes.
[[maybe_unused]] void PrintTo(const Case& c, std::ostream* out)
{
    *out << c.preset << " " << precisionModeName(c.mode);
}

// One sub-16-bit recipe per preset, spread so that every recipe family is covered by some model;
// not a 4-bit one for softmax, whose only GEMM a 4-bit recipe keeps in bf16 (keep_first_last).
PrecisionMode recipeFor(const std::string& preset)
{
    static const std::map<std::string, PrecisionMode> recipes{
        {"mlp", PrecisionMode::Mxfp8},          {"wide-mlp", PrecisionMode::Fp8Delayed},
        {"deep-mlp", PrecisionMode::Fp8Hybrid}, {"deep-sigmoid", PrecisionMode::Fp8E4m3},
        {"softmax", PrecisionMode::Mxfp6},      {"cnn", PrecisionMode::Fp8Block},
        {"vgg-small", PrecisionMode::Mxfp4},    {"resnet-small", PrecisionMode::Mxfp8},
        {"vit-tiny", PrecisionMode::Fp8Block},  {"char-gpt", PrecisionMode::Nvfp4},
    };
    const auto it = recipes.find(preset);
    return it == recipes.end() ? PrecisionMode::Mxfp8 : it->second;
}

std::vector<Case> allCases()
{
    std::vector<Case> cases;
    for (const std::string& name : presetNames())
        for (PrecisionMode mode :
             {PrecisionMode::Fp32, PrecisionMode::MixedFp16, PrecisionMode::MixedBf16, recipeFor(name)})
            cases.push_back({name, mode});
    for (PrecisionMode mode : {PrecisionMode::MixedBf16, PrecisionMode::Mxfp8})
        cases.push_back({"small-conv-overrides", mode});
    return cases;
}

// The small conv model with overrides at both depths: a top-level layer and a residual body
// layer in fp32, another body layer in fp16.
RunConfig overridesConfig()
{
    RunConfig c = test_support::smallConvConfig();
    c.model.layers[0].precision = LayerPrecision::Fp32;
    c.model.layers[3].body[0].precision = LayerPrecision::Fp32;
    c.model.layers[3].body[1].precision = LayerPrecision::Fp16;
    return c;
}

// Byte windows of a fixed pseudo-random text, each label the next byte: char-gpt's data without
// reading a corpus.
Dataset tokenWindows(std::int64_t context, std::int64_t count, std::uint64_t salt, const std::string& name)
{
    Dataset d;
    d.sampleShape = Shape({context});
    d.labelShape = Shape({context});
    d.classes = 256;
    d.name = name;
    std::uint64_t state = 0x9e3779b97f4a7c15ULL ^ salt;
    const auto nextByte = [&] {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<float>(32 + (state >> 33) % 95);
    };
    for (std::int64_t s = 0; s < count; ++s) {
        std::vector<float> bytes(static_cast<std::size_t>(context + 1));
        std::generate(bytes.begin(), bytes.end(), nextByte);
        d.inputs.insert(d.inputs.end(), bytes.begin(), bytes.end() - 1);
        d.labels.insert(d.labels.end(), bytes.begin() + 1, bytes.end());
    }
    return d;
}

RunConfig configFor(const Case& c)
{
    RunConfig config = c.preset == "small-conv-overrides" ? overridesConfig() : presetConfig(c.preset);
    config.precision = c.mode;
    config.training.batchSize = kBatch;
    config.training.evalBatchSize = kBatch;
    config.training.maxSteps = kSteps;
    config.training.epochs = 1;
    config.training.threads = 1;
    config.training.cpuKernels = CpuKernels::Emulated;
    config.data.validationSplit = 0;
    if (config.data.dataset != DatasetKind::Text) {
        config.data.dataset = DatasetKind::Synthetic;
        config.data.syntheticShape = config.model.input;
        config.data.syntheticClasses = config.model.classes;
        config.data.syntheticTrain = kSteps * kBatch;
        config.data.syntheticTest = kBatch;
    }
    return config;
}

DatasetSplits dataFor(const RunConfig& config)
{
    if (config.data.dataset != DatasetKind::Text)
        return loadDatasets(config.data, config.training.seed);
    DatasetSplits splits;
    const std::int64_t context = config.model.input[0];
    splits.train = tokenWindows(context, kSteps * kBatch, 1, "tokens/train");
    splits.validation = tokenWindows(context, 0, 2, "tokens/validation");
    splits.test = tokenWindows(context, kBatch, 3, "tokens/test");
    return splits;
}

struct LossRecorder final : TrainingObserver {
    std::vector<float> losses;
    void onStep(const StepRecord& r) override { losses.push_back(r.loss); }
};

// FNV-1a over bytes.
void mix(std::uint64_t& hash, const void* data, std::size_t size)
{
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) {
        hash ^= bytes[i];
        hash *= 1099511628211ULL;
    }
}

// Every parameter's master values and every buffer, by name in name order, names included.
std::uint64_t stateChecksum(Trainer& trainer, Backend& backend)
{
    std::map<std::string, const Tensor*> tensors;
    for (Parameter* p : trainer.model().parametersInBackwardOrder())
        tensors[p->name] = &p->master;
    for (auto& [name, buffer] : trainer.model().buffers())
        tensors["buffer " + name] = buffer;
    std::uint64_t hash = 14695981039346656037ULL;
    for (const auto& [name, tensor] : tensors) {
        std::vector<float> values(static_cast<std::size_t>(tensor->numel()));
        backend.download(*tensor, values.data());
        mix(hash, name.data(), name.size());
        mix(hash, values.data(), values.size() * sizeof(float));
    }
    return hash;
}

std::string hex(std::uint64_t v, int digits)
{
    char text[32];
    std::snprintf(text, sizeof text, "%0*llx", digits, static_cast<unsigned long long>(v));
    return text;
}

// "<preset> <mode> <loss bits>... <checksum>", one line per case.
std::string trainedLine(const Case& c)
{
    const RunConfig config = configFor(c);
    const DatasetSplits data = dataFor(config);
    auto backend = makeCpuBackend(1);
    Trainer trainer(config, *backend, data);
    LossRecorder recorder;
    trainer.addObserver(&recorder);
    trainer.run();
    std::string line = c.preset + " " + precisionModeName(c.mode);
    for (float loss : recorder.losses)
        line += " " + hex(std::bit_cast<std::uint32_t>(loss), 8);
    return line + " " + hex(stateChecksum(trainer, *backend), 16);
}

constexpr std::string_view kIsaPrefix = "# isa ";

// The oneDNN ISA the golden file was recorded on ("avx512_core_bf16").
std::string goldenIsa()
{
    std::ifstream in(MANTISSA_MODEL_GRAPH_BITS);
    for (std::string line; std::getline(in, line);)
        if (line.starts_with(kIsaPrefix))
            return line.substr(kIsaPrefix.size());
    return {};
}

std::map<std::string, std::string> goldenLines()
{
    std::map<std::string, std::string> lines;
    std::ifstream in(MANTISSA_MODEL_GRAPH_BITS);
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#')
            continue;
        std::istringstream words(line);
        std::string preset, mode;
        words >> preset >> mode;
        lines[preset + " " + mode] = line;
    }
    return lines;
}

// Rewrites the golden file from this build before any test runs, when asked to.
class GoldenWriter final : public ::testing::Environment {
public:
    void SetUp() override
    {
        if (!std::getenv("MANTISSA_WRITE_MODEL_GRAPH_BITS"))
            return;
        std::ofstream out(MANTISSA_MODEL_GRAPH_BITS);
        out << "# preset mode, then the train loss of steps 1 to " << kSteps
            << " as float32 bits, then the FNV-1a checksum of every parameter and buffer with its name\n"
               "# (tests/engine/model_graph_bits_test.cpp)\n"
            << kIsaPrefix << cpu::oneDnnIsaName() << "\n";
        for (const Case& c : allCases())
            out << trainedLine(c) << "\n";
    }
};

[[maybe_unused]] ::testing::Environment* const goldenWriter = ::testing::AddGlobalTestEnvironment(new GoldenWriter);

class ModelGraphBits : public ::testing::TestWithParam<Case> {};

std::string caseName(const ::testing::TestParamInfo<Case>& info)
{
    std::string name = info.param.preset + "_" + precisionModeName(info.param.mode);
    std::replace(name.begin(), name.end(), '-', '_');
    return name;
}

} // namespace

TEST(ModelGraphBitsFile, ListsEveryCaseOnce)
{
    const std::map<std::string, std::string> golden = goldenLines();
    EXPECT_EQ(golden.size(), allCases().size())
        << "the golden file " << MANTISSA_MODEL_GRAPH_BITS << " lists other cases than the test runs";
}

TEST_P(ModelGraphBits, TrainsToTheRecordedBits)
{
    const Case& c = GetParam();
    const std::string key = c.preset + " " + precisionModeName(c.mode);
    const std::map<std::string, std::string> golden = goldenLines();
    const auto it = golden.find(key);
    ASSERT_NE(it, golden.end()) << key << " is missing from " << MANTISSA_MODEL_GRAPH_BITS;
    if (const std::string isa = goldenIsa(); isa != cpu::oneDnnIsaName())
        GTEST_SKIP() << "the golden bits were recorded on oneDNN's " << isa << " kernels and this machine runs "
                     << cpu::oneDnnIsaName() << ", whose fp32 sums run in another order";
    EXPECT_EQ(trainedLine(c), it->second);
}

INSTANTIATE_TEST_SUITE_P(Presets, ModelGraphBits, ::testing::ValuesIn(allCases()), caseName);
