// The task's metric past the single run: a regression table trained with a validation split
// stores its validation loss and RMSE per epoch and `show` prints them beside the test's; a
// sweep of regression runs is summarised, compared and judged on the test RMSE (lower is
// better), not on an accuracy it does not have.
#include "cli_test_support.h"
#include "engine/observe/task_metric.h"
#include "storage/run_store.h"

#include <QFile>
#include <QJsonArray>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

using namespace mantissa;
using namespace mantissa::cli::test;

namespace {

void writeFile(const QString& path, const QByteArray& bytes)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
    file.write(bytes);
}

// y = a - 2 b + 1 over a grid, and a config of one linear layer that learns it as regression.
void writeRegression(const QTemporaryDir& dir, double validationSplit)
{
    QByteArray rows = "a,b,y\n";
    for (int i = 0; i < 200; ++i) {
        const double a = (i % 20) / 10.0, b = (i / 20) / 10.0;
        rows += QByteArray::number(a) + "," + QByteArray::number(b) + "," + QByteArray::number(a - 2 * b + 1) + "\n";
    }
    writeFile(dir.filePath(QStringLiteral("r.csv")), rows);
    writeFile(dir.filePath(QStringLiteral("linear.json")),
              QStringLiteral(R"({"name": "linear", "model": {"input": [2], "classes": 1, "layers": [
                                  {"type": "linear", "units": 1}]},
                                "data": {"dataset": "files", "path": "%1", "task": "regression",
                                         "validation_split": %2},
                                "optimizer": {"type": "sgd", "lr": 0.1, "momentum": 0.9},
                                "training": {"batch_size": 16, "epochs": 3, "seed": 7, "threads": 1}})")
                  .arg(dir.filePath(QStringLiteral("r.csv")))
                  .arg(validationSplit)
                  .toUtf8());
}

} // namespace

class CliTaskMetricTest : public QObject {
    Q_OBJECT

private slots:
    void validationFiguresAreStoredAndShown()
    {
        QTemporaryDir dir;
        writeRegression(dir, 0.25);
        const QString db = dir.filePath(QStringLiteral("runs.sqlite"));
        const CliResult trained =
            runCli({QStringLiteral("train"), dir.filePath(QStringLiteral("linear.json")), QStringLiteral("--db"), db});
        QVERIFY2(trained.exitCode == 0, qPrintable(trained.describe()));
        QVERIFY2(trained.err.contains(QStringLiteral("epoch 3: validation loss ")), qPrintable(trained.describe()));

        storage::RunStore store(db);
        const QList<EpochRecord> epochs = store.epochs(1);
        QCOMPARE(epochs.size(), 3);
        for (const EpochRecord& e : epochs) {
            QVERIFY(std::isfinite(e.validationLoss) && e.validationLoss >= 0);
            QVERIFY(std::isnan(e.validationAccuracy)); // regression has no accuracy
        }
        const storage::RunInfo run = store.run(1);
        QCOMPARE(run.summary.finalTestLoss, std::optional<double>(epochs.last().testLoss));
        double lowest = INFINITY;
        for (const EpochRecord& e : epochs)
            lowest = std::min(lowest, double(e.testLoss));
        QCOMPARE(run.summary.bestTestLoss, std::optional<double>(lowest));

        const CliResult shown = runCli({QStringLiteral("show"), QStringLiteral("1"), QStringLiteral("--db"), db});
        QVERIFY2(shown.exitCode == 0, qPrintable(shown.describe()));
        QVERIFY2(shown.out.contains(QRegularExpression(QStringLiteral("val loss +val RMSE +time"))),
                 qPrintable(shown.out));
        // The last epoch's validation RMSE is the square root of its stored loss, as printed.
        const QString rmse =
            QString::fromStdString(formatTaskMetric(TaskMetric::Rmse, std::sqrt(double(epochs.last().validationLoss))));
        QVERIFY2(
            shown.out.contains(QRegularExpression(
                QStringLiteral("validation RMSE: +%1 final, [0-9.e-]+ best").arg(QRegularExpression::escape(rmse)))),
            qPrintable(shown.out));

        // Without a validation split there is nothing to show.
        QTemporaryDir plain;
        writeRegression(plain, 0);
        const QString plainDb = plain.filePath(QStringLiteral("runs.sqlite"));
        QVERIFY(runCli({QStringLiteral("train"), plain.filePath(QStringLiteral("linear.json")), QStringLiteral("--db"),
                        plainDb})
                    .exitCode == 0);
        const CliResult plainShown =
            runCli({QStringLiteral("show"), QStringLiteral("1"), QStringLiteral("--db"), plainDb});
        QVERIFY2(plainShown.exitCode == 0, qPrintable(plainShown.describe()));
        QVERIFY2(!plainShown.out.contains(QStringLiteral("val loss")), qPrintable(plainShown.out));
        QVERIFY2(!plainShown.out.contains(QStringLiteral("validation RMSE")), qPrintable(plainShown.out));
    }

    void aRegressionSweepIsJudgedOnItsRmse()
    {
        QTemporaryDir dir;
        writeRegression(dir, 0);
        const QString db = dir.filePath(QStringLiteral("runs.sqlite"));
        const QString spec = dir.filePath(QStringLiteral("sweep.json"));
        writeFile(spec, R"({"base": {"file": "linear.json"}, "precisions": ["fp32", "mixed-bf16"], "seeds": 3})");
        const CliResult swept = runCli(
            {QStringLiteral("sweep"), spec, QStringLiteral("--jobs"), QStringLiteral("2"), QStringLiteral("--db"), db});
        QVERIFY2(swept.exitCode == 0, qPrintable(swept.describe()));
        QVERIFY2(swept.err.contains(QRegularExpression(QStringLiteral("test RMSE [0-9.e-]+"))), qPrintable(swept.err));
        QVERIFY2(swept.out.contains(QStringLiteral("test RMSE (mean +/- sd [95% CI])")), qPrintable(swept.out));
        QVERIFY2(swept.out.contains(QStringLiteral("mixed-bf16 vs fp32: test RMSE ")), qPrintable(swept.out));
        QVERIFY2(swept.out.contains(QStringLiteral("+/-0.01 of test RMSE")), qPrintable(swept.out));
        QVERIFY2(!swept.out.contains(QStringLiteral("accuracy")), qPrintable(swept.out));

        const QJsonObject json = swept.json();
        QCOMPARE(json.value(QStringLiteral("metric")).toString(), QStringLiteral("RMSE"));
        storage::RunStore store(db);
        for (const QJsonValue& value : json.value(QStringLiteral("configurations")).toArray()) {
            const QJsonObject configuration = value.toObject();
            const QJsonObject metrics = configuration.value(QStringLiteral("metrics")).toObject();
            QVERIFY(!metrics.contains(QStringLiteral("final_test_accuracy")));
            const QJsonObject rmse = metrics.value(QStringLiteral("final_test_rmse")).toObject();
            QCOMPARE(rmse.value(QStringLiteral("n")).toInt(), 3);
            // The mean of the runs' final RMSE, each the square root of its stored test loss.
            double sum = 0;
            for (const QJsonValue& id : configuration.value(QStringLiteral("run_ids")).toArray())
                sum += std::sqrt(*store.run(id.toInteger()).summary.finalTestLoss);
            QVERIFY(std::abs(rmse.value(QStringLiteral("mean")).toDouble() - sum / 3) < 1e-12);
            QVERIFY(metrics.contains(QStringLiteral("best_test_rmse")));
        }
        const QJsonArray verdicts = json.value(QStringLiteral("verdicts")).toArray();
        QCOMPARE(verdicts.size(), 2);
        QCOMPARE(verdicts[0].toObject().value(QStringLiteral("metric")).toString(), QStringLiteral("final_test_rmse"));
        QCOMPARE(verdicts[0].toObject().value(QStringLiteral("margin")).toDouble(), 0.01);

        // The margin is the user's, in the targets' unit.
        const CliResult wide = runCli({QStringLiteral("sweep"), spec, QStringLiteral("--margin-rmse"),
                                       QStringLiteral("5"), QStringLiteral("--db"), db});
        QVERIFY2(wide.exitCode == 0, qPrintable(wide.describe()));
        QVERIFY2(wide.out.contains(QStringLiteral("mixed-bf16 vs fp32: test RMSE equivalent within +/-5")),
                 qPrintable(wide.out));
    }
};

QTEST_GUILESS_MAIN(CliTaskMetricTest)
#include "cli_task_metric_test.moc"
