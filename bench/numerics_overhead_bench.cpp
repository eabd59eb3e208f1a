// What the numerics lens costs training: trains `mlp` (784-1024-1024-10, batch 128) on
// synthetic data for N steps with statistics off and every 100 steps, alternating the two
// several times so that drift in the machine's speed hits both alike, and prints the
// median samples/s of each and the slowdown. Target: at most 5% slower. The statistics
// are computed on the training thread inside the step (the trainer's own timer), and
// the observer that receives them does nothing, so this is the engine's cost alone.
//
//   numerics_overhead_bench [--steps N] [--rounds R] [--every K] [--threads T] [--precision MODE] [--model NAME]
#include "engine/backend/backend.h"
#include "engine/config/presets.h"
#include "engine/train/trainer.h"
#include "engine/util/check.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

struct Options {
    std::int64_t steps = 300;
    int rounds = 4;
    int every = 100;
    int threads = 0;
    std::string precision = "mixed-fp16";
    std::string model = "mlp";
};

// Counts the records and times every step (the trainer's own per-step clock): the extra
// time of sampled steps over the median unsampled step is the lens's cost, measured
// inside one run and so free of the drift between runs on a shared machine.
struct Counter final : TrainingObserver {
    std::int64_t records = 0, tensors = 0;
    std::vector<double> plainSeconds, sampledSeconds;
    std::int64_t batch = 128;
    int every = 0;
    void onStep(const StepRecord& r) override
    {
        const double seconds = double(batch) / double(r.samplesPerSecond);
        (every > 0 && r.step % every == 0 ? sampledSeconds : plainSeconds).push_back(seconds);
    }
    void onNumerics(const NumericsRecord& r) override
    {
        ++records;
        tensors += static_cast<std::int64_t>(r.tensors.size());
    }
};

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

RunConfig benchConfig(const Options& options, int every)
{
    RunConfig config = presetConfig(options.model);
    config.precision = *parsePrecisionMode(options.precision);
    config.data.dataset = DatasetKind::Synthetic;
    config.data.syntheticShape = config.model.input;
    config.data.syntheticClasses = config.model.classes;
    config.data.syntheticTrain = config.training.batchSize * options.steps;
    config.data.syntheticTest = config.training.batchSize;
    config.training.epochs = 1;
    config.training.maxSteps = options.steps;
    config.training.threads = options.threads;
    config.numerics.every = every;
    return config;
}

// Wall time of Trainer::run(), as samples/s of training.
double measure(const RunConfig& config, Backend& backend, const DatasetSplits& data, Counter& counter)
{
    Trainer trainer(config, backend, data);
    trainer.addObserver(&counter);
    const auto start = std::chrono::steady_clock::now();
    const RunSummary summary = trainer.run();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return double(summary.steps * config.training.batchSize) / seconds;
}

bool parseOptions(int argc, char** argv, Options& options)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        const char* value = argv[i + 1];
        if (flag == "--steps")
            options.steps = std::atoll(value);
        else if (flag == "--rounds")
            options.rounds = std::atoi(value);
        else if (flag == "--every")
            options.every = std::atoi(value);
        else if (flag == "--threads")
            options.threads = std::atoi(value);
        else if (flag == "--precision")
            options.precision = value;
        else if (flag == "--model")
            options.model = value;
        else
            return false;
    }
    return (argc % 2) == 1 && options.steps > 0 && options.rounds > 0 && options.every >= 1 && options.every <= 1000 &&
           parsePrecisionMode(options.precision);
}

} // namespace

int main(int argc, char** argv)
{
    Options options;
    if (!parseOptions(argc, argv, options)) {
        std::fprintf(stderr, "usage: numerics_overhead_bench [--steps N] [--rounds R] [--every K] [--threads T] "
                             "[--precision MODE] [--model NAME]\n");
        return 2;
    }
    try {
        const RunConfig off = benchConfig(options, 0);
        const RunConfig on = benchConfig(options, options.every);
        auto backend = makeCpuBackend(options.threads);
        const DatasetSplits data = loadDatasets(off.data, off.training.seed);
        std::printf("%s, %s, %lld steps of batch %lld, %d rounds, %s\n", options.model.c_str(),
                    options.precision.c_str(), static_cast<long long>(options.steps),
                    static_cast<long long>(off.training.batchSize), options.rounds, backend->name().c_str());
        Counter warmup;
        measure(off, *backend, data, warmup); // first-touch allocations and caches
        std::vector<double> rateOff, rateOn;
        Counter counter;
        counter.batch = on.training.batchSize;
        counter.every = options.every;
        for (int round = 0; round < options.rounds; ++round) {
            // Alternate which arm goes first, so neither always follows the other.
            Counter ignored;
            const bool offFirst = round % 2 == 0;
            const double a = measure(offFirst ? off : on, *backend, data, offFirst ? ignored : counter);
            const double b = measure(offFirst ? on : off, *backend, data, offFirst ? counter : ignored);
            rateOff.push_back(offFirst ? a : b);
            rateOn.push_back(offFirst ? b : a);
            std::printf("round %d: off %.0f samples/s, every %d: %.0f samples/s\n", round + 1, rateOff.back(),
                        options.every, rateOn.back());
        }
        const double medianOff = median(rateOff), medianOn = median(rateOn);
        std::printf("statistics off:       %.0f samples/s (median)\n", medianOff);
        std::printf("statistics every %d: %.0f samples/s (median; %lld records, %lld tensors)\n", options.every,
                    medianOn, static_cast<long long>(counter.records), static_cast<long long>(counter.tensors));
        std::printf("slowdown: %.2f%% (target <= 5%%)\n", 100.0 * (medianOff / medianOn - 1.0));
        const double plainStep = median(counter.plainSeconds);
        double extra = 0;
        for (double s : counter.sampledSeconds)
            extra += s - plainStep;
        const double perRun = extra / double(options.rounds);
        const double runSeconds = plainStep * double(options.steps);
        std::printf("within runs: a sampled step takes %.1f ms more than the median step (%.1f ms); "
                    "every %d steps that is %.2f%% of training time\n",
                    1e3 * extra / double(std::max<std::size_t>(1, counter.sampledSeconds.size())), 1e3 * plainStep,
                    options.every, 100.0 * perRun / runSeconds);
    } catch (const Error& e) {
        std::fprintf(stderr, "numerics_overhead_bench: %s\n", e.what());
        return 2;
    }
    return 0;
}
