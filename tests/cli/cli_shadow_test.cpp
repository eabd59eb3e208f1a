// mantissa-cli numerics --shadow on tiny synthetic runs: the shadow error track's table at the
// last or nearest shadowed step with the worst tensors, the layer filter, an fp32 run's exact
// rows, the refusals (a run without the track, a layer it lacks, an interval out of range), and
// the pointer from the lens's table to the track.
#include "cli_test_support.h"

#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

using namespace mantissa::cli::test;

namespace {

// The step table's rows: the lines naming a layer before the list of the largest errors.
QStringList stepRows(const QStringList& lines)
{
    QStringList rows;
    for (const QString& line : lines) {
        if (line.startsWith(QStringLiteral("largest errors")))
            break;
        if (line.startsWith(QStringLiteral("0.linear")) || line.startsWith(QStringLiteral("1.linear")))
            rows << line.simplified();
    }
    return rows;
}

} // namespace

class CliShadowTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(QStringLiteral("runs.sqlite"));
        const QString mixed = writeTinyConfig(
            m_dir.path(), {QStringLiteral("shadowed"), 1, 512, 256,
                           QStringLiteral(R"("precision": {"mode": "mixed-fp16"}, "numerics": {"shadow_every": 5})")});
        const QString exact = writeTinyConfig(
            m_dir.path(), {QStringLiteral("exact"), 1, 512, 256, QStringLiteral(R"("numerics": {"shadow_every": 8})")});
        const QString both = writeTinyConfig(
            m_dir.path(), {QStringLiteral("both"), 1, 512, 256,
                           QStringLiteral(R"("precision": {"mode": "mixed-bf16"}, "numerics": {"every": 8})")});
        const QString plain = writeTinyConfig(m_dir.path(), {QStringLiteral("plain"), 1, 64, 32, QString()});
        for (const QString& config : {mixed, exact, plain}) {
            const CliResult r = runCli({QStringLiteral("train"), config, QStringLiteral("--db"), m_db});
            QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        }
        // The command line's option sets the field as the config does.
        const CliResult r = runCli({QStringLiteral("train"), both, QStringLiteral("--shadow-every"),
                                    QStringLiteral("4"), QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
    }

    void printsTheLastShadowedStepAndTheWorstTensors()
    {
        // The run has no lens statistics, so `numerics` shows its track without --shadow.
        const CliResult r =
            runCli({QStringLiteral("numerics"), QStringLiteral("shadowed-mixed-fp16-1"), QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(r.out.contains(QStringLiteral("shadow error track, step 15 (shadowed: 3 steps, 5 to 15); loss scale "
                                               "65536 divided out of the run's gradients\n")),
                 qPrintable(r.out));
        const QStringList rows = stepRows(r.outLines());
        // Forward order; per layer output, input gradient, weight gradients; the first layer
        // computes no input gradient.
        QCOMPARE(rows.size(), 7);
        QVERIFY2(rows[0].startsWith(QStringLiteral("0.linear output ")), qPrintable(rows[0]));
        QVERIFY2(rows[1].startsWith(QStringLiteral("0.linear weight_grad weight ")), qPrintable(rows[1]));
        QVERIFY2(rows[2].startsWith(QStringLiteral("0.linear weight_grad bias ")), qPrintable(rows[2]));
        QVERIFY2(rows[3].startsWith(QStringLiteral("1.linear output ")), qPrintable(rows[3]));
        QVERIFY2(rows[4].startsWith(QStringLiteral("1.linear input_grad ")), qPrintable(rows[4]));
        QVERIFY2(rows[5].startsWith(QStringLiteral("1.linear weight_grad weight ")), qPrintable(rows[5]));
        QVERIFY2(rows[6].startsWith(QStringLiteral("1.linear weight_grad bias ")), qPrintable(rows[6]));
        // fp16's rounding: errors of order 1e-4 to 1e-2, SQNR 40 to 80 dB, nothing non-finite.
        const QRegularExpression measured(
            QStringLiteral(R"( ([0-9]\.[0-9]{2}e-0[2-4]) (0\.99[0-9]{5}|1\.0000000) ([4-7][0-9]\.[0-9]) dB 0$)"));
        for (const QString& row : rows)
            QVERIFY2(measured.match(row).hasMatch(), qPrintable(row));
        QVERIFY2(r.out.contains(QStringLiteral("largest errors over 3 shadowed steps (mean relative RMS error):\n")),
                 qPrintable(r.out));
    }

    void nearestStepAndOneLayer()
    {
        const CliResult r =
            runCli({QStringLiteral("numerics"), QStringLiteral("shadowed-mixed-fp16-1"), QStringLiteral("--shadow"),
                    QStringLiteral("--step"), QStringLiteral("7"), QStringLiteral("--layer"),
                    QStringLiteral("1.linear"), QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(r.out.contains(QStringLiteral("shadow error track, step 5 ")), qPrintable(r.out));
        QVERIFY(!r.out.contains(QStringLiteral("\n0.linear")));
        QVERIFY(r.out.contains(QStringLiteral("\n1.linear")));
        QVERIFY(!r.out.contains(QStringLiteral("largest errors"))); // the ranking is of the whole model
    }

    void anFp32RunsShadowIsExact()
    {
        const CliResult r =
            runCli({QStringLiteral("numerics"), QStringLiteral("exact-fp32-1"), QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QStringList rows = stepRows(r.outLines());
        for (const QString& row : rows)
            QVERIFY2(row.endsWith(QStringLiteral(" 0 1.0000000 inf dB 0")), qPrintable(row));
        QCOMPARE(rows.size(), 7);
    }

    void theLensTablePointsToTheTrack()
    {
        const CliResult r =
            runCli({QStringLiteral("numerics"), QStringLiteral("both-mixed-bf16-1"), QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(r.out.contains(QStringLiteral("the run also has a shadow error track (4 steps): mantissa-cli "
                                               "numerics 4 --shadow\n")),
                 qPrintable(r.out));
    }

    void refusals()
    {
        const CliResult none = runCli({QStringLiteral("numerics"), QStringLiteral("plain-fp32-1"),
                                       QStringLiteral("--shadow"), QStringLiteral("--db"), m_db});
        QCOMPARE(none.exitCode, 2);
        QVERIFY2(none.err.contains(QStringLiteral("recorded no shadow errors; train it with \"numerics\": "
                                                  "{\"shadow_every\": 10} in its config (or --shadow-every 10)")),
                 qPrintable(none.err));
        const CliResult layer =
            runCli({QStringLiteral("numerics"), QStringLiteral("shadowed-mixed-fp16-1"), QStringLiteral("--shadow"),
                    QStringLiteral("--layer"), QStringLiteral("9.conv"), QStringLiteral("--db"), m_db});
        QCOMPARE(layer.exitCode, 2);
        QVERIFY2(layer.err.contains(QStringLiteral("no layer \"9.conv\" at step 15")), qPrintable(layer.err));
        const QString config = writeTinyConfig(m_dir.path(), {QStringLiteral("bad"), 1, 64, 32, QString()});
        for (const QString& value : {QStringLiteral("-3"), QStringLiteral("1001")}) {
            const CliResult bad = runCli({QStringLiteral("train"), config, QStringLiteral("--shadow-every"), value,
                                          QStringLiteral("--db"), m_db});
            QVERIFY2(bad.exitCode != 0, qPrintable(bad.describe()));
            QVERIFY2(bad.err.contains(QStringLiteral("--shadow-every must be 0 to 1000 steps (got %1)").arg(value)),
                     qPrintable(bad.err));
        }
    }

private:
    QTemporaryDir m_dir;
    QString m_db;
};

QTEST_GUILESS_MAIN(CliShadowTest)
#include "cli_shadow_test.moc"
