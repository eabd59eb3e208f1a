// mantissa-cli fork RUN --at STEP end to end: a mixed-fp16 run with dynamic loss scaling saves
// its state every 5 steps; a fork with no changes continues it bit for bit (every step's loss
// and loss scale after the fork step, read back from the database), is recorded as the parent's
// fork at that step (`show`, the store), and a fork with changes trains in its own settings.
// A step without a saved state (the steps that have one are listed), an unknown run, a model of
// other shapes and a missing or malformed --at are refused with exit code 2 and no run left behind.
#include "cli_test_support.h"
#include "storage/run_store.h"

#include <QTemporaryDir>
#include <QTest>

#include <bit>

using namespace mantissa;
using namespace mantissa::cli::test;

class CliForkTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(QStringLiteral("runs.sqlite"));
        // Two epochs of 16 steps; the scale starts at the top so that steps overflow and back
        // off, and grows every 4 good steps: the scaler's state matters at every fork step.
        TinyConfig tiny;
        tiny.epochs = 2;
        tiny.extraJson = QStringLiteral(
            R"("precision": {"mode": "mixed-fp16", "loss_scale": {"type": "dynamic", "initial": 16777216,
                "growth_interval": 4}})");
        m_config = writeTinyConfig(m_dir.path(), tiny);
        QVERIFY(!m_config.isEmpty());
        const CliResult r = runCli({QStringLiteral("train"), m_config, QStringLiteral("--save-state-every"),
                                    QStringLiteral("5"), QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        m_parentId = r.json().value(QStringLiteral("run_id")).toInteger();
        QVERIFY(m_parentId > 0);
    }

    void theRunSavesItsStateEveryFiveSteps()
    {
        storage::RunStore store(m_db);
        QList<qint64> steps;
        for (const storage::CheckpointInfo& c : store.checkpoints(m_parentId))
            steps << c.step;
        QCOMPARE(steps, (QList<qint64>{5, 10, 15, 20, 25, 30, 32}));
    }

    void aForkWithNoChangesContinuesBitForBit()
    {
        const CliResult r =
            runCli({QStringLiteral("fork"), QString::number(m_parentId), QStringLiteral("--at"), QStringLiteral("10"),
                    QStringLiteral("--name"), QStringLiteral("unchanged-from-10"), QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(r.err.contains(QStringLiteral("resuming after step 10 (epoch 1, batch 10 of 16")), qPrintable(r.err));
        QVERIFY2(r.err.contains(QStringLiteral("loss scaler (scale")), qPrintable(r.err));
        const qint64 forkId = r.json().value(QStringLiteral("run_id")).toInteger();
        storage::RunStore store(m_db);
        const storage::RunInfo fork = store.run(forkId);
        QVERIFY(fork.parent.has_value());
        QCOMPARE(fork.parent->runId, std::optional<qint64>(m_parentId));
        QCOMPARE(fork.parent->step, qint64(10));
        QVERIFY(!store.run(m_parentId).parent.has_value());

        const storage::StepSeries parent = store.steps(m_parentId), child = store.steps(forkId);
        QCOMPARE(child.size(), qsizetype(22));
        QCOMPARE(child.step.first(), 11.0);
        int skipped = 0;
        for (qsizetype i = 0; i < child.size(); ++i) {
            const qsizetype p = i + 10;
            QCOMPARE(parent.step[p], child.step[i]);
            QVERIFY2(std::bit_cast<quint64>(parent.loss[p]) == std::bit_cast<quint64>(child.loss[i]),
                     qPrintable(QStringLiteral("step %1: %2 vs %3")
                                    .arg(child.step[i])
                                    .arg(parent.loss[p], 0, 'g', 17)
                                    .arg(child.loss[i], 0, 'g', 17)));
            QCOMPARE(child.lossScale[i], parent.lossScale[p]);
            QCOMPARE(child.skipped[i], parent.skipped[p]);
        }
        for (qsizetype i = 0; i < parent.size(); ++i)
            skipped += parent.skipped[i] ? 1 : 0;
        QVERIFY2(skipped > 0, "the parent needs skipped steps for the scaler's state to matter");
        // The second epoch, which the fork trained whole, evaluates the same.
        QCOMPARE(store.epochs(forkId).last().testLoss, store.epochs(m_parentId).last().testLoss);

        const CliResult show = runCli({QStringLiteral("show"), QString::number(forkId), QStringLiteral("--db"), m_db});
        QVERIFY2(show.exitCode == 0, qPrintable(show.describe()));
        QCOMPARE(showField(show.out, QStringLiteral("forked from")),
                 QStringLiteral("run %1 (%2) after step 10").arg(m_parentId).arg(store.run(m_parentId).name));
    }

    void aForkTrainsInTheSettingsItChanges()
    {
        const CliResult r =
            runCli({QStringLiteral("fork"), QString::number(m_parentId), QStringLiteral("--at"), QStringLiteral("20"),
                    QStringLiteral("--precision"), QStringLiteral("fp32"), QStringLiteral("--loss-scale"),
                    QStringLiteral("1024"), QStringLiteral("--set"), QStringLiteral("optimizer.lr=0.2"),
                    QStringLiteral("--name"), QStringLiteral("fp32-from-20"), QStringLiteral("--db"), m_db});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(r.err.contains(QStringLiteral("the loss scaler starts fresh (dynamic before)")), qPrintable(r.err));
        storage::RunStore store(m_db);
        const storage::RunInfo fork = store.findRun(QStringLiteral("fp32-from-20"));
        QCOMPARE(fork.precision, QStringLiteral("fp32"));
        QCOMPARE(fork.parent->step, qint64(20));
        const storage::StepSeries steps = store.steps(fork.id);
        QCOMPARE(steps.step.first(), 21.0);
        QCOMPARE(float(steps.learningRate.first()), 0.2f);
    }

    // The lineage read back: `runs` names each fork's parent and step, `show` lists a run's
    // forks, `runs --forks-of` its forks only and `runs --tree` every descendant under its parent.
    void theLineageIsListedAndTheForksOfARunFound()
    {
        storage::RunStore store(m_db);
        const storage::RunInfo unchanged = store.findRun(QStringLiteral("unchanged-from-10"));
        const storage::RunInfo fp32 = store.findRun(QStringLiteral("fp32-from-20"));
        // A fork of a fork: the tree's second level.
        const CliResult grandchild =
            runCli({QStringLiteral("fork"), QString::number(unchanged.id), QStringLiteral("--at"), QStringLiteral("15"),
                    QStringLiteral("--name"), QStringLiteral("from-15-of-the-fork"), QStringLiteral("--db"), m_db});
        QVERIFY2(grandchild.exitCode == 0, qPrintable(grandchild.describe()));
        const qint64 grandchildId = grandchild.json().value(QStringLiteral("run_id")).toInteger();
        const QString parentName = store.run(m_parentId).name;

        const CliResult runs = runCli({QStringLiteral("runs"), QStringLiteral("--db"), m_db});
        QVERIFY2(runs.exitCode == 0, qPrintable(runs.describe()));
        const auto rowOf = [](const QString& table, const QString& name) {
            for (const QString& line : table.split(u'\n'))
                if (line.contains(QStringLiteral(" %1 ").arg(name)))
                    return line;
            return QString();
        };
        QVERIFY2(rowOf(runs.out, unchanged.name).contains(QStringLiteral("#%1 at step 10").arg(m_parentId)),
                 qPrintable(runs.out));
        QVERIFY2(rowOf(runs.out, fp32.name).contains(QStringLiteral("#%1 at step 20").arg(m_parentId)),
                 qPrintable(runs.out));
        QVERIFY2(rowOf(runs.out, QStringLiteral("from-15-of-the-fork"))
                     .contains(QStringLiteral("#%1 at step 15").arg(unchanged.id)),
                 qPrintable(runs.out));
        QVERIFY2(!rowOf(runs.out, parentName).contains(QStringLiteral(" at step ")), qPrintable(runs.out));

        const CliResult show =
            runCli({QStringLiteral("show"), QString::number(m_parentId), QStringLiteral("--db"), m_db});
        QVERIFY2(show.exitCode == 0, qPrintable(show.describe()));
        QCOMPARE(showField(show.out, QStringLiteral("forks")),
                 QStringLiteral("run %1 (%2) after step 10").arg(unchanged.id).arg(unchanged.name));
        QVERIFY2(show.out.contains(QStringLiteral("run %1 (%2) after step 20\n").arg(fp32.id).arg(fp32.name)),
                 qPrintable(show.out));
        const CliResult leaf =
            runCli({QStringLiteral("show"), QString::number(grandchildId), QStringLiteral("--db"), m_db});
        QCOMPARE(showField(leaf.out, QStringLiteral("forks")), QString());

        const CliResult forksOf = runCli({QStringLiteral("runs"), QStringLiteral("--forks-of"),
                                          QString::number(m_parentId), QStringLiteral("--db"), m_db});
        QVERIFY2(forksOf.exitCode == 0, qPrintable(forksOf.describe()));
        QCOMPARE(forksOf.out.count(QStringLiteral(" at step ")), 2);
        QVERIFY(!rowOf(forksOf.out, unchanged.name).isEmpty() && !rowOf(forksOf.out, fp32.name).isEmpty());

        const CliResult tree = runCli({QStringLiteral("runs"), QStringLiteral("--tree"), QStringLiteral("--db"), m_db});
        QVERIFY2(tree.exitCode == 0, qPrintable(tree.describe()));
        QStringList names;
        for (const QString& line : tree.out.split(u'\n').mid(1)) // below the header
            if (const QStringList cells = line.split(QStringLiteral("  "), Qt::SkipEmptyParts); cells.size() > 1)
                names << cells[1].trimmed();
        QCOMPARE(names, (QStringList{parentName, QStringLiteral("\\_ ") + unchanged.name,
                                     QStringLiteral("\\_ from-15-of-the-fork"), QStringLiteral("\\_ ") + fp32.name}));
        QVERIFY2(tree.out.contains(QStringLiteral("   \\_ from-15-of-the-fork")), qPrintable(tree.out));
    }

    void aStepWithoutSavedStateIsRefusedListingTheStepsThatHaveOne()
    {
        const int before = runCount();
        const CliResult r = runCli({QStringLiteral("fork"), QString::number(m_parentId), QStringLiteral("--at"),
                                    QStringLiteral("7"), QStringLiteral("--db"), m_db});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(QStringLiteral("has no saved training state at step 7; it has one at steps 5, 10, 15, "
                                               "20, 25, 30 and 32; the nearest are 5 and 10")),
                 qPrintable(r.err));
        QCOMPARE(runCount(), before);
    }

    void anUnknownRunIsRefused()
    {
        const int before = runCount();
        const CliResult r = runCli({QStringLiteral("fork"), QStringLiteral("no-such-run"), QStringLiteral("--at"),
                                    QStringLiteral("5"), QStringLiteral("--db"), m_db});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(QStringLiteral("no run \"no-such-run\"")), qPrintable(r.err));
        QCOMPARE(runCount(), before);
    }

    void aForkThatChangesTheModelsShapeIsRefused()
    {
        const int before = runCount();
        const CliResult r =
            runCli({QStringLiteral("fork"), QString::number(m_parentId), QStringLiteral("--at"), QStringLiteral("5"),
                    QStringLiteral("--set"), QStringLiteral("model.input=16"), QStringLiteral("--set"),
                    QStringLiteral("data.synthetic_shape=16"), QStringLiteral("--db"), m_db});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(QStringLiteral("a fork keeps its parent's model shape (the saved weights must fit): "
                                               "model.input is \"16\" in the fork but \"")),
                 qPrintable(r.err));
        QCOMPARE(runCount(), before);
    }

    void aMissingOrMalformedStepIsRefused()
    {
        const CliResult missing =
            runCli({QStringLiteral("fork"), QString::number(m_parentId), QStringLiteral("--db"), m_db});
        QCOMPARE(missing.exitCode, 2);
        QVERIFY2(missing.err.contains(QStringLiteral("--at STEP is required")), qPrintable(missing.err));
        const CliResult malformed = runCli({QStringLiteral("fork"), QString::number(m_parentId), QStringLiteral("--at"),
                                            QStringLiteral("ten"), QStringLiteral("--db"), m_db});
        QCOMPARE(malformed.exitCode, 2);
        QVERIFY2(malformed.err.contains(QStringLiteral("--at is \"ten\"")), qPrintable(malformed.err));
    }

private:
    int runCount() const
    {
        storage::RunStore store(m_db);
        return static_cast<int>(store.listRuns().size());
    }

    QTemporaryDir m_dir;
    QString m_db;
    QString m_config;
    qint64 m_parentId = 0;
};

QTEST_GUILESS_MAIN(CliForkTest)
#include "cli_fork_test.moc"
