// The shadow error track in the run store: every row of a shadowed step read back as written
// (the sums, so the measures come back to the bit), in order, step by step after a given one,
// gone with its run, and an exact tensor's infinite SQNR recovered without being stored.
#include "storage/run_store.h"
#include "storage/run_writer.h"
#include "test_support.h"

#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <limits>

using namespace mantissa;
using namespace mantissa::storage;
using namespace mantissa::storage::test;

namespace {

ShadowError row(const std::string& layer, ShadowTensor kind, const std::string& tensor, double seed)
{
    ShadowError e;
    e.layer = layer;
    e.kind = kind;
    e.tensor = tensor;
    e.energies.count = 4096 + static_cast<std::int64_t>(seed);
    e.energies.nonFinite = seed == 3 ? 2 : 0;
    e.energies.reference = 12.5 + seed;
    e.energies.compared = 12.25 + seed;
    e.energies.error = seed == 0 ? 0.0 : 1e-6 * seed; // seed 0: exact
    e.energies.dot = 12.375 + seed + 1.0 / 3.0;       // not a short binary fraction
    return e;
}

ShadowRecord record(qint64 step)
{
    ShadowRecord r;
    r.step = step;
    r.lossScale = 65536.0f / float(step);
    const double s = double(step);
    r.errors = {row("0.linear", ShadowTensor::Output, "0.linear", 0),
                row("0.linear", ShadowTensor::WeightGrad, "0.linear.weight", s),
                row("1.residual.0.linear", ShadowTensor::InputGrad, "1.residual.0.linear", s + 1),
                row("1.residual.0.linear", ShadowTensor::WeightGrad, "1.residual.0.linear.bias", 3)};
    return r;
}

} // namespace

class ShadowStoreTest : public QObject {
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
            writer.onStep(makeStep(n));
            if (n % 10 == 0)
                writer.onShadow(record(n));
        }
        QVERIFY(writer.finish(finishedSummary()));
    }

    void roundTripsEveryRow()
    {
        RunStore store(m_path);
        const std::vector<ShadowRecord> read = store.shadowRecords(m_run);
        QCOMPARE(read.size(), std::size_t(3));
        for (std::size_t i = 0; i < read.size(); ++i) {
            const ShadowRecord written = record(qint64(10 * (i + 1)));
            QCOMPARE(read[i].step, written.step);
            QCOMPARE(read[i].lossScale, written.lossScale);
            QCOMPARE(read[i].errors.size(), written.errors.size());
            for (std::size_t k = 0; k < written.errors.size(); ++k) {
                const ShadowError& a = read[i].errors[k];
                const ShadowError& b = written.errors[k];
                QCOMPARE(a.layer, b.layer);
                QCOMPARE(a.kind, b.kind);
                QCOMPARE(a.tensor, b.tensor);
                QCOMPARE(a.energies.count, b.energies.count);
                QCOMPARE(a.energies.nonFinite, b.energies.nonFinite);
                QCOMPARE(a.energies.reference, b.energies.reference);
                QCOMPARE(a.energies.compared, b.energies.compared);
                QCOMPARE(a.energies.error, b.energies.error);
                QCOMPARE(a.energies.dot, b.energies.dot);
            }
        }
        // The exact output: SQNR +inf and relative error 0, from sums that are all finite.
        QCOMPARE(read[0].errors[0].energies.sqnrDb(), std::numeric_limits<double>::infinity());
        QCOMPARE(read[0].errors[0].energies.relativeRms(), 0.0);
        // The row with non-finite values: no measure.
        QVERIFY(std::isnan(read[0].errors[3].energies.relativeRms()));
    }

    void readsTheStepsAfterOne()
    {
        RunStore store(m_path);
        const std::vector<ShadowRecord> later = store.shadowRecords(m_run, 10);
        QCOMPARE(later.size(), std::size_t(2));
        QCOMPARE(later[0].step, qint64(20));
        QCOMPARE(later[1].errors[1].tensor, std::string("0.linear.weight"));
        QVERIFY(store.shadowRecords(m_run, 30).empty());
    }

    void leavesWithItsRun()
    {
        RunStore store(m_path);
        store.deleteRun(m_run);
        RawDatabase db(m_path);
        QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM shadow_errors")).toInt(), 0);
        QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM shadow_steps")).toInt(), 0);
    }

    void cleanup()
    {
        for (const QString& suffix : {QString(), QStringLiteral("-wal"), QStringLiteral("-shm")})
            QFile::remove(m_path + suffix);
    }

private:
    QTemporaryDir m_dir;
    QString m_path;
    qint64 m_run = 0;
};

QTEST_GUILESS_MAIN(ShadowStoreTest)
#include "shadow_store_test.moc"
