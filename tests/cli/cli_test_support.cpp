#include "cli_test_support.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QTemporaryDir>

namespace mantissa::cli::test {

namespace {

const QTemporaryDir& sandbox()
{
    static const QTemporaryDir dir;
    return dir;
}

} // namespace

QStringList CliResult::outLines() const { return out.split(u'\n', Qt::SkipEmptyParts); }

QJsonObject CliResult::json() const
{
    const QStringList lines = outLines();
    return lines.isEmpty() ? QJsonObject() : QJsonDocument::fromJson(lines.last().toUtf8()).object();
}

QString CliResult::describe() const
{
    return QStringLiteral("exit %1%2\n--- stdout:\n%3--- stderr:\n%4")
        .arg(exitCode)
        .arg(finished ? QString() : QStringLiteral(" (did not finish)"), out, err);
}

QString cliPath() { return QStringLiteral(MANTISSA_CLI); }

QProcessEnvironment cliEnvironment()
{
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("XDG_DATA_HOME"), sandbox().filePath(QStringLiteral("xdg-data")));
    environment.remove(QStringLiteral("MANTISSA_DB"));
    return environment;
}

CliResult runCli(const QStringList& arguments, const QProcessEnvironment& environment, int timeoutMs)
{
    return runProgram(cliPath(), arguments, environment, timeoutMs);
}

CliResult runProgram(const QString& program, const QStringList& arguments, const QProcessEnvironment& environment,
                     int timeoutMs)
{
    QProcess process;
    process.setProcessEnvironment(environment);
    process.start(program, arguments);
    CliResult result;
    result.finished = process.waitForFinished(timeoutMs) && process.exitStatus() == QProcess::NormalExit;
    if (process.state() != QProcess::NotRunning) {
        process.kill();
        process.waitForFinished();
    }
    result.exitCode = result.finished ? process.exitCode() : -1;
    result.out = QString::fromUtf8(process.readAllStandardOutput());
    result.err = QString::fromUtf8(process.readAllStandardError());
    return result;
}

QString writeTinyConfig(const QString& directory, const TinyConfig& config)
{
    const QString json = QStringLiteral(R"({
  "name": "%1",
  "model": {"input": [32], "classes": 4, "layers": [
    {"type": "linear", "units": 64, "activation": "relu"},
    {"type": "linear", "units": 4}
  ]},
  "data": {"dataset": "synthetic", "synthetic_shape": [32], "synthetic_classes": 4,
           "synthetic_train": %2, "synthetic_test": %3},
  "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
  "training": {"batch_size": 32, "epochs": %4, "seed": 7, "threads": 1}%5
}
)")
                             .arg(config.name)
                             .arg(config.trainSamples)
                             .arg(config.testSamples)
                             .arg(config.epochs)
                             .arg(config.extraJson.isEmpty() ? QString() : QStringLiteral(",\n  ") + config.extraJson);
    const QString path = QDir(directory).filePath(config.name + QStringLiteral(".json"));
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return {};
    file.write(json.toUtf8());
    return path;
}

QString showField(const QString& showOutput, const QString& label)
{
    const QRegularExpression line(QStringLiteral("^\\s*%1:\\s+(.*)$").arg(QRegularExpression::escape(label)),
                                  QRegularExpression::MultilineOption);
    const QRegularExpressionMatch match = line.match(showOutput);
    return match.hasMatch() ? match.captured(1) : QString();
}

qint64 runIdFromStderr(const QString& err)
{
    static const QRegularExpression line(QStringLiteral("^run (\\d+) \\("), QRegularExpression::MultilineOption);
    const QRegularExpressionMatch match = line.match(err);
    return match.hasMatch() ? match.captured(1).toLongLong() : 0;
}

} // namespace mantissa::cli::test
