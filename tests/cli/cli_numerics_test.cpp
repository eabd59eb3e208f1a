// mantissa-cli numerics and replay on a tiny synthetic run: the per-layer table at the
// last or nearest sampled step, the layer filter, the refusal for a run without
// statistics, and the policy table of replay.
#include "cli_test_support.h"

#include <QTemporaryDir>
#include <QTest>

using namespace mantissa::cli::test;

namespace {

// Dynamic scaling from 2^24: early steps overflow, so replay has skips to count.
const QString kMixedWithNumerics = QStringLiteral(
    R"("precision": {"mode": "mixed-fp16", "loss_scale": {"type": "dynamic", "initial": 16777216}},
       "numerics": {"every": 5})");

} // namespace

class CliNumericsTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(QStringLiteral("runs.sqlite"));
        const QString lens = writeTinyConfig(m_dir.path(), {QStringLiteral("lens"), 1, 512, 256, kMixedWithNumerics});
        const QString plain = writeTinyConfig(m_dir.path(), {QStringLiteral("plain"), 1, 512, 256, QString()});
        for (const QString& config : {lens, plain}) {
            const CliResult r = runCli({QStringLiteral("train"), config, QStringLiteral("--db"), m_db});
            QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        }
    }

    void printsTheTableOfTheLastSampledStep()
    {
        const CliResult r =
            runCli({QStringLiteral("numerics"), QStringLiteral("lens-mixed-fp16-1"), QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QStringList lines = r.outLines();
        QVERIFY2(lines.front().contains(QStringLiteral("step 15 (sampled: 3 steps, 5 to 15)")),
                 qPrintable(lines.front()));
        for (const char* column :
             {"layer", "tensor", "amax", "zeros", "underflow", "subnormal", "overflow", "suggested scale"})
            QVERIFY2(lines[1].contains(QLatin1String(column)), column);
        QVERIFY(r.out.contains(QStringLiteral("weight_grad")));
        QVERIFY(r.out.contains(QStringLiteral("activation_grad")));
        QVERIFY(r.out.contains(QStringLiteral("2^"))); // suggested scales are powers of two
    }

    void nearestStepAndLayerFilter()
    {
        const CliResult r = runCli({QStringLiteral("numerics"), QStringLiteral("lens-mixed-fp16-1"),
                                    QStringLiteral("--step"), QStringLiteral("6"), QStringLiteral("--layer"),
                                    QStringLiteral("1.linear"), QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QStringList lines = r.outLines();
        QVERIFY2(lines.front().contains(QStringLiteral("step 5 ")), qPrintable(lines.front()));
        for (const QString& line : lines.mid(2, lines.size() - 3))
            QVERIFY2(line.startsWith(QStringLiteral("1.linear ")), qPrintable(line));
        // title, header, 7 rows (output, input_grad, output_grad: the last layer, weight, bias, and their gradients), note
        QCOMPARE(lines.size(), 2 + 7 + 1);
    }

    void runWithoutStatisticsIsRefused()
    {
        const CliResult r =
            runCli({QStringLiteral("numerics"), QStringLiteral("plain-fp32-1"), QStringLiteral("--db"), m_db});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(QStringLiteral("recorded no numerics")), qPrintable(r.err));
    }

    void replayPrintsThePolicyTable()
    {
        const CliResult r =
            runCli({QStringLiteral("replay"), QStringLiteral("lens-mixed-fp16-1"), QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY(r.out.contains(QStringLiteral("skipped steps")));
        QStringList recorded, replayed;
        for (const QString& line : r.outLines()) {
            if (line.startsWith(QStringLiteral("recorded ")))
                recorded = line.split(QLatin1Char(' '), Qt::SkipEmptyParts);
            if (line.startsWith(QStringLiteral("this run's (replayed)")))
                replayed = line.split(QLatin1Char(' '), Qt::SkipEmptyParts).mid(2);
        }
        QVERIFY2(!recorded.isEmpty() && !replayed.isEmpty(), qPrintable(r.out));
        QVERIFY(recorded[1].toInt() > 0);
        // The run's own policy replayed over its own trace gives back what it recorded.
        QCOMPARE(replayed.mid(1), recorded.mid(1));
        for (const char* policy : {"pytorch", "deepspeed", "static 128", "static 512"})
            QVERIFY2(r.out.contains(QLatin1String(policy)), policy);
    }

private:
    QTemporaryDir m_dir;
    QString m_db;
};

QTEST_GUILESS_MAIN(CliNumericsTest)
#include "cli_numerics_test.moc"
