#include "synthetic_runs.h"

#include "engine/config/presets.h"
#include "storage/run_writer.h"

#include <QFile>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace mantissa::report::test {

namespace {

using namespace mantissa::storage;

constexpr int kBatch = 128;
constexpr float kInitialScale = 65536;
constexpr qint64 kGrowthInterval = 100;

bool isMixed(const SyntheticRun& run) { return run.precision == QLatin1String("mixed-fp16"); }

// A deterministic value in [-1, 1] for (salt, n): noise that every test can recompute.
double noise(std::uint64_t salt, std::uint64_t n)
{
    std::uint64_t x = ((n + 1) * 0x9E3779B97F4A7C15ull) ^ (salt * 0xBF58476D1CE4E5B9ull);
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    return double(x % 20001) / 10000.0 - 1.0;
}

std::uint64_t salt(const SyntheticRun& run) { return (isMixed(run) ? 2 : 1) + (run.seed == 42 ? 0 : 7 * run.seed); }

QString configJson(const SyntheticRun& run)
{
    RunConfig config = presetConfig(run.text ? "char-gpt" : "mlp");
    config.precision = *parsePrecisionMode(run.precision.toStdString());
    config.training.epochs = run.epochs;
    config.data.limitTrain = std::int64_t(run.stepsPerEpoch) * kBatch;
    config.lossScale.growthInterval = kGrowthInterval;
    config.training.seed = run.seed;
    if (run.worldSize > 1)
        config.distributed.worldSize = run.worldSize;
    if (run.allReduceInCompute)
        config.distributed.allReduceType = AllReduceType::Compute;
    return QString::fromStdString(runConfigToJson(config));
}

} // namespace

float syntheticTestAccuracy(const SyntheticRun& run, int epoch)
{
    static const float fp32[] = {0.8421f, 0.8613f, 0.8742f, 0.8807f, 0.8853f};
    static const float mixed[] = {0.8396f, 0.8620f, 0.8718f, 0.8791f, 0.8840f};
    const int i = std::clamp(epoch, 1, 5) - 1;
    const float seedOffset = run.seed == 42 ? 0.0f : float(0.004 * noise(run.seed + 100, std::uint64_t(i)));
    return (isMixed(run) ? mixed[i] : fp32[i]) + seedOffset;
}

AllReduceLoss syntheticAllReduceLoss(const SyntheticRun& run, qint64 step)
{
    return {step % 10 == 0 ? 100 + step : 0, isSyntheticOverflow(run, step) ? 1 : 0};
}

bool isSyntheticOverflow(const SyntheticRun& run, qint64 step)
{
    if (!isMixed(run))
        return false;
    // 2^16 is too high for this model's first gradients: three backoffs to 2^13. The scale
    // then grows after kGrowthInterval good steps (103) and overflows 7 steps later (110),
    // and so on every kGrowthInterval + 7 steps.
    constexpr qint64 kFirstAfterGrowth = 3 + kGrowthInterval + 7;
    return step <= 3 || (step >= kFirstAfterGrowth && (step - kFirstAfterGrowth) % (kGrowthInterval + 7) == 0);
}

qint64 writeSyntheticRun(const QString& databasePath, const SyntheticRun& run)
{
    qint64 id = 0;
    {
        RunStore store(databasePath);
        NewRun created;
        created.name = run.name;
        created.configJson = configJson(run);
        created.preset = run.text ? QStringLiteral("char-gpt") : QStringLiteral("mlp");
        created.precision = run.precision;
        created.device = run.device;
        created.notes = run.notes;
        created.kernels = run.kernels;
        created.groupId = run.groupId;
        created.worldSize = run.worldSize;
        created.dataFingerprint = run.dataFingerprint;
        id = store.createRun(created);
    }
    RunWriter writer(databasePath, id);
    const qint64 total = qint64(run.epochs) * run.stepsPerEpoch;
    const qint64 written = run.stepsWritten >= 0 ? run.stepsWritten : total;
    float scale = isMixed(run) ? kInitialScale : 1.0f;
    qint64 goodSteps = 0;
    double elapsed = 0;
    double epochLoss = 0;
    for (qint64 step = 1; step <= written; ++step) {
        StepRecord s;
        s.step = step;
        s.epoch = int((step - 1) / run.stepsPerEpoch + 1);
        const double t = double(step);
        s.loss = float(0.30 + 1.95 * std::exp(-t / 45.0) +
                       0.07 * noise(salt(run), std::uint64_t(step)) * (0.5 + std::exp(-t / 200.0)));
        s.learningRate = 0.05f;
        s.lossScale = scale;
        s.skipped = isSyntheticOverflow(run, step);
        s.gradNorm = s.skipped ? std::nanf("") : float(0.6 + 1.4 * std::exp(-t / 150.0));
        s.samplesPerSecond = float(run.samplesPerSecond * (1.0 + 0.04 * noise(salt(run) + 10, std::uint64_t(step))));
        elapsed += kBatch / double(s.samplesPerSecond);
        s.elapsedSeconds = elapsed;
        if (run.allReduceInCompute) {
            const AllReduceLoss lost = syntheticAllReduceLoss(run, step);
            s.allReduceFlushed = lost.flushed;
            s.allReduceOverflowed = lost.overflowed;
        }
        writer.onStep(s);
        if (run.shadowEvery > 0 && step % run.shadowEvery == 0)
            writer.onShadow(syntheticShadow(run, step));
        epochLoss += s.loss;
        if (isMixed(run)) {
            const float before = scale;
            if (s.skipped) {
                scale /= 2;
                goodSteps = 0;
                EventRecord overflow;
                overflow.kind = EventKind::Overflow;
                overflow.step = step;
                overflow.scaleBefore = before;
                overflow.scaleAfter = scale;
                overflow.parameter = step % 3 == 0 ? "2.linear.weight" : "3.linear.weight";
                if (run.worldSize > 1)
                    overflow.firstRank = int(step % run.worldSize);
                writer.onEvent(overflow);
            } else if (++goodSteps == kGrowthInterval) {
                scale *= 2;
                goodSteps = 0;
            }
            if (scale != before) { // as the trainer does: every move of the scale is an event
                EventRecord change;
                change.kind = EventKind::ScaleChange;
                change.step = step;
                change.scaleBefore = before;
                change.scaleAfter = scale;
                writer.onEvent(change);
            }
        }
        if (step % run.stepsPerEpoch == 0) {
            const int epoch = s.epoch;
            EpochRecord e;
            e.epoch = epoch;
            e.trainLoss = float(epochLoss / run.stepsPerEpoch);
            e.trainAccuracy = syntheticTestAccuracy(run, epoch) + 0.012f;
            e.testAccuracy = syntheticTestAccuracy(run, epoch);
            e.testLoss = float(0.33 + 0.25 / epoch);
            e.wallSeconds = elapsed + 0.4 * epoch;
            if (run.validation) {
                e.validationLoss = e.testLoss + 0.02f;
                e.validationAccuracy = e.testAccuracy - 0.005f;
            }
            writer.onEpoch(e);
            epochLoss = 0;
        }
    }
    if (written < total)
        return id;     // the writer's destructor marks the run interrupted
    RunSummary finish; // the step and evaluation figures come from the rows written
    finish.status = RunStatus::Finished;
    finish.wallSeconds = elapsed + 0.4 * run.epochs;
    if (run.peakMemoryBytes > 0)
        finish.peakBytes = std::size_t(run.peakMemoryBytes);
    for (int r = 0; r < run.worldSize && run.worldSize > 1; ++r)
        finish.ranks.push_back({r, elapsed, run.samplesPerSecond / run.worldSize / (1 + r / 10.0), 0.2 * elapsed});
    writer.finish(finish);
    return id;
}

ShadowRecord syntheticShadow(const SyntheticRun& run, qint64 step)
{
    ShadowRecord record;
    record.step = step;
    for (int layer = 1; layer <= 3; ++layer) {
        const std::string name = std::to_string(layer) + ".linear";
        for (ShadowTensor kind : {ShadowTensor::Output, ShadowTensor::WeightGrad}) {
            ShadowError e;
            e.layer = name;
            e.kind = kind;
            e.tensor = kind == ShadowTensor::Output ? name : name + ".weight";
            e.energies.count = 1000;
            e.energies.reference = 1000;
            e.energies.compared = 1000;
            e.energies.error = 1e-4 * layer * layer * 1000 / double(step); // relative error 1e-2 layer / sqrt(step)
            e.energies.dot = 1000 - e.energies.error / 2;
            if (layer == 3 && kind == ShadowTensor::Output && step == 2 * run.shadowEvery)
                e.energies.nonFinite = 1;
            record.errors.push_back(e);
        }
    }
    return record;
}

SampleDatabase writeSampleDatabase(const QString& path)
{
    SampleDatabase sample;
    sample.path = path;
    {
        RunStore store(path);
        sample.group = store.createGroup(QStringLiteral("mlp: fp32 vs mixed-fp16"));
    }
    const QString notes = QStringLiteral("Synthetic run written by the report tests; not a measurement.");
    sample.fp32Spec.name = QStringLiteral("mlp-fp32-1");
    sample.fp32Spec.peakMemoryBytes = 412ll * 1024 * 1024;
    sample.fp32Spec.notes = notes;
    sample.fp32Spec.groupId = sample.group;
    sample.mixedSpec = sample.fp32Spec;
    sample.mixedSpec.name = QStringLiteral("mlp-mixed-fp16-2");
    sample.mixedSpec.precision = QStringLiteral("mixed-fp16");
    sample.mixedSpec.samplesPerSecond = 17100;
    sample.mixedSpec.peakMemoryBytes = 236ll * 1024 * 1024;
    sample.interruptedSpec = sample.mixedSpec;
    sample.interruptedSpec.name = QStringLiteral("mlp-mixed-fp16-3");
    sample.interruptedSpec.groupId.reset();
    sample.interruptedSpec.stepsWritten = 180;
    sample.interruptedSpec.device =
        QStringLiteral("cuda: NVIDIA H100 80GB HBM3, driver 550.54.15, CUDA 12.4, cuDNN 9.1.0");
    sample.fp32 = writeSyntheticRun(path, sample.fp32Spec);
    sample.mixed = writeSyntheticRun(path, sample.mixedSpec);
    sample.interrupted = writeSyntheticRun(path, sample.interruptedSpec);
    return sample;
}

QList<SyntheticRun> writeSeededRuns(const QString& databasePath, QList<qint64>& ids, bool text)
{
    QList<SyntheticRun> specs;
    for (const char* precision : {"fp32", "mixed-fp16"})
        for (std::uint64_t seed : {0, 1, 2}) {
            SyntheticRun run;
            run.name = QStringLiteral("%1%2-seed%3").arg(text ? "text-" : "", precision).arg(seed);
            run.precision = precision;
            run.seed = seed;
            run.epochs = 2;
            run.stepsPerEpoch = 40;
            run.text = text;
            specs << run;
            ids << writeSyntheticRun(databasePath, run);
        }
    return specs;
}

QString readTextFile(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? QString::fromUtf8(file.readAll()) : QString();
}

} // namespace mantissa::report::test
