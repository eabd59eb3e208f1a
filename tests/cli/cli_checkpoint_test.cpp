// The fine-tuning round trip through mantissa-cli: an fp32 run saves checkpoints (every epoch
// here) that the store lists and `show` prints; `train --init-from RUN --precision mixed-fp16`
// starts from the run's last checkpoint (with a learning rate of 1e-30 its weights stay the fp32
// run's, bit for bit, and its evaluation matches the fp32 run's within fp16 rounding). A missing
// run, a run without a checkpoint, a corrupt file and a model of other shapes are refused with
// exit code 2, a message naming the problem, and no run left behind.
#include "cli_test_support.h"
#include "storage/run_store.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMap>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

using namespace mantissa;
using namespace mantissa::cli::test;

namespace {

// The tiny MLP on synthetic data; `hidden` units in its hidden layer, learning rate `lr`.
QString writeConfig(const QString& directory, const QString& name, int hidden, double lr, const QString& training)
{
    const QString json = QStringLiteral(R"({
  "name": "%1",
  "model": {"input": [32], "classes": 4, "layers": [
    {"type": "linear", "units": %2, "activation": "relu"},
    {"type": "linear", "units": 4}
  ]},
  "data": {"dataset": "synthetic", "synthetic_shape": [32], "synthetic_classes": 4,
           "synthetic_train": 512, "synthetic_test": 256},
  "optimizer": {"type": "sgd", "lr": %3, "momentum": 0.9},
  "training": {"batch_size": 32, "seed": 7, "threads": 1, %4}
}
)")
                             .arg(name)
                             .arg(hidden)
                             .arg(lr)
                             .arg(training);
    const QString path = QDir(directory).filePath(name + QStringLiteral(".json"));
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return {};
    file.write(json.toUtf8());
    return path;
}

// The weights and buffers of a checkpoint file (optimizer state left out), by tensor name,
// as the raw bytes of their fp32 values: equal maps are bit-equal weights.
QMap<QString, QByteArray> checkpointWeights(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    if (file.readLine().trimmed() != "MANTISSA-CHECKPOINT 1")
        return {};
    const QJsonArray tensors = QJsonDocument::fromJson(file.readLine()).object().value(u"tensors").toArray();
    QMap<QString, QByteArray> weights;
    for (const QJsonValue& t : tensors) {
        qint64 count = 1;
        for (const QJsonValue& d : t.toObject().value(u"shape").toArray())
            count *= d.toInteger();
        const QByteArray values = file.read(count * qint64(sizeof(float)));
        const QString name = t.toObject().value(u"name").toString();
        if (!name.contains(u'#'))
            weights.insert(name, values);
    }
    return weights;
}

double lastTestLoss(const storage::RunStore& store, qint64 runId)
{
    const QList<EpochRecord> epochs = store.epochs(runId);
    return epochs.isEmpty() ? NAN : double(epochs.last().testLoss);
}

} // namespace

class CliCheckpointTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(QStringLiteral("runs.sqlite"));
        // Two epochs of 16 steps, a checkpoint after each.
        m_base = writeConfig(m_dir.path(), QStringLiteral("base"), 64, 0.05,
                             QStringLiteral(R"("epochs": 2, "checkpoint_every_epochs": 1)"));
        // The same model with a learning rate of 1e-30 (0 is refused): an update, below half an ulp
        // of any trained weight, leaves the weights exactly as loaded.
        m_frozen = writeConfig(m_dir.path(), QStringLiteral("frozen"), 64, 1e-30, QStringLiteral(R"("epochs": 1)"));
        m_wide = writeConfig(m_dir.path(), QStringLiteral("wide"), 128, 0.05, QStringLiteral(R"("epochs": 1)"));
        QVERIFY(!m_base.isEmpty() && !m_frozen.isEmpty() && !m_wide.isEmpty());

        const CliResult r = runCli({QStringLiteral("train"), m_base, QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        m_baseId = r.json().value(QStringLiteral("run_id")).toInteger();
        QVERIFY(m_baseId > 0);

        // A run that ended before saving anything (an old or a crashed run looks the same).
        storage::RunStore store(m_db);
        storage::NewRun early;
        early.name = QStringLiteral("stopped-early");
        early.configJson = QStringLiteral("{}");
        const qint64 id = store.createRun(early);
        RunSummary stopped;
        stopped.status = RunStatus::Stopped;
        store.finishRun(id, stopped);
        QFile corrupt(m_dir.filePath(QStringLiteral("corrupt.ckpt")));
        QVERIFY(corrupt.open(QIODevice::WriteOnly));
        corrupt.write("not a checkpoint\n");
    }

    void anFp32RunListsItsCheckpoints()
    {
        storage::RunStore store(m_db);
        const QList<storage::CheckpointInfo> checkpoints = store.checkpoints(m_baseId);
        QCOMPARE(checkpoints.size(), 2);
        QCOMPARE(checkpoints[0].epoch, 1);
        QCOMPARE(checkpoints[0].step, qint64(16));
        QCOMPARE(checkpoints[1].epoch, 2);
        QCOMPARE(checkpoints[1].step, qint64(32));
        const CliResult show =
            runCli({QStringLiteral("show"), QString::number(m_baseId), QStringLiteral("--db"), m_db});
        QVERIFY2(show.exitCode == 0, qPrintable(show.describe()));
        for (const storage::CheckpointInfo& c : checkpoints) {
            QVERIFY2(QFile::exists(c.absolutePath), qPrintable(c.absolutePath));
            QVERIFY2(
                show.out.contains(QStringLiteral("epoch %1, step %2: %3").arg(c.epoch).arg(c.step).arg(c.absolutePath)),
                qPrintable(show.out));
        }
    }

    void fineTunesTheFp32RunInMixedFp16FromItsWeights()
    {
        const QString baseName = storage::RunStore(m_db).run(m_baseId).name;
        const CliResult r =
            runCli({QStringLiteral("train"), m_frozen, QStringLiteral("--init-from"), baseName,
                    QStringLiteral("--precision"), QStringLiteral("mixed-fp16"), QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(r.err.contains(QStringLiteral("starting from the weights of run %1 (%2), epoch 2, step 32")
                                    .arg(m_baseId)
                                    .arg(baseName)),
                 qPrintable(r.err));
        const qint64 tunedId = r.json().value(QStringLiteral("run_id")).toInteger();
        // The same config without --init-from: fresh weights.
        const CliResult fresh = runCli({QStringLiteral("train"), m_frozen, QStringLiteral("--precision"),
                                        QStringLiteral("mixed-fp16"), QStringLiteral("--db"), m_db});
        QVERIFY2(fresh.exitCode == 0, qPrintable(fresh.describe()));
        const qint64 freshId = fresh.json().value(QStringLiteral("run_id")).toInteger();

        storage::RunStore store(m_db);
        const QString source = store.checkpoints(m_baseId).last().absolutePath;
        const storage::RunInfo tuned = store.run(tunedId);
        QCOMPARE(tuned.precision, QStringLiteral("mixed-fp16"));
        const QJsonObject training =
            QJsonDocument::fromJson(tuned.configJson.toUtf8()).object().value(u"training").toObject();
        QCOMPARE(training.value(u"init_from").toString(), source);
        const CliResult show = runCli({QStringLiteral("show"), QString::number(tunedId), QStringLiteral("--db"), m_db});
        QCOMPARE(showField(show.out, QStringLiteral("weights from")), source);

        // Its master weights are the fp32 run's, bit for bit: loaded exactly, and not moved by updates
        // of 1e-30.
        const QList<storage::CheckpointInfo> tunedCheckpoints = store.checkpoints(tunedId);
        QCOMPARE(tunedCheckpoints.size(), 1); // the end of the run
        const QMap<QString, QByteArray> original = checkpointWeights(source);
        QVERIFY(original.size() >= 4); // two layers' weights and biases
        QVERIFY(original == checkpointWeights(tunedCheckpoints[0].absolutePath));
        QVERIFY(original != checkpointWeights(store.checkpoints(freshId).last().absolutePath));

        // Evaluated in mixed fp16 it scores what the fp32 run scored, within fp16 rounding; a fresh
        // model is far off.
        const double fp32Loss = lastTestLoss(store, m_baseId);
        const double tunedLoss = lastTestLoss(store, tunedId);
        const double freshLoss = lastTestLoss(store, freshId);
        QVERIFY2(std::abs(tunedLoss - fp32Loss) <= 1e-2 * fp32Loss,
                 qPrintable(QStringLiteral("fp32 %1, fine-tune %2").arg(fp32Loss).arg(tunedLoss)));
        QVERIFY2(std::abs(freshLoss - fp32Loss) > 0.1 * fp32Loss,
                 qPrintable(QStringLiteral("fp32 %1, fresh %2").arg(fp32Loss).arg(freshLoss)));
    }

    void refusesWhatItCannotStartFrom_data()
    {
        QTest::addColumn<QString>("config");
        QTest::addColumn<QString>("initFrom");
        QTest::addColumn<QStringList>("expected");
        QTest::newRow("no such run or file")
            << QStringLiteral("frozen") << QStringLiteral("no-such-run")
            << QStringList{QStringLiteral(
                   "--init-from \"no-such-run\" is neither a run in this database nor a checkpoint file")};
        QTest::newRow("a run without a checkpoint")
            << QStringLiteral("frozen") << QStringLiteral("stopped-early")
            << QStringList{QStringLiteral("run "), QStringLiteral("(stopped-early, stopped) has no checkpoint")};
        QTest::newRow("a corrupt file") << QStringLiteral("frozen") << QStringLiteral("corrupt.ckpt")
                                        << QStringList{QStringLiteral("training.init_from: "),
                                                       QStringLiteral("corrupt.ckpt: not a Mantissa checkpoint")};
        QTest::newRow("other shapes")
            << QStringLiteral("wide") << QStringLiteral("base")
            << QStringList{
                   QStringLiteral("training.init_from: "),
                   QStringLiteral(
                       "tensor 1.linear.weight has shape [4, 64] in the checkpoint but [4, 128] in this model")};
    }
    void refusesWhatItCannotStartFrom()
    {
        QFETCH(QString, config);
        QFETCH(QString, initFrom);
        QFETCH(QStringList, expected);
        const qsizetype runsBefore = storage::RunStore(m_db).listRuns().size();
        const QString value = initFrom == QLatin1String("base")           ? QString::number(m_baseId)
                              : initFrom.endsWith(QLatin1String(".ckpt")) ? m_dir.filePath(initFrom)
                                                                          : initFrom;
        const QString path = QDir(m_dir.path()).filePath(config + QStringLiteral(".json"));
        const CliResult r =
            runCli({QStringLiteral("train"), path, QStringLiteral("--init-from"), value, QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 2, qPrintable(r.describe()));
        for (const QString& part : expected)
            QVERIFY2(r.err.contains(part), qPrintable(r.describe()));
        QCOMPARE(storage::RunStore(m_db).listRuns().size(), runsBefore); // nothing left behind
    }

private:
    QTemporaryDir m_dir;
    QString m_db, m_base, m_frozen, m_wide;
    qint64 m_baseId = 0;
};

QTEST_GUILESS_MAIN(CliCheckpointTest)
#include "cli_checkpoint_test.moc"
