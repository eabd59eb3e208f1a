// What the numerics lens costs training: trains `mlp` (784-1024-1024-10, batch 128) on
// synthetic data for N steps with statistics off and every 100 steps, alternating the two
// several times so that drift in the machine's speed hits both alike, and prints the
// median samples/s of each and the slowdown. Target: at most 5% slower. The statistics
// are computed on the training thread inside the step (the trainer's own timer), and
// the observer that receives them does nothing, so this is the engine's cost alone.
//
// With --track shadow, the same for the shadow error track (numerics.shadow_every: an fp32
// forward and backward beside the step and a comparison of every layer's tensors), every 10
// steps by default. Target: at most 20% slower. A text preset (char-gpt) trains on its own
// corpus, the others on synthetic data of their shape.
//
//   numerics_overhead_bench [--track lens|shadow] [--steps N] [--rounds R] [--every K] [--threads T]
//                           [--precision MODE] [--model NAME]
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
    bool shadow = false; // --track shadow
    std::int64_t steps = 300;
    int rounds = 4;
    int every = 0; // 0: the track's default, 100 for the lens and 10 for the shadow
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
    void onShadow(const ShadowRecord& r) override
    {
        ++records;
        tensors += static_cast<std::int64_t>(r.errors.size());
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
    if (config.data.dataset != DatasetKind::Text) {
        config.data.dataset = DatasetKind::Synthetic;
        config.data.syntheticShape = config.model.input;
        config.data.syntheticClasses = config.model.classes;
        config.data.syntheticTrain = config.training.batchSize * options.steps;
        config.data.syntheticTest = config.training.batchSize;
    }
    config.training.epochs = 1;
    config.training.maxSteps = options.steps;
    config.training.threads = options.threads;
    (options.shadow ? config.numerics.shadowEvery : config.numerics.every) = every;
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
        if (flag == "--track" && (std::string(value) == "lens" || std::string(value) == "shadow"))
            options.shadow = std::string(value) == "shadow";
        else if (flag == "--steps")
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
    if (options.every == 0)
        options.every = options.shadow ? 10 : 100;
    return (argc % 2) == 1 && options.steps > 0 && options.rounds > 0 && options.every >= 1 && options.every <= 1000 &&
           parsePrecisionMode(options.precision);
}

} // namespace

int main(int argc, char** argv)
{
    Options options;
    if (!parseOptions(argc, argv, options)) {
        std::fprintf(stderr,
                     "usage: numerics_overhead_bench [--track lens|shadow] [--steps N] [--rounds R] [--every K] "
                     "[--threads T] [--precision MODE] [--model NAME]\n");
        return 2;
    }
    try {
        const RunConfig off = benchConfig(options, 0);
        const RunConfig on = benchConfig(options, options.every);
        auto backend = makeCpuBackend(options.threads);
        const DatasetSplits data = loadDatasets(off.data, off.training.seed);
        const char* what = options.shadow ? "shadow" : "statistics";
        const double target = options.shadow ? 20 : 5;
        std::printf("%s, %s, %s, %lld steps of batch %lld, %d rounds, %s\n", what, options.model.c_str(),
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
            std::printf("round %d: off %.0f samples/s, every %d: %.0f samples/s (%+.1f%% time)\n", round + 1,
                        rateOff.back(), options.every, rateOn.back(), 100.0 * (rateOff.back() / rateOn.back() - 1.0));
        }
        const double medianOff = median(rateOff), medianOn = median(rateOn);
        std::vector<double> slowdowns;
        for (std::size_t i = 0; i < rateOff.size(); ++i)
            slowdowns.push_back(100.0 * (rateOff[i] / rateOn[i] - 1.0));
        std::printf("%s off:       %.0f samples/s (median)\n", what, medianOff);
        std::printf("%s every %d: %.0f samples/s (median; %lld records, %lld tensors)\n", what, options.every, medianOn,
                    static_cast<long long>(counter.records), static_cast<long long>(counter.tensors));
        std::printf("slowdown: %.2f%% of medians, per round %.1f%% to %.1f%% (target <= %.0f%%)\n",
                    100.0 * (medianOff / medianOn - 1.0), *std::min_element(slowdowns.begin(), slowdowns.end()),
                    *std::max_element(slowdowns.begin(), slowdowns.end()), target);
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
