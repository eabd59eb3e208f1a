#pragma once
// Shared by the CLI tests: run build/bin/mantissa-cli in a sandbox (its default database
// and MANTISSA_DB point into a temporary directory, never at the user's runs), write tiny
// synthetic configs that train in milliseconds, and read the CLI's output.
#include <QJsonObject>
#include <QProcess>
#include <QString>
#include <QStringList>

namespace mantissa::cli::test {

struct CliResult {
    int exitCode = -1;
    bool finished = false; // false: timed out or crashed
    QString out, err;

    QStringList outLines() const; // non-empty stdout lines
    QJsonObject json() const;     // the last stdout line as a JSON object (empty if it is not one)
    QString describe() const;     // exit code, stdout and stderr, for failure messages
};

QString cliPath();
// The environment the CLI runs in: XDG_DATA_HOME in the sandbox, MANTISSA_DB unset.
QProcessEnvironment cliEnvironment();
CliResult runCli(const QStringList& arguments, const QProcessEnvironment& environment = cliEnvironment(),
                 int timeoutMs = 120000);
// Any program, e.g. a shell that sets limits before it runs the CLI.
CliResult runProgram(const QString& program, const QStringList& arguments,
                     const QProcessEnvironment& environment = cliEnvironment(), int timeoutMs = 120000);

// A small MLP on synthetic data (32 features, 4 classes), one thread: 16 steps of batch 32
// per epoch with the defaults. `extraJson` is spliced into the top-level object, e.g.
// R"("precision": {"mode": "mixed-fp16"})".
struct TinyConfig {
    QString name = QStringLiteral("tiny");
    int epochs = 1;
    qint64 trainSamples = 512;
    qint64 testSamples = 256;
    QString extraJson;
};
QString writeTinyConfig(const QString& directory, const TinyConfig& config = {});

// The value of a "label: value" line of `show` ("status:  finished" -> "finished"), or a
// null string when no line has that label.
QString showField(const QString& showOutput, const QString& label);

// The id in the "run N (name) in FILE" line the CLI prints on stderr; 0 when absent.
qint64 runIdFromStderr(const QString& err);

} // namespace mantissa::cli::test
