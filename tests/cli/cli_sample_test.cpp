// mantissa-cli sample: a tiny causal transformer trained on "abcdefgh" repeated learns the
// cycle, so greedy sampling from "abc" continues it exactly, past the end of its 16-byte
// context; a seeded draw is the same every time and another seed gives other text; a run that
// is not a byte-level language model, a language-model run without stored weights and an empty
// prompt are refused with exit code 2 and a message naming the problem. Text runs report their
// test loss in bits per character too (train's epoch lines, show's epoch table).
#include "cli_test_support.h"
#include "storage/run_store.h"

#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

using namespace mantissa;
using namespace mantissa::cli::test;

namespace {

constexpr int kContext = 16;

bool writeFile(const QString& path, const QByteArray& contents)
{
    QFile file(path);
    return file.open(QIODevice::WriteOnly | QIODevice::Truncate) && file.write(contents) == contents.size();
}

// One causal pre-norm block of width 32 with a tied head; 15 epochs of 5 steps.
QByteArray languageModelConfig(const QString& textFile)
{
    return QStringLiteral(R"({
  "name": "cycle-lm",
  "model": {"input": [%1], "classes": 256, "layers": [
    {"type": "token_embedding", "vocabulary": 256, "units": 32},
    {"type": "positional_embedding"},
    {"type": "transformer", "heads": 2, "causal": true},
    {"type": "layernorm"},
    {"type": "linear", "units": 256, "bias": false, "tied": true}
  ]},
  "data": {"dataset": "text", "directory": "%2", "context": %1},
  "optimizer": {"type": "adamw", "lr": 0.01},
  "training": {"batch_size": 32, "epochs": 15, "seed": 3, "threads": 1}
}
)")
        .arg(kContext)
        .arg(textFile)
        .toUtf8();
}

} // namespace

class CliSampleTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(QStringLiteral("runs.sqlite"));
        const QString text = m_dir.filePath(QStringLiteral("cycle.txt"));
        QVERIFY(writeFile(text, QByteArray("abcdefgh").repeated(400)));
        const QString config = m_dir.filePath(QStringLiteral("cycle-lm.json"));
        QVERIFY(writeFile(config, languageModelConfig(text)));
        const CliResult trained = runCli({QStringLiteral("train"), config, QStringLiteral("--db"), m_db});
        QVERIFY2(trained.exitCode == 0, qPrintable(trained.describe()));
        m_lmId = runIdFromStderr(trained.err);
        m_trainErr = trained.err;
        QVERIFY(m_lmId > 0);
        QVERIFY2(trained.json().value(u"test_accuracy").toDouble() > 0.99, qPrintable(trained.describe()));

        const CliResult classifier =
            runCli({QStringLiteral("train"), writeTinyConfig(m_dir.path()), QStringLiteral("--db"), m_db});
        QVERIFY2(classifier.exitCode == 0, qPrintable(classifier.describe()));
        m_classifierId = runIdFromStderr(classifier.err);

        // A language-model run that ended before saving its weights.
        storage::RunStore store(m_db);
        storage::NewRun early;
        early.name = QStringLiteral("lm-without-weights");
        early.configJson = store.run(m_lmId).configJson;
        const qint64 id = store.createRun(early);
        RunSummary stopped;
        stopped.status = RunStatus::Stopped;
        store.finishRun(id, stopped);
    }

    void greedyContinuesTheLearnedCyclePastTheContext()
    {
        const int tokens = 3 * kContext;
        const CliResult r = sample({QStringLiteral("--prompt"), QStringLiteral("abc"), QStringLiteral("--tokens"),
                                    QString::number(tokens), QStringLiteral("--temperature"), QStringLiteral("0")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QCOMPARE(r.out, QString::fromLatin1(QByteArray("defghabc").repeated(6).left(tokens)) + u'\n');
        QVERIFY2(r.err.contains(QStringLiteral("context 16 bytes, temperature 0")), qPrintable(r.err));
    }

    void aSeedGivesTheSameTextAndAnotherSeedOtherText()
    {
        const QStringList hot{QStringLiteral("--prompt"), QStringLiteral("abcd"),          QStringLiteral("--tokens"),
                              QStringLiteral("40"),       QStringLiteral("--temperature"), QStringLiteral("4")};
        const CliResult first = sample(hot + QStringList{QStringLiteral("--seed"), QStringLiteral("5")});
        const CliResult again = sample(hot + QStringList{QStringLiteral("--seed"), QStringLiteral("5")});
        const CliResult other = sample(hot + QStringList{QStringLiteral("--seed"), QStringLiteral("6")});
        QVERIFY2(first.exitCode == 0, qPrintable(first.describe()));
        QCOMPARE(first.out.toLatin1().size(), 41); // 40 bytes and the newline
        QCOMPARE(again.out, first.out);
        QVERIFY2(other.out != first.out, qPrintable(first.out + " / " + other.out));
    }

    void textRunsReportBitsPerCharacter()
    {
        // "test loss 0.0123 (0.018 bits per character)" on each epoch line of `train`.
        const QRegularExpression epochLine(QStringLiteral(R"(test loss ([0-9.]+) \(([0-9.]+) bits per character\))"));
        int lines = 0;
        for (auto it = epochLine.globalMatch(m_trainErr); it.hasNext(); ++lines) {
            const QRegularExpressionMatch m = it.next();
            QVERIFY2(std::abs(m.captured(2).toDouble() - m.captured(1).toDouble() / std::log(2.0)) < 1e-3,
                     qPrintable(m.captured(0)));
        }
        QCOMPARE(lines, 15); // one per epoch
        const CliResult lm = runCli({QStringLiteral("show"), QString::number(m_lmId), QStringLiteral("--db"), m_db});
        QVERIFY2(lm.out.contains(QStringLiteral("test loss  test bpc")), qPrintable(lm.out));
        const CliResult classifier =
            runCli({QStringLiteral("show"), QString::number(m_classifierId), QStringLiteral("--db"), m_db});
        QVERIFY2(classifier.exitCode == 0 && !classifier.out.contains(QStringLiteral("bpc")),
                 qPrintable(classifier.out));
    }

    void refusesWhatItCannotSampleFrom_data()
    {
        QTest::addColumn<QString>("run");
        QTest::addColumn<QString>("prompt");
        QTest::addColumn<QString>("expected");
        QTest::newRow("a classifier") << QStringLiteral("classifier") << QStringLiteral("abc")
                                      << QStringLiteral("is not a byte-level language model: its first layer is "
                                                        "linear, not a token_embedding");
        QTest::newRow("no stored weights") << QStringLiteral("lm-without-weights") << QStringLiteral("abc")
                                           << QStringLiteral("(lm-without-weights) (stopped) has no stored weights");
        QTest::newRow("an empty prompt") << QStringLiteral("lm") << QString() << QStringLiteral("the prompt is empty");
    }
    void refusesWhatItCannotSampleFrom()
    {
        QFETCH(QString, run);
        QFETCH(QString, prompt);
        QFETCH(QString, expected);
        const QString id = run == QLatin1String("lm")           ? QString::number(m_lmId)
                           : run == QLatin1String("classifier") ? QString::number(m_classifierId)
                                                                : run;
        const CliResult r = runCli({QStringLiteral("sample"), id, QStringLiteral("--prompt"), prompt,
                                    QStringLiteral("--tokens"), QStringLiteral("5"), QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 2, qPrintable(r.describe()));
        QVERIFY2(r.err.contains(expected), qPrintable(r.describe()));
        QVERIFY2(r.out.isEmpty(), qPrintable(r.describe()));
    }

private:
    CliResult sample(const QStringList& options) const
    {
        return runCli(QStringList{QStringLiteral("sample"), QString::number(m_lmId), QStringLiteral("--db"), m_db,
                                  QStringLiteral("--threads"), QStringLiteral("1")} +
                      options);
    }

    QTemporaryDir m_dir;
    QString m_db, m_trainErr;
    qint64 m_lmId = 0, m_classifierId = 0;
};

QTEST_GUILESS_MAIN(CliSampleTest)
#include "cli_sample_test.moc"
