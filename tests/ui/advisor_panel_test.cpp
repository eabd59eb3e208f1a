// The Advise panel: the precision advisor on the current config, off the GUI thread, with
// Cancel between probes, the result table, and Apply as one undoable edit of
// model.precision_overrides.
#include "engine/config/presets.h"
#include "engine/util/enum_table.h"
#include "tests/ui/quick_config.h"
#include "ui/advisor_job.h"
#include "ui/advisor_panel.h"
#include "ui/config_document.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTest>

#include <atomic>

using namespace mantissa;
using namespace mantissa::ui;

namespace {

// The mlp preset, trained for a few steps on synthetic data: the probes take milliseconds.
RunConfig tinyConfig() { return test::quickConfig(presetConfig("mlp"), 8, 256); }

void checkFormat(AdvisorPanel& panel, const QString& key)
{
    for (int i = 0; i < panel.formats()->count(); ++i)
        if (panel.formats()->item(i)->data(Qt::UserRole).toString() == key)
            panel.formats()->item(i)->setCheckState(Qt::Checked);
}

bool waitForEnd(AdvisorPanel& panel)
{
    QSignalSpy finished(&panel, &AdvisorPanel::finished);
    return finished.count() > 0 || finished.wait(120000);
}

} // namespace

class AdvisorPanelTest : public QObject {
    Q_OBJECT
private slots:
    void formatsComeFromTheEngineTable()
    {
        ConfigDocument document;
        AdvisorPanel panel(&document);
        // Every format the engine accepts for a layer, auto (the config's own) excepted.
        QCOMPARE(panel.formats()->count(), static_cast<int>(enumEntries<LayerPrecision>().size()) - 1);
        for (int i = 0; i < panel.formats()->count(); ++i)
            QVERIFY(parseEnum<LayerPrecision>(panel.formats()->item(i)->data(Qt::UserRole).toString().toStdString()));
    }

    void probesShowsRowsAppliesAndUndoes()
    {
        ConfigDocument document;
        document.load(tinyConfig(), "tiny mlp");
        const PrecisionOverrides before = document.config().model.precisionOverrides;
        AdvisorPanel panel(&document);
        checkFormat(panel, "mxfp4");
        panel.budget()->setValue(10); // generous: any layer whose increase is below it may go low
        panel.heldOutBatches()->setValue(1);
        QVERIFY(!panel.applyButton()->isEnabled());
        QVERIFY(panel.startAdvice());
        QVERIFY(panel.isRunning());
        QVERIFY(!panel.adviseButton()->isEnabled());
        QVERIFY(waitForEnd(panel));
        QVERIFY2(panel.advice().has_value(), qPrintable(panel.errorLabel()->text()));

        const AdviceTable& advice = *panel.advice();
        QVERIFY(!advice.layers.empty());
        QCOMPARE(panel.table()->rowCount(), static_cast<int>(advice.layers.size()));
        const int chosenColumn = panel.table()->columnCount() - 1;
        for (int row = 0; row < panel.table()->rowCount(); ++row) {
            QCOMPARE(panel.table()->item(row, 0)->text().toStdString(),
                     advice.layers[static_cast<std::size_t>(row)].name);
            const std::string chosen = chosenFormat(advice, static_cast<std::size_t>(row));
            if (!chosen.empty())
                QCOMPARE(panel.table()->item(row, chosenColumn)->text().toStdString(), chosen);
            // The probe's loss increase, as measured.
            QCOMPARE(panel.table()->item(row, 2)->text().isEmpty(), false);
        }
        QVERIFY(panel.summary()->text().contains("Rank correlation"));
        QVERIFY(panel.applyButton()->isEnabled());

        QVERIFY(panel.applyAdvice());
        const PrecisionOverrides& applied = document.config().model.precisionOverrides;
        std::size_t chosenCount = 0;
        for (std::size_t l = 0; l < advice.layers.size(); ++l) {
            const std::string chosen = chosenFormat(advice, l);
            if (chosen.empty())
                continue;
            ++chosenCount;
            const auto it = applied.find(advice.layers[l].name);
            QVERIFY(it != applied.end());
            QVERIFY(it->second == LayerFormat(LayerPrecision::Mxfp4));
        }
        QVERIFY2(chosenCount > 0, "a budget of 10 should let at least one layer go to mxfp4");
        QCOMPARE(applied.size(), before.size() + chosenCount);

        document.undoStack()->undo();
        QVERIFY(document.config().model.precisionOverrides == before);
    }

    void cancelStopsBetweenProbes()
    {
        ConfigDocument document;
        document.load(tinyConfig(), "tiny mlp");
        AdvisorPanel panel(&document);
        checkFormat(panel, "mxfp8");
        checkFormat(panel, "mxfp4");
        panel.heldOutBatches()->setValue(1);
        // Cancel as the first probe starts, on the worker thread, so that the stop is asked for
        // while probe 1 is measured: the job must end before probe 2.
        std::atomic<int> probesStarted{0};
        std::atomic<int> probesTotal{0};
        connect(&panel, &AdvisorPanel::jobStarting, this, [&](AdvisorJob* job) {
            connect(
                job, &AdvisorJob::progress, job,
                [&, job](int, int total, const QString&) {
                    if (total == 0)
                        return;
                    probesTotal = total;
                    ++probesStarted;
                    job->cancel();
                },
                Qt::DirectConnection);
        });
        QVERIFY(panel.startAdvice());
        QVERIFY(waitForEnd(panel));
        QVERIFY(!panel.advice().has_value());
        QVERIFY(panel.errorLabel()->isHidden());
        QCOMPARE(probesStarted.load(), 1);
        QVERIFY(probesTotal.load() > 1);
        QVERIFY(panel.statusLabel()->text().contains("cancelled"));
        QVERIFY(!panel.applyButton()->isEnabled());
        QCOMPARE(panel.table()->rowCount(), 0);
    }

    void cancelButtonStopsTheBaselineTraining()
    {
        ConfigDocument document;
        document.load(test::quickConfig(presetConfig("mlp"), 100000, 4096), "long mlp");
        AdvisorPanel panel(&document);
        checkFormat(panel, "mxfp4");
        QVERIFY(panel.startAdvice());
        QVERIFY(panel.cancelButton()->isEnabled());
        QTest::mouseClick(panel.cancelButton(), Qt::LeftButton);
        QVERIFY(waitForEnd(panel));
        QVERIFY(!panel.advice().has_value());
        QVERIFY(panel.statusLabel()->text().contains("cancelled"));
        QVERIFY(panel.adviseButton()->isEnabled());
    }

    void aFormatIsRequired()
    {
        ConfigDocument document;
        document.load(tinyConfig(), "tiny mlp");
        AdvisorPanel panel(&document);
        QVERIFY(!panel.startAdvice());
        QVERIFY(!panel.errorLabel()->isHidden());
        QVERIFY(panel.errorLabel()->text().contains("format"));
    }

    void aBudgetNothingMeetsIsShown()
    {
        ConfigDocument document;
        document.load(tinyConfig(), "tiny mlp");
        AdvisorPanel panel(&document);
        checkFormat(panel, "mxfp4");
        panel.scoreOnly()->setChecked(true);
        panel.trainFirst()->setChecked(false);
        panel.heldOutBatches()->setValue(1);
        panel.budget()->setValue(-1); // a loss decrease of 1 no set of layers reaches
        QVERIFY(panel.startAdvice());
        QVERIFY(waitForEnd(panel));
        QVERIFY(panel.advice().has_value());
        QVERIFY(!panel.advice()->assignment.withinBudget);
        QVERIFY(!panel.errorLabel()->isHidden());
        QVERIFY(panel.errorLabel()->text().contains("No assignment meets the loss budget"));
    }
};

QTEST_MAIN(AdvisorPanelTest)
#include "advisor_panel_test.moc"
