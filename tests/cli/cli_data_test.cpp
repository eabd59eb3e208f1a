// mantissa-cli data and train --data PATH, run as a user would: the summary of a table (its
// samples, classes' histogram, ranges, fingerprint), a run on that table storing the same
// fingerprint, bad data named with its line and column and exit status 2, and a path that is
// not there.
#include "cli_test_support.h"

#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

using namespace mantissa::cli::test;

namespace {

void writeFile(const QString& path, const QByteArray& bytes)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(bytes);
}

// 100 rows of two features and a label: feature 1 is the row number, feature 2 is 5 for
// every row, the label the row number mod 4.
QByteArray table()
{
    QByteArray csv = "x,constant,label\n";
    for (int i = 0; i < 100; ++i)
        csv += QByteArray::number(i) + ",5," + QByteArray::number(i % 4) + "\n";
    return csv;
}

} // namespace

class CliDataTest : public QObject {
    Q_OBJECT

private slots:
    void summarisesATableAndARunStoresItsFingerprint()
    {
        QTemporaryDir dir;
        const QString csv = dir.filePath(QStringLiteral("t.csv"));
        writeFile(csv, table());
        const CliResult r = runCli({QStringLiteral("data"), csv});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const auto field = [&](const QString& label) {
            for (const QString& line : r.outLines())
                if (line.startsWith(label + u' '))
                    return line.mid(label.size()).trimmed();
            return QString();
        };
        QCOMPARE(field(QStringLiteral("format")), QStringLiteral("csv"));
        QCOMPARE(field(QStringLiteral("samples")), QStringLiteral("80 training, 0 validation, 20 test"));
        QCOMPARE(field(QStringLiteral("sample shape")), QStringLiteral("[2]"));
        QCOMPARE(field(QStringLiteral("classes")), QStringLiteral("4"));
        QVERIFY2(r.out.contains(QStringLiteral("1 of 2 features hold one value")), qPrintable(r.out));
        QVERIFY2(r.out.contains(QRegularExpression(QStringLiteral("feature 2 +5 +5 +5\\n"))), qPrintable(r.out));
        // The histogram's rows add up to the samples of each split.
        int train = 0, test = 0;
        for (const QString& line : r.outLines()) {
            const QStringList cells = line.simplified().split(u' ');
            if (cells.size() == 3 && cells[0].size() == 1 && cells[0][0].isDigit()) {
                train += cells[1].toInt();
                test += cells[2].toInt();
            }
        }
        QCOMPARE(train, 80);
        QCOMPARE(test, 20);
        const QString fingerprint = field(QStringLiteral("fingerprint"));
        QCOMPARE(fingerprint.size(), 16);

        const QString config = writeTinyConfig(dir.path());
        const QString db = dir.filePath(QStringLiteral("runs.sqlite"));
        const CliResult trained =
            runCli({QStringLiteral("train"), config, QStringLiteral("--data"), csv, QStringLiteral("--db"), db,
                    QStringLiteral("--set"), QStringLiteral("model.input=2"), QStringLiteral("--set"),
                    QStringLiteral("model.classes=4")});
        QVERIFY2(trained.exitCode == 0, qPrintable(trained.describe()));
        const CliResult shown = runCli({QStringLiteral("show"), QStringLiteral("1"), QStringLiteral("--db"), db});
        QVERIFY2(shown.exitCode == 0, qPrintable(shown.describe()));
        QCOMPARE(showField(shown.out, QStringLiteral("data")), QStringLiteral("fingerprint ") + fingerprint);
    }

    void badDataIsNamedWithExitStatus2()
    {
        QTemporaryDir dir;
        const QString csv = dir.filePath(QStringLiteral("bad.csv"));
        writeFile(csv, "a,b,label\n1,2,0\n3,oops,1\n");
        const CliResult r = runCli({QStringLiteral("data"), csv});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(csv + QStringLiteral(":3: column 2 (b): \"oops\" is not a number")),
                 qPrintable(r.describe()));

        const QString missing = dir.filePath(QStringLiteral("missing.npy"));
        const CliResult none = runCli({QStringLiteral("data"), missing});
        QCOMPARE(none.exitCode, 2);
        QVERIFY2(none.err.contains(missing + QStringLiteral(": no such file or folder")), qPrintable(none.describe()));

        const QString odd = dir.filePath(QStringLiteral("table.dat"));
        writeFile(odd, table());
        const CliResult unknown = runCli({QStringLiteral("data"), odd});
        QCOMPARE(unknown.exitCode, 2);
        QVERIFY2(unknown.err.contains(QStringLiteral("--data-format")), qPrintable(unknown.describe()));
        const CliResult declared =
            runCli({QStringLiteral("data"), odd, QStringLiteral("--data-format"), QStringLiteral("csv")});
        QVERIFY2(declared.exitCode == 0, qPrintable(declared.describe()));

        // A run refuses the data before it records anything.
        const QString db = dir.filePath(QStringLiteral("runs.sqlite"));
        const CliResult trained = runCli({QStringLiteral("train"), writeTinyConfig(dir.path()),
                                          QStringLiteral("--data"), csv, QStringLiteral("--db"), db});
        QCOMPARE(trained.exitCode, 2);
        QVERIFY2(trained.err.contains(QStringLiteral("\"oops\" is not a number")), qPrintable(trained.describe()));
        const CliResult runs = runCli({QStringLiteral("runs"), QStringLiteral("--db"), db});
        QVERIFY2(!runs.out.contains(QStringLiteral("tiny")), qPrintable(runs.describe()));
    }

    // A table of real-valued targets trains as regression: each epoch's test RMSE, the stored
    // run's task and metric in show and runs, and its normalisation statistics per feature.
    void aRegressionTableTrainsAndIsShownWithItsRmse()
    {
        QTemporaryDir dir;
        const QString csv = dir.filePath(QStringLiteral("r.csv"));
        QByteArray rows = "a,b,y\n";
        for (int i = 0; i < 200; ++i) {
            const double a = (i % 20) / 10.0, b = (i / 20) / 10.0;
            rows +=
                QByteArray::number(a) + "," + QByteArray::number(b) + "," + QByteArray::number(a - 2 * b + 1) + "\n";
        }
        writeFile(csv, rows);
        // Declared regression: the first target, 1, is an integer, and tables default to classes.
        const CliResult refused = runCli({QStringLiteral("data"), csv});
        QCOMPARE(refused.exitCode, 2);
        QVERIFY2(refused.err.contains(csv + QStringLiteral(":3: column 3 (y): the label 1.1 is not a class index")),
                 qPrintable(refused.describe()));
        QVERIFY2(refused.err.contains(QStringLiteral("set data.task to regression")), qPrintable(refused.describe()));

        const QString db = dir.filePath(QStringLiteral("runs.sqlite"));
        const QString config = dir.filePath(QStringLiteral("linear.json"));
        writeFile(config, R"({"name": "linear", "model": {"input": [2], "classes": 1, "layers": [
                               {"type": "linear", "units": 1}]},
                             "optimizer": {"type": "sgd", "lr": 0.1, "momentum": 0.9},
                             "training": {"batch_size": 16, "epochs": 3, "seed": 7, "threads": 1}})");
        const CliResult trained =
            runCli({QStringLiteral("train"), config, QStringLiteral("--data"), csv, QStringLiteral("--task"),
                    QStringLiteral("regression"), QStringLiteral("--db"), db});
        QVERIFY2(trained.exitCode == 0, qPrintable(trained.describe()));
        QVERIFY2(
            trained.err.contains(QRegularExpression(QStringLiteral("epoch 3: train loss [0-9.]+, test loss [0-9.]+, "
                                                                   "test RMSE [0-9.e-]+"))),
            qPrintable(trained.describe()));
        QVERIFY2(trained.out.contains(QStringLiteral("\"test_rmse\"")), qPrintable(trained.describe()));

        const CliResult shown = runCli({QStringLiteral("show"), QStringLiteral("1"), QStringLiteral("--db"), db});
        QVERIFY2(shown.exitCode == 0, qPrintable(shown.describe()));
        QVERIFY2(shown.out.contains(QRegularExpression(QStringLiteral("test RMSE: +[0-9.e-]+ final, [0-9.e-]+ best"))),
                 qPrintable(shown.out));
        QVERIFY2(!shown.out.contains(QStringLiteral("test acc")), qPrintable(shown.out));
        QVERIFY2(shown.out.contains(QStringLiteral("normalised with the training split's per channel or feature: "
                                                   "mean ")),
                 qPrintable(shown.out));
        const CliResult runs = runCli({QStringLiteral("runs"), QStringLiteral("--db"), db});
        QVERIFY2(runs.out.contains(QRegularExpression(QStringLiteral("RMSE [0-9.e-]+"))), qPrintable(runs.out));
    }
};

QTEST_GUILESS_MAIN(CliDataTest)
#include "cli_data_test.moc"
