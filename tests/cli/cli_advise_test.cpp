// mantissa-cli advise end to end on the tiny synthetic MLP (two GEMM layers): it trains the
// config, probes each layer, writes the config with the layers it chose in their formats and
// keeps its measurements, which a second advise with one more format reuses (measuring only
// the new format's); a stored run is advised from its saved state; a budget nothing meets, a
// layer a format cannot take and every bad option are said, the last with exit code 2.
#include "cli_test_support.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

using namespace mantissa::cli::test;

class CliAdviseTest : public QObject {
    Q_OBJECT

private:
    QStringList advise(const QString& output, const QStringList& more) const
    {
        return QStringList{QStringLiteral("advise"),
                           m_config,
                           QStringLiteral("--held-out-batches"),
                           QStringLiteral("2"),
                           QStringLiteral("-o"),
                           m_dir.filePath(output),
                           QStringLiteral("--db"),
                           m_db} +
               more;
    }

    static QJsonObject readJson(const QString& path)
    {
        QFile file(path);
        if (!file.open(QIODevice::ReadOnly))
            return {};
        return QJsonDocument::fromJson(file.readAll()).object();
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(QStringLiteral("runs.sqlite"));
        m_config = writeTinyConfig(m_dir.path());
        QVERIFY(!m_config.isEmpty());
    }

    void advisesATrainedConfigAndWritesItsFormats()
    {
        const CliResult r =
            runCli(advise(QStringLiteral("a.json"), {QStringLiteral("--format"), QStringLiteral("mxfp4"),
                                                     QStringLiteral("--budget"), QStringLiteral("1")}));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(r.err.contains(QStringLiteral("training the baseline (tiny, fp32)")), qPrintable(r.err));
        QVERIFY2(r.err.contains(QStringLiteral("probe 1/2: 0.linear in mxfp4")), qPrintable(r.err));
        QVERIFY2(r.err.contains(QStringLiteral("probe 2/2: 1.linear in mxfp4")), qPrintable(r.err));
        for (const char* column : {"layer", "FLOPs", "probe dloss", "score", "shadow rel.err", "chosen"})
            QVERIFY2(r.out.contains(QLatin1String(column)), column);
        QVERIFY2(r.out.contains(QStringLiteral("rank correlation of score and probe (Spearman)")), qPrintable(r.out));
        const QJsonObject line = r.json();
        const QJsonArray layers = line.value(QStringLiteral("layers")).toArray();
        QCOMPARE(layers.size(), 2);
        QCOMPARE(layers[0].toObject().value(QStringLiteral("layer")).toString(), QStringLiteral("0.linear"));
        QCOMPARE(layers[0].toObject().value(QStringLiteral("flops")).toInteger(), qint64(2 * 32 * 64));
        // With a budget of 1 (far above what 4-bit weights cost this model) both layers go low.
        QVERIFY(line.value(QStringLiteral("within_budget")).toBool());
        const QJsonObject overrides = readJson(m_dir.filePath(QStringLiteral("a.json")))
                                          .value("model")
                                          .toObject()
                                          .value("precision_overrides")
                                          .toObject();
        for (const QJsonValue layer : layers) {
            const QString name = layer.toObject().value(QStringLiteral("layer")).toString();
            QCOMPARE(layer.toObject().value(QStringLiteral("chosen")).toString(), QStringLiteral("mxfp4"));
            QCOMPARE(overrides.value(name).toString(), QStringLiteral("mxfp4"));
        }
        QVERIFY(QFile::exists(m_dir.filePath(QStringLiteral("a.probes.json"))));
        QVERIFY(QFile::exists(m_dir.filePath(QStringLiteral("a.state.ckpt"))));
    }

    void aSecondAdviseReusesWhatWasMeasured()
    {
        const CliResult r =
            runCli(advise(QStringLiteral("a.json"), {QStringLiteral("--format"), QStringLiteral("mxfp4,mxfp8")}));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(r.err.contains(QStringLiteral("continuing from ")), qPrintable(r.err));
        QVERIFY2(!r.err.contains(QStringLiteral("training the baseline")), qPrintable(r.err));
        QVERIFY2(!r.err.contains(QStringLiteral("in mxfp4:")), qPrintable(r.err));
        QVERIFY2(r.err.contains(QStringLiteral("0.linear in mxfp8")), qPrintable(r.err));
        QVERIFY2(r.err.contains(QStringLiteral("1.linear in mxfp8")), qPrintable(r.err));
    }

    void aBudgetNothingMeetsGivesTheLeastLossFound()
    {
        const CliResult r =
            runCli(advise(QStringLiteral("a.json"), {QStringLiteral("--format"), QStringLiteral("mxfp4"),
                                                     QStringLiteral("--budget"), QStringLiteral("-10")}));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(r.out.contains(QStringLiteral("no assignment meets the loss budget -10")), qPrintable(r.out));
        QVERIFY(!r.json().value(QStringLiteral("within_budget")).toBool());
    }

    void namesTheLayerAFormatCannotTake()
    {
        // 1.linear has 4 outputs: NVFP4's blocks of 16 do not divide it.
        const CliResult r =
            runCli(advise(QStringLiteral("a.json"),
                          {QStringLiteral("--format"), QStringLiteral("nvfp4"), QStringLiteral("--score-only")}));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(r.out.contains(QStringLiteral("1.linear cannot take nvfp4:")), qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral("out features (4) is not a multiple of 16")), qPrintable(r.out));
        QVERIFY2(!r.out.contains(QStringLiteral("probe dloss")), qPrintable(r.out));
        const QJsonArray layers = r.json().value(QStringLiteral("layers")).toArray();
        QVERIFY(layers[1].toObject().value(QStringLiteral("chosen")).isNull());
    }

    void scoreOnlySpendsTheBudgetInEstimatedLoss()
    {
        // One layer is probed to scale the scores into loss units, the other is estimated; a
        // loss budget far above what 4-bit weights cost this model then lets both go low, and
        // the output says what the budget was spent on.
        const CliResult r = runCli(
            advise(QStringLiteral("s.json"), {QStringLiteral("--format"), QStringLiteral("mxfp4"),
                                              QStringLiteral("--score-only"), QStringLiteral("--calibration-probes"),
                                              QStringLiteral("1"), QStringLiteral("--budget"), QStringLiteral("1")}));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(r.err.contains(QStringLiteral("probe 1/1: ")), qPrintable(r.err));
        QVERIFY2(!r.err.contains(QStringLiteral("probe 2/")), qPrintable(r.err));
        QVERIFY2(r.out.contains(QStringLiteral("est. dloss")), qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral("(probe)")), qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral("score-only in mxfp4: estimated loss increase = score x ")),
                 qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral("the chosen layers' estimated loss increases add up to")),
                 qPrintable(r.out));
        const QJsonObject line = r.json();
        QVERIFY(line.value(QStringLiteral("score_scale")).toObject().value(QStringLiteral("mxfp4")).toDouble() > 0);
        const QJsonArray layers = line.value(QStringLiteral("layers")).toArray();
        QCOMPARE(layers.size(), 2);
        int measured = 0;
        for (const QJsonValue layer : layers) {
            const QJsonObject cell = layer.toObject().value(QStringLiteral("mxfp4")).toObject();
            measured += cell.contains(QStringLiteral("loss_increase")) ? 1 : 0;
            QVERIFY(cell.contains(QStringLiteral("estimated_loss_increase")));
            QCOMPARE(layer.toObject().value(QStringLiteral("chosen")).toString(), QStringLiteral("mxfp4"));
        }
        QCOMPARE(measured, 1);
    }

    void advisesAStoredRunFromItsSavedState()
    {
        const CliResult trained = runCli({QStringLiteral("train"), m_config, QStringLiteral("--db"), m_db});
        QVERIFY2(trained.exitCode == 0, qPrintable(trained.describe()));
        const QString run = QString::number(trained.json().value(QStringLiteral("run_id")).toInteger());
        const CliResult r = runCli({QStringLiteral("advise"), run, QStringLiteral("--format"), QStringLiteral("mxfp8"),
                                    QStringLiteral("--held-out-batches"), QStringLiteral("1"), QStringLiteral("-o"),
                                    m_dir.filePath(QStringLiteral("run.json")), QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(r.err.contains(QStringLiteral("probing the latest saved state of run ")), qPrintable(r.err));
        QVERIFY2(!r.err.contains(QStringLiteral("training the baseline")), qPrintable(r.err));
    }

    // --verify trains the advice against the baseline and the rules of thumb; --report writes
    // the advice with them: each layer's row as printed, the chart, and each configuration the
    // command printed, with the verification's gap to the baseline.
    void writesTheAdviceAndItsVerificationAsAReport()
    {
        const QString report = m_dir.filePath(QStringLiteral("advice.md"));
        const CliResult r = runCli(advise(QStringLiteral("v.json"),
                                          {QStringLiteral("--format"), QStringLiteral("mxfp4"),
                                           QStringLiteral("--budget"), QStringLiteral("1"), QStringLiteral("--verify"),
                                           QStringLiteral("2"), QStringLiteral("--report"), report}));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(r.err.contains(QStringLiteral("wrote ") + report), qPrintable(r.err));
        QFile file(report);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(file.readAll());
        QVERIFY(text.startsWith(QStringLiteral("# Mantissa precision advice")));
        QVERIFY(text.contains(QStringLiteral("![Loss increase per layer and format](advice-advice-sensitivity.png)")));
        QVERIFY(QFile::exists(m_dir.filePath(QStringLiteral("advice-advice-sensitivity.png"))));
        const QJsonObject line = r.json();
        for (const QJsonValue layer : line.value(QStringLiteral("layers")).toArray()) {
            const QString name = layer.toObject().value(QStringLiteral("layer")).toString();
            const QString chosen = layer.toObject().value(QStringLiteral("chosen")).toString();
            QVERIFY2(
                text.contains(QRegularExpression(
                    QStringLiteral("\\| %1 \\|[^\\n]*\\| %2 \\|\\n").arg(QRegularExpression::escape(name), chosen))),
                qPrintable(name + " " + chosen + "\n" + text));
        }
        QVERIFY(text.contains(QStringLiteral("## Verified over seeds")));
        // Each configuration the command printed is a row of the verification's table.
        const QStringList printed = r.out.section(QStringLiteral("verification over 2 seeds:"), 1)
                                        .section(QStringLiteral("sweep spec:"), 0, 0)
                                        .split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        QVERIFY(printed.size() >= 2);
        for (const QString& row : printed) {
            const QString name = row.trimmed().section(QStringLiteral("  "), 0, 0);
            QVERIFY2(text.contains(QStringLiteral("| ") + name + QStringLiteral(" |")) ||
                         text.contains(QStringLiteral("| **") + name + QStringLiteral("** |")),
                     qPrintable(name));
        }
        // The advised row's train-loss gap is the verification's difference with its interval.
        QJsonObject advisedLoss;
        for (const QJsonValue v : line.value(QStringLiteral("verification")).toObject().value("verdicts").toArray())
            if (v.toObject().value("metric").toString() == QStringLiteral("final_train_loss") &&
                v.toObject().value("baseline").toString().startsWith(QStringLiteral("baseline")) &&
                v.toObject().value("configuration").toString().startsWith(QStringLiteral("advised")))
                advisedLoss = v.toObject();
        QVERIFY2(!advisedLoss.isEmpty(), qPrintable(r.out));
        const auto number = [](double v) { return (v > 0 ? "+" : "") + QString::number(v, 'f', 5); };
        const QJsonArray ci = advisedLoss.value("ci95").toArray();
        const QString gap = QStringLiteral("%1 \\[%2, %3\\]")
                                .arg(number(advisedLoss.value("difference").toDouble()), number(ci[0].toDouble()),
                                     number(ci[1].toDouble()));
        QVERIFY2(text.contains(gap), qPrintable(gap + "\n" + text));
    }

    void refusesBadInputWithExitCodeTwo()
    {
        const QList<std::pair<QStringList, QString>> cases = {
            {{}, QStringLiteral("--format F[,F2] is required")},
            {{QStringLiteral("--format"), QStringLiteral("mxfp9")}, QStringLiteral("--format lists \"mxfp9\"")},
            {{QStringLiteral("--format"), QStringLiteral("mxfp4"), QStringLiteral("--objective"),
              QStringLiteral("speed")},
             QStringLiteral("--objective is \"speed\"")},
            {{QStringLiteral("--format"), QStringLiteral("mxfp4"), QStringLiteral("--calibration-probes"),
              QStringLiteral("2")},
             QStringLiteral("--calibration-probes applies to --score-only")},
            {{QStringLiteral("--format"), QStringLiteral("mxfp4"), QStringLiteral("--score-only"),
              QStringLiteral("--calibration-probes"), QStringLiteral("-1")},
             QStringLiteral("--calibration-probes expects an integer >= 0")},
            {{QStringLiteral("--format"), QStringLiteral("mxfp4"), QStringLiteral("--budget"), QStringLiteral("lots")},
             QStringLiteral("--budget expects a number")},
            {{QStringLiteral("--format"), QStringLiteral("mxfp4"), QStringLiteral("--verify"), QStringLiteral("1")},
             QStringLiteral("--verify needs 2 seeds or more")},
            {{QStringLiteral("--format"), QStringLiteral("mxfp4"), QStringLiteral("--report"), QStringLiteral("a.csv")},
             QStringLiteral("an advice's report is a .pdf, .html or .md file")},
        };
        for (const auto& [options, message] : cases) {
            const CliResult r = runCli(advise(QStringLiteral("bad.json"), options));
            QVERIFY2(r.exitCode == 2 && r.err.contains(message), qPrintable(r.describe()));
        }
        const CliResult unknown =
            runCli({QStringLiteral("advise"), QStringLiteral("no-such-run"), QStringLiteral("--format"),
                    QStringLiteral("mxfp4"), QStringLiteral("--db"), m_db});
        QVERIFY2(unknown.exitCode == 2 && unknown.err.contains(QStringLiteral("no-such-run")),
                 qPrintable(unknown.describe()));
        // Another config's measurements are not overwritten.
        const CliResult other =
            runCli({QStringLiteral("advise"), m_config, QStringLiteral("--format"), QStringLiteral("mxfp4"),
                    QStringLiteral("--set"), QStringLiteral("optimizer.lr=0.01"), QStringLiteral("-o"),
                    m_dir.filePath(QStringLiteral("a.json")), QStringLiteral("--db"), m_db});
        QVERIFY2(other.exitCode == 2 && other.err.contains(QStringLiteral("holds the measurements of another advise")),
                 qPrintable(other.describe()));
    }

private:
    QTemporaryDir m_dir;
    QString m_db, m_config;
};

QTEST_GUILESS_MAIN(CliAdviseTest)
#include "cli_advise_test.moc"
