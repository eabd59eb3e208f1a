// Training throughput of the reference workloads on the CPU, per precision mode, printed
// as a table. Synthetic 28x28 data keeps the figures independent of disk and decoding; the
// timed region is the Trainer's training steps only (its samples/s excludes evaluation).
//
//   engine_throughput [--steps N] [--warmup N] [--threads N] [--models mlp,cnn] [--modes fp32,mixed-fp16]
#include "engine/backend/backend.h"
#include "engine/config/presets.h"
#include "engine/train/trainer.h"

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

double measure(const std::string& preset, PrecisionMode mode, int threads, std::int64_t warmup, std::int64_t steps,
               std::size_t& peakBytes)
{
    RunConfig config = presetConfig(preset);
    config.precision = mode;
    config.data.dataset = "synthetic";
    config.data.syntheticShape = config.model.input;
    config.data.syntheticClasses = config.model.classes;
    config.data.syntheticTrain = config.training.batchSize * (warmup + steps);
    config.data.syntheticTest = config.training.batchSize;
    config.training.threads = threads;
    config.training.epochs = 1;
    auto backend = makeCpuBackend(threads);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    // Warm-up run: fills the allocator's pool, pages in the weights, lets OpenBLAS spin up.
    config.training.maxSteps = warmup;
    Trainer(config, *backend, data).run();
    config.training.maxSteps = steps;
    Trainer trainer(config, *backend, data);
    const RunSummary summary = trainer.run();
    peakBytes = summary.peakBytes;
    return summary.samplesPerSecond;
}

} // namespace

int main(int argc, char** argv)
{
    std::int64_t steps = 60, warmup = 10;
    int threads = 0;
    std::vector<std::string> models{"mlp", "cnn"};
    std::vector<std::string> modes{"fp32", "mixed-fp16"};
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        const std::string value = argv[i + 1];
        if (flag == "--steps") steps = std::atoll(value.c_str());
        else if (flag == "--warmup") warmup = std::atoll(value.c_str());
        else if (flag == "--threads") threads = std::atoi(value.c_str());
        else if (flag == "--models") models = splitList(value);
        else if (flag == "--modes") modes = splitList(value);
        else {
            std::fprintf(stderr, "unknown option %s\n", flag.c_str());
            return 2;
        }
    }
    auto probe = makeCpuBackend(threads);
    std::printf("backend: %s; %lld timed steps after %lld warm-up steps\n\n", probe->name().c_str(),
                static_cast<long long>(steps), static_cast<long long>(warmup));
    std::printf("| model | batch | precision | samples/s | time vs fp32 | peak memory (MiB) |\n");
    std::printf("| --- | --- | --- | --- | --- | --- |\n");
    for (const auto& model : models) {
        double fp32Rate = 0;
        for (const auto& modeName : modes) {
            const auto mode = parsePrecisionMode(modeName);
            if (!mode) {
                std::fprintf(stderr, "unknown precision %s\n", modeName.c_str());
                return 2;
            }
            std::size_t peak = 0;
            const double rate = measure(model, *mode, threads, warmup, steps, peak);
            if (*mode == PrecisionMode::Fp32)
                fp32Rate = rate;
            const std::string ratio = fp32Rate > 0 ? std::to_string(fp32Rate / rate).substr(0, 4) + "x" : "-";
            std::printf("| %s | %lld | %s | %.0f | %s | %.1f |\n", model.c_str(),
                        static_cast<long long>(presetConfig(model).training.batchSize), modeName.c_str(), rate,
                        ratio.c_str(), static_cast<double>(peak) / (1024.0 * 1024.0));
            std::fflush(stdout);
        }
    }
    return 0;
}
