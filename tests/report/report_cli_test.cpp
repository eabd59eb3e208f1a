// `mantissa-cli report` as a user runs it: runs by id and by name, each format, the
// baseline option, MANTISSA_DB, no display needed, and the errors (exit code 2, a message
// naming the problem, no file written).
#include "synthetic_runs.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

using namespace mantissa::report::test;

namespace {

struct Result {
    int exitCode = -1;
    QString out, err;
};

// Runs `mantissa-cli COMMAND ARGUMENTS` without a display and without QT_QPA_PLATFORM: the
// command must pick the offscreen platform itself.
Result runCommand(const QString& command, const QStringList& arguments, const QString& databaseEnvironment = {})
{
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.remove(QStringLiteral("QT_QPA_PLATFORM"));
    environment.remove(QStringLiteral("DISPLAY"));
    environment.remove(QStringLiteral("WAYLAND_DISPLAY"));
    environment.remove(QStringLiteral("MANTISSA_DB"));
    if (!databaseEnvironment.isEmpty())
        environment.insert(QStringLiteral("MANTISSA_DB"), databaseEnvironment);
    QProcess process;
    process.setProcessEnvironment(environment);
    process.start(QStringLiteral(MANTISSA_CLI), QStringList{command} + arguments);
    Result result;
    if (!process.waitForFinished(60000))
        return result;
    result.exitCode = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    result.out = QString::fromUtf8(process.readAllStandardOutput());
    result.err = QString::fromUtf8(process.readAllStandardError());
    return result;
}

Result runCli(const QStringList& arguments, const QString& databaseEnvironment = {})
{
    return runCommand(QStringLiteral("report"), arguments, databaseEnvironment);
}

QString readText(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? QString::fromUtf8(file.readAll()) : QString();
}

} // namespace

class ReportCliTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_sample = writeSampleDatabase(m_dir.filePath(QStringLiteral("runs.sqlite")));
    }

    void writesEachFormat_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QStringList>("written");
        QTest::newRow("pdf") << "cmp.pdf" << QStringList{"cmp.pdf"};
        QTest::newRow("html") << "cmp.html" << QStringList{"cmp.html"};
        QTest::newRow("markdown") << "cmp.md"
                                  << QStringList{"cmp.md", "cmp-loss.png", "cmp-accuracy.png", "cmp-loss-scale.png",
                                                 "cmp-throughput.png"};
        QTest::newRow("csv") << "cmp.csv" << QStringList{"cmp.csv", "cmp-epochs.csv"};
    }

    void writesEachFormat()
    {
        QFETCH(QString, file);
        QFETCH(QStringList, written);
        QTemporaryDir out;
        // One run by id, the other by name.
        const Result result = runCli(
            {QString::number(m_sample.fp32), m_sample.mixedSpec.name, "-o", out.filePath(file), "--db", m_sample.path});
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        QStringList expected;
        for (const QString& name : written)
            expected << out.filePath(name);
        QCOMPARE(result.out.split('\n', Qt::SkipEmptyParts), expected);
        for (const QString& path : expected)
            QVERIFY2(QFile(path).size() > 0, qPrintable(path));
    }

    void baselineAndEnvironment()
    {
        QTemporaryDir out;
        const QString path = out.filePath(QStringLiteral("r.html"));
        // The baseline need not be listed; the database comes from MANTISSA_DB.
        const Result result =
            runCli({m_sample.mixedSpec.name, "--baseline", m_sample.fp32Spec.name, "-o", path}, m_sample.path);
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QString html = QString::fromUtf8(file.readAll());
        QVERIFY(html.contains(QStringLiteral("mlp-fp32-1 (baseline)")));
        QVERIFY(html.contains(QStringLiteral("in fp32,")));
    }

    void helpExitsZero()
    {
        const Result result = runCli({"--help"});
        QCOMPARE(result.exitCode, 0);
        QVERIFY(result.out.contains(QStringLiteral("--baseline")));
    }

    void refusesBadInput_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QString>("message");
        QTest::newRow("unknown run") << QStringList{"mlp-fp32-1", "no-such-run", "-o", "OUT/r.pdf"} << "no-such-run";
        QTest::newRow("unknown id") << QStringList{"9999", "-o", "OUT/r.pdf"} << "9999";
        QTest::newRow("unknown baseline") << QStringList{"1", "--baseline", "ghost", "-o", "OUT/r.pdf"} << "ghost";
        QTest::newRow("no output") << QStringList{"1"} << "-o FILE";
        QTest::newRow("unknown format") << QStringList{"1", "-o", "OUT/r.docx"} << "unknown report format";
        QTest::newRow("no run") << QStringList{"-o", "OUT/r.pdf"} << "at least one run";
        QTest::newRow("missing directory") << QStringList{"1", "-o", "OUT/missing/r.pdf"} << "does not exist";
        QTest::newRow("unknown option") << QStringList{"1", "-o", "OUT/r.pdf", "--colour"} << "colour";
    }

    void refusesBadInput()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QString, message);
        QTemporaryDir out;
        arguments.replaceInStrings(QStringLiteral("OUT"), out.path());
        const Result result = runCli(arguments + QStringList{"--db", m_sample.path});
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(message), qPrintable(result.err));
        QVERIFY2(result.err.startsWith(QStringLiteral("mantissa-cli report: ")) ||
                     result.err.contains(QStringLiteral("\nmantissa-cli report: ")),
                 qPrintable(result.err));
        QVERIFY(QDir(out.path()).isEmpty());
    }

    // Runs of an imported model (PyTorch's MLP fixture of tests/onnx) describe the file and its
    // nodes rather than a layer list, also once the file has moved (the stored copy is read).
    void describesAnImportedModel()
    {
        if (!QFile::exists(QStringLiteral(MANTISSA_ONNX_MLP)))
            QSKIP("no ONNX fixture (a build without ONNX support)");
        QTemporaryDir dir;
        const QString model = dir.filePath(QStringLiteral("mlp.onnx"));
        QVERIFY(QFile::copy(QStringLiteral(MANTISSA_ONNX_MLP), model));
        const QString db = dir.filePath(QStringLiteral("runs.sqlite"));
        for (const char* precision : {"fp32", "mixed-bf16"}) {
            const Result trained =
                runCommand(QStringLiteral("train"),
                           {model, "--data", "synthetic", "--max-steps", "2", "--limit-train", "256", "--limit-test",
                            "64", "--threads", "1", "--precision", precision, "--db", db});
            QVERIFY2(trained.exitCode == 0, qPrintable(trained.err));
        }
        QFile file(model);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QString sha256 =
            QString::fromLatin1(QCryptographicHash::hash(file.readAll(), QCryptographicHash::Sha256).toHex());
        file.close();
        const auto report = [&](const QString& name) {
            const QString path = dir.filePath(name);
            const Result result = runCli({"1", "2", "-o", path, "--db", db});
            return result.exitCode == 0 ? readText(path)
                                        : QStringLiteral("exit %1: %2").arg(result.exitCode).arg(result.err);
        };
        const QString markdown = report(QStringLiteral("r.md"));
        QVERIFY2(markdown.contains(QStringLiteral("Imported from the ONNX file mlp.onnx")), qPrintable(markdown));
        QVERIFY2(markdown.contains(sha256), qPrintable(markdown));
        // The fixture: Flatten, three Gemms, Relu and Tanh; 3x8x8 -> 64 -> 32 -> 10.
        QVERIFY2(markdown.contains(QStringLiteral("6 nodes (3 Gemm, 1 Flatten, 1 Relu, 1 Tanh), 14,762 parameters")),
                 qPrintable(markdown));
        for (const char* node : {"/fc1/Gemm", "/fc2/Gemm", "/head/Gemm"})
            QVERIFY2(markdown.contains(QLatin1String(node)), node);
        // One precision column per mode, the node's compute type under each.
        QVERIFY2(markdown.contains(QStringLiteral("In fp32")) && markdown.contains(QStringLiteral("In mixed-bf16")),
                 qPrintable(markdown));
        QVERIFY2(markdown.contains(QStringLiteral("| bf16")), qPrintable(markdown));
        QVERIFY2(!markdown.contains(QStringLiteral("| input |")), "no layer table of a layer list");

        // The file moved away: the stored copy describes it all the same.
        QVERIFY(QFile::rename(model, dir.filePath(QStringLiteral("elsewhere.onnx"))));
        const QString moved = report(QStringLiteral("moved.md"));
        QVERIFY2(moved.contains(QStringLiteral("6 nodes (3 Gemm")) && moved.contains(sha256), qPrintable(moved));
    }

private:
    QTemporaryDir m_dir;
    SampleDatabase m_sample;
};

QTEST_GUILESS_MAIN(ReportCliTest)
#include "report_cli_test.moc"
