// Training throughput of the reference workloads, per precision mode, printed as a table.
// Synthetic 28x28 data keeps the figures independent of disk and decoding; the timed region
// is the Trainer's training steps only (its samples/s excludes evaluation). The device is
// chosen as a run chooses it (training.device through selectBackend); the CPU by default.
//
//   engine_throughput [--device auto|cpu|cuda[:N]] [--steps N] [--warmup N] [--threads N]
//                     [--models mlp,cnn] [--modes fp32,mixed-fp16] [--graphs auto|on|off]
//
// --graphs is training.graphs: auto (the default, as in a run) captures the step after its
// first run and replays it as a CUDA graph on a GPU and runs op by op on the CPU; on also
// records an op tape on the CPU. The last column says how the timed steps ran.
//
// Achieved TFLOP/s counts a training step as three forward passes (the forward, and a
// backward that computes both the input and the weight gradients, each as costly as the
// forward), from the model's forward FLOPs per sample (Layer::flopsPerSample: a multiply-add
// is two FLOPs). Peak memory is Backend::peakBytes over the timed run.
#include "engine/backend/backend.h"
#include "engine/backend/backend_factory.h"
#include "engine/config/presets.h"
#include "engine/model/model_validation.h"
#include "engine/train/trainer.h"
#include "engine/util/check.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

std::vector<std::string> splitList(const std::string& text)
{
    std::vector<std::string> out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');)
        if (!item.empty())
            out.push_back(item);
    return out;
}

struct Measured {
    double samplesPerSecond = 0;
    std::size_t peakBytes = 0;
    std::string stepMode;     // "graph" or "op by op (why)"
    std::int64_t skipped = 0; // overflow steps: each is located by running its passes again
};

Measured measure(Backend& backend, const std::string& device, const std::string& preset, PrecisionMode mode,
                 int threads, AutoSwitch graphs, std::int64_t warmup, std::int64_t steps)
{
    RunConfig config = presetConfig(preset);
    config.precision = mode;
    config.data.dataset = DatasetKind::Synthetic;
    config.data.syntheticShape = config.model.input;
    config.data.syntheticClasses = config.model.classes;
    config.data.syntheticTrain = config.training.batchSize * (warmup + steps);
    config.data.syntheticTest = config.training.batchSize;
    config.training.threads = threads;
    config.training.device = device;
    config.training.epochs = 1;
    config.training.graphs = graphs;
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    // Warm-up run: fills the allocator's pool, pages in the weights, lets OpenBLAS spin up
    // (on a GPU: loads the kernels and lets cuBLAS and cuDNN pick their algorithms).
    config.training.maxSteps = warmup;
    Trainer(config, backend, data).run();
    config.training.maxSteps = steps;
    Trainer trainer(config, backend, data);
    const RunSummary summary = trainer.run();
    Measured m{summary.samplesPerSecond, summary.peakBytes, "graph", summary.skippedSteps};
    if (trainer.graphSteps() == 0)
        m.stepMode = "op by op (" + trainer.graphStatus() + ")";
    return m;
}

} // namespace

int main(int argc, char** argv)
{
    std::int64_t steps = 60, warmup = 10;
    int threads = 0;
    std::string device = "cpu";
    AutoSwitch graphs = AutoSwitch::Auto;
    std::vector<std::string> models{"mlp", "cnn"};
    std::vector<std::string> modes{"fp32", "mixed-fp16"};
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        const std::string value = argv[i + 1];
        if (flag == "--device")
            device = value;
        else if (flag == "--steps")
            steps = std::atoll(value.c_str());
        else if (flag == "--warmup")
            warmup = std::atoll(value.c_str());
        else if (flag == "--threads")
            threads = std::atoi(value.c_str());
        else if (flag == "--models")
            models = splitList(value);
        else if (flag == "--modes")
            modes = splitList(value);
        else if (flag == "--graphs" && parseEnum<AutoSwitch>(value))
            graphs = *parseEnum<AutoSwitch>(value);
        else {
            std::fprintf(stderr, "unknown option %s %s\n", flag.c_str(), value.c_str());
            return 2;
        }
    }
    BackendSelection selection;
    try {
        selection = selectBackend(device, threads);
    } catch (const Error& e) {
        std::fprintf(stderr, "engine_throughput: %s\n", e.what());
        return 1;
    }
    Backend& backend = *selection.backend;
    std::printf("backend: %s; %lld timed steps after %lld warm-up steps\n", backend.name().c_str(),
                static_cast<long long>(steps), static_cast<long long>(warmup));
    std::printf("device: %s (requested %s)\n\n", selection.reason.c_str(), device.c_str());
    // New columns go at the end, so that readers of the first six keep working.
    std::printf(
        "| model | batch | precision | samples/s | time vs fp32 | peak memory (MiB) | TFLOP/s | step | skipped |\n");
    std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (const auto& model : models) {
        double fp32Rate = 0;
        for (const auto& modeName : modes) {
            const auto mode = parsePrecisionMode(modeName);
            if (!mode) {
                std::fprintf(stderr, "unknown precision %s\n", modeName.c_str());
                return 2;
            }
            const Measured m = measure(backend, device, model, *mode, threads, graphs, warmup, steps);
            const double rate = m.samplesPerSecond;
            const double forwardFlops =
                static_cast<double>(validateModel(presetConfig(model).model).totalFlopsPerSample);
            if (*mode == PrecisionMode::Fp32)
                fp32Rate = rate;
            const std::string ratio = fp32Rate > 0 ? std::to_string(fp32Rate / rate).substr(0, 4) + "x" : "-";
            std::printf("| %s | %lld | %s | %.0f | %s | %.1f | %.3f | %s | %lld |\n", model.c_str(),
                        static_cast<long long>(presetConfig(model).training.batchSize), modeName.c_str(), rate,
                        ratio.c_str(), static_cast<double>(m.peakBytes) / (1024.0 * 1024.0),
                        3.0 * forwardFlops * rate * 1e-12, m.stepMode.c_str(), static_cast<long long>(m.skipped));
            std::fflush(stdout);
        }
    }
    return 0;
}
