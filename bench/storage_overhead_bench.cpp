// What recording every step costs training: trains `mlp` (784-1024-1024-10, batch 128) on
// synthetic data for N steps without and with a RunWriter attached, alternating the two
// several times so that drift in the machine's speed (other jobs, turbo, thermal) hits
// both alike, and prints samples/s of each and the slowdown. Target: < 2%.
//
// The time is the wall time of Trainer::run() plus the writer's final commit, not the
// trainer's own samples/s: the trainer times its steps only, and the observers (where
// the writer's cost lies) run outside that timer. The process's CPU time (user + system)
// over the same span is printed too: on a machine shared with other jobs it shows the
// writer's cost with less noise than the wall clock. Last, the time spent inside the
// writer's callbacks is measured directly: the share of the run that recording takes,
// free of the noise between runs.
//
//   storage_overhead_bench [--steps N] [--rounds R] [--threads T] [--precision MODE] [--model NAME]
#include "engine/backend/backend.h"
#include "engine/config/presets.h"
#include "engine/train/trainer.h"
#include "storage/run_store.h"
#include "storage/run_writer.h"

#include <QCoreApplication>
#include <QDir>
#include <QTemporaryDir>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

// What a run that reports nothing but its end gives the writer, which fills in the rest.
RunSummary finishedRun()
{
    RunSummary summary;
    summary.status = RunStatus::Finished;
    return summary;
}

struct Options {
    std::int64_t steps = 200;
    int rounds = 4;
    int threads = 0;
    std::string precision = "fp32";
    std::string model = "mlp";
};

struct Measurement {
    double samplesPerSecond = 0;
    double seconds = 0, cpuSeconds = 0;
    double writerSeconds = 0; // inside the writer's callbacks and its final commit
    qint64 committedSteps = 0, commits = 0;
};

// Forwards to the writer and adds up the time its callbacks take on the training thread.
class TimedObserver final : public TrainingObserver {
public:
    explicit TimedObserver(TrainingObserver& inner) : m_inner(inner) {}
    void onStep(const StepRecord& r) override
    {
        timed([&] { m_inner.onStep(r); });
    }
    void onEpoch(const EpochRecord& r) override
    {
        timed([&] { m_inner.onEpoch(r); });
    }
    void onEvent(const EventRecord& r) override
    {
        timed([&] { m_inner.onEvent(r); });
    }
    template <typename F>
    void timed(F&& call)
    {
        const auto start = std::chrono::steady_clock::now();
        call();
        m_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    double seconds() const { return m_seconds; }

private:
    TrainingObserver& m_inner;
    double m_seconds = 0;
};

double processCpuSeconds()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    auto seconds = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

RunConfig benchConfig(const Options& options)
{
    RunConfig config = presetConfig(options.model);
    config.precision = *parsePrecisionMode(options.precision);
    config.data.dataset = DatasetKind::Synthetic;
    config.data.syntheticShape = config.model.input;
    config.data.syntheticClasses = config.model.classes;
    config.data.syntheticTrain = config.training.batchSize * options.steps;
    // One small evaluation at the end of the epoch, the same in both arms.
    config.data.syntheticTest = config.training.batchSize;
    config.training.epochs = 1;
    config.training.maxSteps = options.steps;
    config.training.threads = options.threads;
    return config;
}

// One run; with `database` set, every step, epoch and event goes through a RunWriter.
Measurement measure(const RunConfig& config, Backend& backend, const DatasetSplits& data,
                    const std::optional<QString>& database)
{
    Trainer trainer(config, backend, data);
    std::optional<storage::RunWriter> writer;
    std::optional<TimedObserver> timing;
    if (database) {
        storage::RunStore store(*database);
        storage::NewRun run;
        run.configJson = QString::fromStdString(runConfigToJson(config));
        run.preset = QString::fromStdString(config.name);
        run.precision = QString::fromStdString(precisionModeName(config.precision));
        writer.emplace(*database, store.createRun(run));
        timing.emplace(*writer);
        trainer.addObserver(&*timing);
    }
    const auto start = std::chrono::steady_clock::now();
    const double cpuStart = processCpuSeconds();
    const RunSummary summary = trainer.run();
    if (writer)
        timing->timed([&] { writer->finish(finishedRun()); });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double cpuSeconds = processCpuSeconds() - cpuStart;
    if (writer && writer->failed()) {
        std::fprintf(stderr, "the writer failed: %s\n", qPrintable(writer->errorMessage()));
        std::exit(1);
    }
    Measurement m;
    m.samplesPerSecond = double(summary.steps * config.training.batchSize) / seconds;
    m.seconds = seconds;
    m.cpuSeconds = cpuSeconds;
    if (writer) {
        m.committedSteps = writer->committedSteps();
        m.commits = writer->commitCount();
        m.writerSeconds = timing->seconds();
    }
    return m;
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
        else if (flag == "--threads")
            options.threads = std::atoi(value);
        else if (flag == "--precision")
            options.precision = value;
        else if (flag == "--model")
            options.model = value;
        else
            return false;
    }
    return (argc % 2) == 1 && options.steps > 0 && options.rounds > 0 && parsePrecisionMode(options.precision);
}

} // namespace

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    Options options;
    if (!parseOptions(argc, argv, options)) {
        std::fprintf(stderr, "usage: storage_overhead_bench [--steps N] [--rounds R] [--threads T] "
                             "[--precision MODE] [--model NAME]\n");
        return 2;
    }
    QTemporaryDir directory;
    const QString database = QDir(directory.path()).filePath(QStringLiteral("overhead.sqlite"));
    try {
        const RunConfig config = benchConfig(options);
        auto backend = makeCpuBackend(options.threads);
        const DatasetSplits data = loadDatasets(config.data, config.training.seed);
        std::printf("%s, %s, batch %lld, %lld steps per run, %d rounds; %s\n", options.model.c_str(),
                    options.precision.c_str(), static_cast<long long>(config.training.batchSize),
                    static_cast<long long>(options.steps), options.rounds, backend->name().c_str());
        // Warm-up: fills the allocator's pool, pages in the weights, creates oneDNN's primitives and starts the OpenMP team.
        measure(config, *backend, data, std::nullopt);

        std::vector<double> without, with, ratios, cpuRatios;
        qint64 commits = 0, rows = 0;
        double writerSeconds = 0, recordedSeconds = 0;
        std::printf(
            "| round | without writer (samples/s) | with writer (samples/s) | difference | CPU time difference |\n");
        std::printf("| --- | --- | --- | --- | --- |\n");
        for (int round = 1; round <= options.rounds; ++round) {
            // Alternate which arm goes first, so neither always runs on a warmer machine.
            const bool writerFirst = round % 2 == 0;
            Measurement a = measure(config, *backend, data, writerFirst ? std::optional(database) : std::nullopt);
            Measurement b = measure(config, *backend, data, writerFirst ? std::nullopt : std::optional(database));
            const Measurement& plain = writerFirst ? b : a;
            const Measurement& recorded = writerFirst ? a : b;
            without.push_back(plain.samplesPerSecond);
            with.push_back(recorded.samplesPerSecond);
            ratios.push_back(recorded.samplesPerSecond / plain.samplesPerSecond);
            cpuRatios.push_back(recorded.cpuSeconds / plain.cpuSeconds);
            commits += recorded.commits;
            rows += recorded.committedSteps;
            writerSeconds += recorded.writerSeconds;
            recordedSeconds += recorded.seconds;
            std::printf("| %d | %.0f | %.0f | %+.2f%% | %+.2f%% |\n", round, plain.samplesPerSecond,
                        recorded.samplesPerSecond, (ratios.back() - 1.0) * 100.0, (cpuRatios.back() - 1.0) * 100.0);
            std::fflush(stdout);
        }
        const double plainMedian = median(without), recordedMedian = median(with);
        std::printf("\nmedian without writer: %.0f samples/s\nmedian with writer:    %.0f samples/s\n", plainMedian,
                    recordedMedian);
        // The slowdown comes from the rounds' paired ratios: a machine shared with other jobs
        // can change speed between rounds far more than the writer costs within one.
        std::printf("slowdown: %.2f%% in samples/s, %.2f%% in CPU time (medians over rounds of each round's "
                    "pair; target < 2%%)\n%lld step rows written in %lld commits\n",
                    (1.0 - median(ratios)) * 100.0, (median(cpuRatios) - 1.0) * 100.0, static_cast<long long>(rows),
                    static_cast<long long>(commits));
        std::printf("time inside the writer: %.1f ms of %.1f s of recorded training = %.3f%%\n", writerSeconds * 1e3,
                    recordedSeconds, writerSeconds / recordedSeconds * 100.0);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "%s\n", error.what());
        return 1;
    }
    return 0;
}
