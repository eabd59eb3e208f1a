// RunWriter: what it stores, when rows become visible to other connections (batching
// and the once-a-second cadence), a reader polling while it writes, and how it ends.
#include "storage/run_store.h"
#include "storage/run_writer.h"
#include "storage/storage_error.h"
#include "test_support.h"

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

using namespace mantissa;
using namespace mantissa::storage;
using namespace mantissa::storage::test;

class RunWriterTest : public QObject {
    Q_OBJECT

private slots:
    void init()
    {
        m_dir = std::make_unique<QTemporaryDir>();
        QVERIFY(m_dir->isValid());
        m_path = m_dir->filePath(QStringLiteral("runs.sqlite"));
        m_store = std::make_unique<RunStore>(m_path);
        m_runId = m_store->createRun(sampleRun());
    }
    void cleanup()
    {
        m_store.reset();
        m_dir.reset();
    }

    void storesEveryRecord()
    {
        const int steps = 1000;
        double inverseRates = 0;
        {
            RunWriter writer(m_path, m_runId);
            for (int n = 1; n <= steps; ++n) {
                StepRecord step = makeStep(n);
                if (n == 400)
                    step.loss = std::numeric_limits<float>::infinity(); // stored and read back as inf
                writer.onStep(step);
                inverseRates += 1.0 / double(step.samplesPerSecond);
                if (n % 400 == 0)
                    writer.onEpoch(makeEpoch(n / 400));
            }
            writer.onEvent(makeOverflow(500));
            EventRecord change;
            change.kind = EventKind::ScaleChange;
            change.step = steps;
            change.scaleBefore = 2048;
            change.scaleAfter = 4096;
            writer.onEvent(change);
            EventRecord divergence;
            divergence.kind = EventKind::Divergence;
            divergence.step = steps;
            divergence.message = "loss is NaN";
            writer.onEvent(divergence);
            // An evaluated run's figures are given and kept (the final accuracy over the observed
            // value); the step counts, the scale and the rate are not, and come from the rows seen.
            RunSummary finish = finishedSummary();
            finish.peakBytes = 1 << 20;
            finish.epochs = 2;
            finish.trainLoss = makeEpoch(2).trainLoss;
            finish.bestTestAccuracy = makeEpoch(2).testAccuracy;
            finish.testAccuracy = 0.99f;
            QVERIFY(writer.finish(finish));
            QVERIFY(!writer.failed());
            QCOMPARE(writer.committedSteps(), qint64(steps));
        }
        const StepSeries series = m_store->steps(m_runId);
        QCOMPARE(series.size(), steps);
        for (qsizetype row = 0; row < series.size(); ++row) {
            QCOMPARE(series.step[row], double(row + 1));
            if (row + 1 == 400) {
                QVERIFY(std::isinf(series.loss[row]));
                continue;
            }
            QString why;
            QVERIFY2(stepRowMatches(series, row, &why), qPrintable(why));
        }
        QVERIFY(std::isnan(series.gradNorm[96])); // step 97 was skipped
        QCOMPARE(m_store->steps(m_runId, 990).size(), 10);

        const QList<EpochRecord> epochs = m_store->epochs(m_runId);
        QCOMPARE(epochs.size(), 2);
        QCOMPARE(epochs[1].epoch, 2);
        QCOMPARE(epochs[1].testAccuracy, makeEpoch(2).testAccuracy);
        QCOMPARE(epochs[1].wallSeconds, makeEpoch(2).wallSeconds);

        const QList<EventRecord> events = m_store->events(m_runId);
        QCOMPARE(events.size(), 3);
        QCOMPARE(events[0].kind, EventKind::Overflow);
        QCOMPARE(events[0].parameter, makeOverflow(500).parameter);
        QCOMPARE(events[0].scaleAfter, 32768.0f);
        QCOMPARE(events[1].kind, EventKind::ScaleChange);
        QCOMPARE(events[2].kind, EventKind::Divergence);
        QCOMPARE(events[2].message, std::string("loss is NaN"));
        QCOMPARE(events[2].scaleBefore, 0.0f); // no scale: NULL, read as the default

        const RunInfo run = m_store->run(m_runId);
        QCOMPARE(run.status, RunStatus::Finished);
        QCOMPARE(run.summary.steps, std::optional<qint64>(steps));
        QCOMPARE(run.summary.skippedSteps, std::optional<qint64>(steps / 97));
        QCOMPARE(run.summary.finalLossScale, std::optional<double>(4096)); // after the last step
        QCOMPARE(run.summary.finalTrainLoss, std::optional<double>(makeEpoch(2).trainLoss));
        QCOMPARE(run.summary.bestTestAccuracy, std::optional<double>(makeEpoch(2).testAccuracy));
        QCOMPARE(run.summary.finalTestAccuracy, std::optional<double>(0.99f));
        QVERIFY(run.summary.samplesPerSecond);
        QVERIFY(qFuzzyCompare(*run.summary.samplesPerSecond, steps / inverseRates));
        QCOMPARE(run.wallSeconds, std::optional<double>(makeEpoch(2).wallSeconds)); // latest clock seen
        QCOMPARE(run.peakMemoryBytes, std::optional<qint64>(1 << 20));
    }

    // A data-parallel run's per-step all-reduce counts read back as stored, a zero as zero; a
    // step without them (every other run) reads back as NaN, not as zero.
    void storesTheAllReduceCountsOfAStep()
    {
        {
            RunWriter writer(m_path, m_runId);
            for (int n = 1; n <= 3; ++n) {
                StepRecord step = makeStep(n);
                if (n < 3) {
                    step.allReduceFlushed = n == 1 ? 13770 : 0;
                    step.allReduceOverflowed = n == 1 ? 0 : 20;
                }
                writer.onStep(step);
            }
            QVERIFY(writer.flush());
        }
        const StepSeries series = m_store->steps(m_runId);
        QCOMPARE(series.allReduceFlushed.mid(0, 2), (QList<double>{13770, 0}));
        QCOMPARE(series.allReduceOverflowed.mid(0, 2), (QList<double>{0, 20}));
        QVERIFY(std::isnan(series.allReduceFlushed[2]) && std::isnan(series.allReduceOverflowed[2]));
    }

    void buffersStepsUntilFlush()
    {
        RunWriter writer(m_path, m_runId);
        for (int n = 1; n <= 10; ++n)
            writer.onStep(makeStep(n));
        QCOMPARE(m_store->steps(m_runId).size(), 0); // a second connection sees nothing yet
        QCOMPARE(writer.commitCount(), qint64(0));
        QVERIFY(writer.flush());
        QCOMPARE(m_store->steps(m_runId).size(), 10);
        QCOMPARE(writer.commitCount(), qint64(1));
    }

    void commitsAtOnce_data()
    {
        QTest::addColumn<QString>("record");
        QTest::newRow("epoch") << "epoch";
        QTest::newRow("event") << "event";
        QTest::newRow("checkpoint") << "checkpoint";
        QTest::newRow("finish") << "finish";
    }
    void commitsAtOnce()
    {
        QFETCH(QString, record);
        RunWriter writer(m_path, m_runId);
        for (int n = 1; n <= 5; ++n)
            writer.onStep(makeStep(n));
        if (record == QStringLiteral("epoch"))
            writer.onEpoch(makeEpoch(1));
        else if (record == QStringLiteral("event"))
            writer.onEvent(makeOverflow(5));
        else if (record == QStringLiteral("checkpoint"))
            writer.addCheckpoint(m_dir->filePath(QStringLiteral("step-5.ckpt")), 5, 1);
        else
            writer.finish(finishedSummary());
        QCOMPARE(writer.commitCount(), qint64(1));
        QCOMPARE(m_store->steps(m_runId).size(), 5);
        const int records = m_store->epochs(m_runId).size() + m_store->events(m_runId).size() +
                            m_store->checkpoints(m_runId).size() +
                            (m_store->run(m_runId).status == RunStatus::Finished ? 1 : 0);
        QCOMPARE(records, 1);
    }

    // While steps keep coming, no row waits much longer than the commit interval (1 s):
    // a second connection polls and measures the age of the oldest row it cannot see.
    void commitsAtLeastOncePerSecond()
    {
        RunWriter writer(m_path, m_runId);
        QElapsedTimer clock;
        clock.start();
        std::vector<qint64> writtenAt{0}; // by step
        qint64 visible = 0, worstLagMs = 0, lastPoll = 0;
        for (qint64 n = 1; clock.elapsed() < 3500; ++n) {
            writer.onStep(makeStep(n));
            writtenAt.push_back(clock.elapsed());
            if (clock.elapsed() - lastPoll >= 20) {
                lastPoll = clock.elapsed();
                visible += m_store->steps(m_runId, visible).size();
                if (visible + 1 < qint64(writtenAt.size()))
                    worstLagMs = std::max(worstLagMs, lastPoll - writtenAt[std::size_t(visible + 1)]);
            }
            QThread::usleep(500);
        }
        qInfo("%lld steps in %lld commits; the oldest invisible row was at most %lld ms old",
              qint64(writtenAt.size() - 1), writer.commitCount(), worstLagMs);
        QVERIFY2(worstLagMs <= 1300, "a row stayed invisible for more than a second");
        QVERIFY2(worstLagMs >= 500, "rows were not batched");
        QVERIFY(writer.commitCount() >= 3 && writer.commitCount() <= 4);
    }

    // A reader polling for new rows while another thread writes as fast as it can: it
    // sees a growing, contiguous, intact prefix, and never an error.
    void concurrentReaderSeesIntactPrefix()
    {
        const qint64 total = 300000;
        std::atomic<bool> done{false};
        QString writerError;
        std::thread training([&] {
            try {
                WriterOptions options;
                options.commitIntervalMs = 20;
                RunWriter writer(m_path, m_runId, options);
                for (qint64 n = 1; n <= total; ++n)
                    writer.onStep(makeStep(n));
                writer.finish(finishedSummary());
                if (writer.failed())
                    writerError = writer.errorMessage();
            } catch (const StorageError& error) {
                writerError = error.message();
            }
            done = true;
        });
        StepSeries seen;
        int polls = 0, pollsWithRows = 0;
        QString problem;
        while (problem.isEmpty()) {
            const bool finished = done.load();
            const StepSeries fresh = m_store->steps(m_runId, qint64(seen.size()));
            ++polls;
            if (!fresh.isEmpty())
                ++pollsWithRows;
            for (qsizetype row = 0; row < fresh.size() && problem.isEmpty(); ++row) {
                if (fresh.step[row] != double(seen.size() + row + 1))
                    problem = QStringLiteral("gap before step %1").arg(fresh.step[row]);
                else
                    stepRowMatches(fresh, row, &problem);
            }
            seen.step += fresh.step;
            if (finished && fresh.isEmpty())
                break;
            QThread::msleep(5);
        }
        training.join();
        QVERIFY2(writerError.isEmpty(), qPrintable(writerError));
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QCOMPARE(qint64(seen.size()), total);
        qInfo("%d polls, %d of them found new rows", polls, pollsWithRows);
        QVERIFY2(pollsWithRows >= 3, "the reader never saw the run grow");
        QCOMPARE(m_store->run(m_runId).status, RunStatus::Finished);
    }

    void marksRunInterruptedWhenNotFinished()
    {
        {
            RunWriter writer(m_path, m_runId);
            for (int n = 1; n <= 25; ++n)
                writer.onStep(makeStep(n));
        } // e.g. the trainer threw
        const RunInfo run = m_store->run(m_runId);
        QCOMPARE(run.status, RunStatus::Interrupted);
        QVERIFY2(run.errorMessage.contains(QStringLiteral("closed before the run finished")),
                 qPrintable(run.errorMessage));
        QCOMPARE(run.summary.steps, std::optional<qint64>(25));
        QCOMPARE(m_store->steps(m_runId).size(), 25);
    }

    void refusesRunsItCannotWrite_data()
    {
        QTest::addColumn<bool>("exists");
        QTest::addColumn<StorageError::Kind>("kind");
        QTest::newRow("finished run") << true << StorageError::Kind::InvalidArgument;
        QTest::newRow("unknown run") << false << StorageError::Kind::NotFound;
    }
    void refusesRunsItCannotWrite()
    {
        QFETCH(bool, exists);
        QFETCH(StorageError::Kind, kind);
        m_store->finishRun(m_runId, finishedSummary());
        try {
            RunWriter writer(m_path, exists ? m_runId : m_runId + 100);
            QFAIL("a writer claimed a run it cannot write");
        } catch (const StorageError& error) {
            QCOMPARE(error.kind(), kind);
            QVERIFY(error.message().startsWith(m_path));
        }
        QCOMPARE(m_store->run(m_runId).status, RunStatus::Finished);
    }

private:
    std::unique_ptr<QTemporaryDir> m_dir;
    QString m_path;
    std::unique_ptr<RunStore> m_store;
    qint64 m_runId = 0;
};

QTEST_GUILESS_MAIN(RunWriterTest)
#include "run_writer_test.moc"
