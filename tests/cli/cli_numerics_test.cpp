// mantissa-cli numerics and replay on a tiny synthetic run: the per-layer table at the
// last or nearest sampled step, the layer filter, the refusal for a run without
// statistics, the GEMM inputs' block statistics of a recipe run, and the policy table of replay.
#include "cli_test_support.h"

#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

using namespace mantissa::cli::test;

namespace {

// Dynamic scaling from 2^24: early steps overflow, so replay has skips to count.
const QString kMixedWithNumerics = QStringLiteral(
    R"("precision": {"mode": "mixed-fp16", "loss_scale": {"type": "dynamic", "initial": 16777216}},
       "numerics": {"every": 5})");

// MXFP4 on every layer with the OCP floor rule, which clips blocks.
const QString kMxfp4WithNumerics = QStringLiteral(
    R"("precision": {"mode": "mxfp4", "recipe": {"keep_first_last": "off"}},
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
        const QString mx = writeTinyConfig(m_dir.path(), {QStringLiteral("mx"), 1, 512, 256, kMxfp4WithNumerics});
        for (const QString& config : {lens, plain, mx}) {
            const CliResult r = runCli({QStringLiteral("train"), config, QStringLiteral("--db"), m_db});
            QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        }
    }

    // train (on stderr) and show say what the recipe covered, and warn where it covered nothing.
    void trainAndShowSayWhatTheRecipeCovered()
    {
        // mxfp4 keeps the first and the last GEMM by default: in this two-layer MLP, both.
        const QString kept = writeTinyConfig(
            m_dir.path(), {QStringLiteral("kept"), 1, 64, 32, QStringLiteral(R"("precision": {"mode": "mxfp4"})")});
        const CliResult r = runCli({QStringLiteral("train"), kept, QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(r.err.contains(QStringLiteral(
                     "recipe: mxfp4: 0 of 2 GEMMs quantised; kept unquantised: 0.linear (keep_first_last: the first "
                     "GEMM), 1.linear (keep_first_last: the last GEMM)\n")),
                 qPrintable(r.err));
        QVERIFY2(r.err.contains(QStringLiteral("warning: mxfp4 quantises none of this model's 2 GEMMs")),
                 qPrintable(r.err));
        const QString id = QString::number(r.json().value(QStringLiteral("run_id")).toInteger());
        const CliResult show = runCli({QStringLiteral("show"), id, QStringLiteral("--db"), m_db});
        QVERIFY2(show.exitCode == 0, qPrintable(show.describe()));
        QVERIFY2(show.out.contains(QStringLiteral("\nrecipe\n  mxfp4: 0 of 2 GEMMs quantised;")), qPrintable(show.out));
        QVERIFY2(show.out.contains(QStringLiteral("  warning: mxfp4 quantises none")), qPrintable(show.out));

        // keep_first_last off: both quantised, nothing to warn of; a 16-bit run has no section.
        const CliResult mx =
            runCli({QStringLiteral("show"), QStringLiteral("mx-mxfp4-1"), QStringLiteral("--db"), m_db});
        QVERIFY2(mx.exitCode == 0, qPrintable(mx.describe()));
        QVERIFY2(mx.out.contains(QStringLiteral("\nrecipe\n  mxfp4: 2 of 2 GEMMs quantised\n")), qPrintable(mx.out));
        QVERIFY(!mx.out.contains(QStringLiteral("warning")));
        const CliResult plain =
            runCli({QStringLiteral("show"), QStringLiteral("plain-fp32-1"), QStringLiteral("--db"), m_db});
        QVERIFY2(plain.exitCode == 0, qPrintable(plain.describe()));
        QVERIFY(!plain.out.contains(QStringLiteral("\nrecipe\n")));
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

    void recipeRunShowsItsGemmInputs()
    {
        const CliResult r = runCli({QStringLiteral("numerics"), QStringLiteral("mx-mxfp4-1"), QStringLiteral("--step"),
                                    QStringLiteral("10"), QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QStringList lines = r.outLines();
        const qsizetype title =
            lines.indexOf(QStringLiteral("GEMM inputs quantised by the recipe (one row per layer, GEMM and operand)"));
        QVERIFY2(title > 0, qPrintable(r.out));
        for (const char* column : {"layer", "gemm", "operand", "format", "blocks", "clipped", "flushed", "SQNR dB",
                                   "scale exp", "non-finite"})
            QVERIFY2(lines[title + 1].contains(QLatin1String(column)), column);
        // Layer 0 computes no dx: fprop (activation, weight) and wgrad (gradient, activation);
        // layer 1 all six. Then the note.
        const QStringList rows = lines.mid(title + 2, 10);
        QCOMPARE(lines.size(), title + 2 + 10 + 1);
        QVERIFY2(rows[0].startsWith(QStringLiteral("0.linear  fprop  activation  e2m1 mx/32 floor")),
                 qPrintable(rows[0]));
        QVERIFY2(rows[9].startsWith(QStringLiteral("1.linear  wgrad  gradient")), qPrintable(rows[9]));
        QCOMPARE(rows.filter(QStringLiteral(" dgrad ")).size(), 2);
        // Rows of numbers: "<blocks> <clipped>% <flushed>% <SQNR> <low>..<high> 0" at the end.
        static const QRegularExpression numbers(
            QStringLiteral(R"((\d+)\s+(\d+\.\d+)%\s+(\d+\.\d+)%\s+(\d+\.\d)\s+(-?\d+)(\.\.(-?\d+))?\s+0$)"));
        double clipped = 0;
        for (const QString& row : rows) {
            const QRegularExpressionMatch m = numbers.match(row);
            QVERIFY2(m.hasMatch(), qPrintable(row));
            QVERIFY(m.captured(1).toInt() > 0);
            clipped += m.captured(2).toDouble();
            // E2M1 keeps one mantissa bit: a block-scaled tensor's SQNR is a few dB to ~20 dB.
            QVERIFY2(m.captured(4).toDouble() > 3 && m.captured(4).toDouble() < 30, qPrintable(row));
        }
        QVERIFY2(clipped > 0, "the floor rule clips some blocks");
        // The layer filter selects its rows in both tables.
        const CliResult one = runCli({QStringLiteral("numerics"), QStringLiteral("mx-mxfp4-1"),
                                      QStringLiteral("--layer"), QStringLiteral("1"), QStringLiteral("--db"), m_db});
        QVERIFY2(one.exitCode == 0, qPrintable(one.describe()));
        QVERIFY(!one.out.contains(QStringLiteral("0.linear  fprop")));
        QVERIFY(one.out.contains(QStringLiteral("1.linear  dgrad  gradient")));
        // A 16-bit run has no such table.
        const CliResult fp16 =
            runCli({QStringLiteral("numerics"), QStringLiteral("lens-mixed-fp16-1"), QStringLiteral("--db"), m_db});
        QVERIFY(!fp16.out.contains(QStringLiteral("GEMM inputs")));
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
