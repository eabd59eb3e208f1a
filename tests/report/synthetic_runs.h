#pragma once
// Realistic runs written straight through RunStore and RunWriter, without training: the
// shape of an mlp on Fashion-MNIST in fp32 and in mixed fp16 with dynamic loss scaling
// (a falling, noisy loss; accuracy near 87% after three epochs; overflows at the start
// and after each growth of the scale). Every value is a function of the spec, so a test
// knows what the report must say.
#include "storage/run_store.h"

#include <QList>
#include <QString>

#include <cstdint>
#include <optional>

namespace mantissa::report::test {

struct SyntheticRun {
    QString name;
    QString precision = QStringLiteral("fp32"); // fp32 | mixed-fp16
    int epochs = 3;
    int stepsPerEpoch = 120;
    int stepsWritten = -1; // fewer than epochs * stepsPerEpoch: the writer is closed early (interrupted)
    double samplesPerSecond = 9000;
    qint64 peakMemoryBytes = 0;
    QString device = QStringLiteral("cpu (OpenBLAS, 2 threads, F16C): Intel(R) Xeon(R) CPU @ 2.20GHz");
    QString notes;
    QString kernels; // runs.kernels: which path each 16-bit type took (Backend::kernelPaths)
    std::optional<qint64> groupId;
    // training.seed; another seed than 42 moves the accuracies by up to +-0.4 points and
    // changes the loss noise, as a rerun with another seed would.
    std::uint64_t seed = 42;
    // A char-gpt run on text (the same curves): the report gives its losses in bits per character.
    bool text = false;
    // Ranks that trained it data-parallel (mpirun -np N): recorded with each rank's throughput
    // (rank r at samplesPerSecond / N / (1 + r / 10)), and overflows that start on rank step % N.
    int worldSize = 1;
    // With worldSize > 1: the gradients are all-reduced in the 16-bit type (allreduce_dtype
    // compute), and each step records what its sum lost (syntheticAllReduceLoss).
    bool allReduceInCompute = false;
    QString dataFingerprint; // runs.data_fingerprint; empty: not known
    // Every this many steps, a shadowed step (numerics.shadow_every): syntheticShadow(step).
    int shadowEvery = 0;
    // Validation samples held out: each epoch's validation loss is its test loss + 0.02 and
    // its validation accuracy its test accuracy - 0.005 (syntheticValidation).
    bool validation = false;
};

// The shadow error track of a run with shadowEvery: each of three linear layers' output and
// weight gradient (no input gradients), the relative error growing with depth and falling with
// the step; 3.linear's output held an infinity at step 2 * shadowEvery.
ShadowRecord syntheticShadow(const SyntheticRun& run, qint64 step);

// What the 16-bit all-reduce of step `step` flushed to zero and overflowed in a run with
// allReduceInCompute: values flushed every 10th step, and one overflowed value on each
// overflowing step.
struct AllReduceLoss {
    qint64 flushed = 0, overflowed = 0;
};
AllReduceLoss syntheticAllReduceLoss(const SyntheticRun& run, qint64 step);

// Test accuracy the synthetic run reports after epoch `epoch` (1-based).
float syntheticTestAccuracy(const SyntheticRun& run, int epoch);
// Steps of a mixed-fp16 run whose gradients overflow (skipped).
bool isSyntheticOverflow(const SyntheticRun& run, qint64 step);

// Writes the run into the database at `databasePath`; returns its id.
qint64 writeSyntheticRun(const QString& databasePath, const SyntheticRun& run);

// fp32 and mixed-fp16 over seeds 0, 1 and 2 (two epochs of 40 steps each), in that order: two
// configurations repeated over three seeds, the shape of a small sweep. Returns the specs
// written; their ids go to `ids`. `text`: char-gpt runs on text, named "text-...".
QList<SyntheticRun> writeSeededRuns(const QString& databasePath, QList<qint64>& ids, bool text = false);

// A text file's contents; empty when it cannot be read.
QString readTextFile(const QString& path);

struct SampleDatabase {
    QString path;
    qint64 fp32 = 0, mixed = 0, interrupted = 0, group = 0;
    SyntheticRun fp32Spec, mixedSpec, interruptedSpec;
};

// fp32 and mixed-fp16 runs of 360 steps in one comparison group, and an interrupted
// mixed-fp16 run of 180 steps, in a new database at `path`.
SampleDatabase writeSampleDatabase(const QString& path);

} // namespace mantissa::report::test
