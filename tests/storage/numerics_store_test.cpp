// The numerics lens in the run store: per-layer rows of sampled steps, the histogram blob
// layout, a tensor's histogram series, grad amax per step and overflow locations (Inf told
// from NaN), and the block-format statistics of a recipe's GEMM inputs.
#include "storage/run_store.h"
#include "storage/run_writer.h"
#include "storage/storage_error.h"
#include "test_support.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <limits>

using namespace mantissa;
using namespace mantissa::storage;
using namespace mantissa::storage::test;

namespace {

TensorNumerics tensor(int layer, TensorKind kind, const std::string& name, std::uint32_t seed)
{
    TensorNumerics t;
    t.layerIndex = layer;
    t.layer = std::to_string(layer) + ".linear";
    t.kind = kind;
    t.tensor = name;
    t.dtype = DType::F16;
    t.target = DType::F16;
    TensorStats& s = t.stats;
    s.count = 1000 + seed;
    s.amax = 0.5f * float(seed + 1);
    s.zeros = seed;
    s.underflow = 2 * seed;
    s.subnormal = 3 * seed;
    s.overflow = seed % 2;
    s.nonFinite = seed % 3;
    s.nan = seed % 3 == 2 ? 1 : 0;
    for (std::size_t i = 0; i < s.histogram.size(); ++i)
        s.histogram[i] = std::uint32_t(i * 7 + seed);
    s.histogram[5] = 0xA1B2C3D4u; // every byte distinct: the blob's byte order shows
    return t;
}

GemmInputNumerics gemmInput(int layer, GemmPass pass, GemmOperand operand, std::size_t seed)
{
    GemmInputNumerics g;
    g.layerIndex = layer;
    g.layer = std::to_string(layer) + ".linear";
    g.pass = pass;
    g.operand = operand;
    g.format = "e2m1 mx/32 floor";
    QuantStats& s = g.stats;
    s.elements = 4096 + seed;
    s.blocks = 128;
    s.clippedBlocks = 40 + seed;
    s.nanScaleBlocks = seed % 2;
    s.flushedToZero = 900 + seed;
    s.nonFinite = seed % 3;
    s.nanInputs = seed % 3 == 2 ? 1 : 0;
    s.signalEnergy = 12.5 + double(seed);
    // A non-finite quantised value makes the noise infinite (SQNR -inf): stored as such.
    s.noiseEnergy = seed == 11 ? std::numeric_limits<double>::infinity() : 0.75 + double(seed);
    s.scaleExponents = {{-9, 3}, {-4, 100 + seed}, {2, 25}};
    return g;
}

NumericsRecord record(qint64 step)
{
    NumericsRecord r;
    r.step = step;
    r.lossScale = 65536.0f / float(step);
    r.scaledGradients = step == 20;
    const auto seed = std::uint32_t(step);
    r.tensors = {tensor(0, TensorKind::Activation, "0.linear.output", seed),
                 tensor(0, TensorKind::WeightGrad, "0.linear.weight", seed + 1),
                 tensor(1, TensorKind::ActivationGrad, "1.linear.input_grad", seed + 2),
                 tensor(1, TensorKind::Weight, "1.linear.weight", seed + 3)};
    // Sampled step 20 ran a 16-bit layer only: no GEMM inputs.
    if (step != 20)
        r.gemmInputs = {gemmInput(0, GemmPass::Forward, GemmOperand::Activation, seed),
                        gemmInput(0, GemmPass::Forward, GemmOperand::Weight, seed + 1),
                        gemmInput(0, GemmPass::WeightGrad, GemmOperand::Gradient, seed + 2)};
    return r;
}

bool sameStats(const TensorStats& a, const TensorStats& b)
{
    return a.count == b.count && a.amax == b.amax && a.zeros == b.zeros && a.underflow == b.underflow &&
           a.subnormal == b.subnormal && a.overflow == b.overflow && a.nonFinite == b.nonFinite && a.nan == b.nan &&
           a.histogram == b.histogram;
}

bool sameStats(const QuantStats& a, const QuantStats& b)
{
    return a.elements == b.elements && a.blocks == b.blocks && a.clippedBlocks == b.clippedBlocks &&
           a.nanScaleBlocks == b.nanScaleBlocks && a.flushedToZero == b.flushedToZero && a.nonFinite == b.nonFinite &&
           a.nanInputs == b.nanInputs && a.signalEnergy == b.signalEnergy && a.noiseEnergy == b.noiseEnergy &&
           a.scaleExponents == b.scaleExponents;
}

} // namespace

class NumericsStoreTest : public QObject {
    Q_OBJECT

private slots:
    void init()
    {
        QVERIFY(m_dir.isValid());
        m_path = m_dir.filePath(QStringLiteral("runs.sqlite"));
        RunStore store(m_path);
        m_run = store.createRun(sampleRun());
        RunWriter writer(m_path, m_run);
        for (qint64 n = 1; n <= 30; ++n) {
            StepRecord s = makeStep(n);
            s.gradAmax = n == 7 ? std::numeric_limits<float>::infinity() : 0.001f * float(n);
            writer.onStep(s);
            if (n % 10 == 0)
                writer.onNumerics(record(n));
        }
        EventRecord overflow;
        overflow.kind = EventKind::Overflow;
        overflow.step = 7;
        overflow.scaleBefore = 65536;
        overflow.scaleAfter = 32768;
        overflow.parameter = "1.linear.weight";
        overflow.location =
            OverflowLocation{1, "1.linear", TensorKind::ActivationGrad, "1.linear.input_grad", 12, 4096, 60000.0f, 5};
        writer.onEvent(overflow);
        EventRecord change;
        change.kind = EventKind::ScaleChange;
        change.step = 8;
        writer.onEvent(change);
        QVERIFY(writer.finish(finishedSummary()));
    }
    void cleanup()
    {
        for (const QString& suffix : {QString(), QStringLiteral("-wal"), QStringLiteral("-shm")})
            QFile::remove(m_path + suffix);
    }

    void roundTripsPerLayerRows()
    {
        RunStore store(m_path);
        QCOMPARE(store.numericsSteps(m_run), (QList<qint64>{10, 20, 30}));
        for (qint64 step : {10, 20, 30}) {
            const NumericsRecord expected = record(step);
            const NumericsRecord read = store.numerics(m_run, step);
            QCOMPARE(read.step, step);
            QCOMPARE(read.lossScale, expected.lossScale);
            QCOMPARE(read.scaledGradients, expected.scaledGradients);
            QCOMPARE(read.tensors.size(), expected.tensors.size());
            for (std::size_t i = 0; i < read.tensors.size(); ++i) {
                const TensorNumerics& a = read.tensors[i];
                const TensorNumerics& b = expected.tensors[i]; // already in layer, kind order
                QCOMPARE(a.tensor, b.tensor);
                QCOMPARE(a.layer, b.layer);
                QCOMPARE(a.layerIndex, b.layerIndex);
                QCOMPARE(a.kind, b.kind);
                QCOMPARE(a.dtype, b.dtype);
                QCOMPARE(a.target, b.target);
                QVERIFY2(sameStats(a.stats, b.stats), a.tensor.c_str());
            }
            QCOMPARE(read.gemmInputs.size(), expected.gemmInputs.size());
            for (std::size_t i = 0; i < read.gemmInputs.size(); ++i) {
                const GemmInputNumerics& a = read.gemmInputs[i];
                const GemmInputNumerics& b = expected.gemmInputs[i]; // in the record's order
                QCOMPARE(a.layerIndex, b.layerIndex);
                QCOMPARE(a.layer, b.layer);
                QCOMPARE(a.pass, b.pass);
                QCOMPARE(a.operand, b.operand);
                QCOMPARE(a.format, b.format);
                QVERIFY2(sameStats(a.stats, b.stats), a.layer.c_str());
            }
        }
        QVERIFY(std::isinf(store.numerics(m_run, 10).gemmInputs[1].stats.noiseEnergy));
        QCOMPARE(store.numerics(m_run, 10).gemmInputs[1].stats.sqnrDb(), -std::numeric_limits<double>::infinity());
    }

    void scaleExponentBlobIsLittleEndianPairs()
    {
        RawDatabase db(m_path);
        const QByteArray blob =
            db.scalar(
                  QStringLiteral("SELECT scale_exponents FROM numerics_gemm_inputs WHERE step = 10 AND ordinal = 0"))
                .toByteArray();
        QCOMPARE(blob.size(), 3 * 8);
        QCOMPARE(blob.mid(0, 8), QByteArray("\xF7\xFF\xFF\xFF\x03\x00\x00\x00", 8)); // -9: 3 blocks
        QCOMPARE(db.scalar(QStringLiteral("SELECT pass || ' ' || operand FROM numerics_gemm_inputs WHERE step = 30 "
                                          "AND ordinal = 2"))
                     .toString(),
                 QStringLiteral("wgrad gradient"));
    }

    void unsampledStepIsNotFound()
    {
        RunStore store(m_path);
        try {
            store.numerics(m_run, 15);
            QFAIL("step 15 was not sampled");
        } catch (const StorageError& error) {
            QCOMPARE(error.kind(), StorageError::Kind::NotFound);
        }
    }

    void histogramBlobIsLittleEndianUint32()
    {
        RawDatabase db(m_path);
        QCOMPARE(db.scalar(QStringLiteral("SELECT DISTINCT length(histogram) FROM numerics_tensors")).toInt(), 63 * 4);
        const QByteArray blob =
            db.scalar(QStringLiteral(
                          "SELECT histogram FROM numerics_tensors WHERE step = 10 AND tensor = '0.linear.output'"))
                .toByteArray();
        QCOMPARE(blob.mid(5 * 4, 4), QByteArray("\xD4\xC3\xB2\xA1", 4));
        QCOMPARE(blob.mid(1 * 4, 4), QByteArray("\x11\x00\x00\x00", 4)); // 1 * 7 + 10
    }

    void histogramSeriesOverSteps()
    {
        RunStore store(m_path);
        const HistogramSeries series =
            store.histogramSeries(m_run, QStringLiteral("0.linear.weight"), TensorKind::WeightGrad);
        QCOMPARE(series.step, (QList<qint64>{10, 20, 30}));
        QCOMPARE(series.lossScale,
                 (QList<double>{double(65536.0f / 10.0f), double(65536.0f / 20.0f), double(65536.0f / 30.0f)}));
        QCOMPARE(series.scaledGradients, (QList<bool>{false, true, false}));
        QCOMPARE(series.counts[1], record(20).tensors[1].stats.histogram);
        QCOMPARE(store.histogramSeries(m_run, QStringLiteral("0.linear.weight"), TensorKind::Weight).size(), 0);
    }

    void gradAmaxAndOverflowLocation()
    {
        RunStore store(m_path);
        const StepSeries steps = store.steps(m_run);
        QCOMPARE(steps.gradAmax.size(), 30);
        QCOMPARE(steps.gradAmax[0], double(0.001f));
        QVERIFY(std::isinf(steps.gradAmax[6]));
        const QList<EventRecord> events = store.events(m_run);
        QCOMPARE(events.size(), 2); // overflow, scale change
        QVERIFY(events[0].location);
        const OverflowLocation& where = *events[0].location;
        QCOMPARE(where.layerIndex, 1);
        QCOMPARE(where.layer, std::string("1.linear"));
        QCOMPARE(where.kind, TensorKind::ActivationGrad);
        QCOMPARE(where.tensor, std::string("1.linear.input_grad"));
        QCOMPARE(where.nonFiniteCount, qint64(12));
        QCOMPARE(where.count, qint64(4096));
        QCOMPARE(where.largestFinite, 60000.0f);
        QCOMPARE(where.nanCount, qint64(5));
        QVERIFY(!events[1].location);
    }

    void deletingTheRunDeletesItsNumerics()
    {
        RunStore store(m_path);
        store.deleteRun(m_run);
        RawDatabase db(m_path);
        QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM numerics_tensors")).toInt(), 0);
        QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM numerics_steps")).toInt(), 0);
        QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM numerics_gemm_inputs")).toInt(), 0);
    }

private:
    QTemporaryDir m_dir;
    QString m_path;
    qint64 m_run = 0;
};

QTEST_GUILESS_MAIN(NumericsStoreTest)
#include "numerics_store_test.moc"
