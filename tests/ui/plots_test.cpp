// The plots' own logic: overflow markers found under the mouse, bulk appends that only add
// what is new, the debiased moving average behind the smoothed loss, the loss plot's
// log axis, and the epoch plot's unit (accuracy, or bits per character for text runs).
#include "ui/comparison_table_model.h"
#include "ui/comparison_view.h"
#include "ui/loss_scale_plot.h"
#include "ui/run_monitor.h"
#include "ui/smoothing.h"

#include <QCheckBox>

#include <QtTest>

#include <cmath>

using namespace mantissa::ui;
using mantissa::DatasetKind;

class PlotsTest : public QObject {
    Q_OBJECT

private slots:
    void anOverflowMarkerIsFoundUnderTheMouseAndOnlyThere()
    {
        LossScalePlot plot;
        plot.resize(600, 400);
        RunRecording run;
        for (int step = 1; step <= 100; ++step) {
            run.step << step;
            run.lossScale << (step < 50 ? 65536.0 : 32768.0);
        }
        run.overflows << OverflowMarker{50, 65536, 32768, "2.linear.weight", "2.linear", "1 Inf in 2.linear.weight"};
        plot.addRun("run", Qt::blue, true);
        plot.sync(0, run);
        plot.sync(0, run); // a second sync with nothing new appends nothing
        QCOMPARE(plot.graph(0)->dataCount(), 100);
        QCOMPARE(plot.overflowGraph()->dataCount(), 1);
        plot.resetView();

        const QPointF marker(plot.xAxis->coordToPixel(50), plot.yAxis->coordToPixel(65536));
        const OverflowMarker* hit = plot.markerAt(marker + QPointF(2, -2));
        QVERIFY(hit);
        QCOMPARE(hit->parameter, QString("2.linear.weight"));
        QCOMPARE(hit->scaleAfter, 32768.0);
        QVERIFY(!plot.markerAt(marker + QPointF(40, 0)));
    }

    void theMovingAverageIsDebiasedAndSkipsNonFiniteLosses()
    {
        // A constant series stays constant from its first point (no drag towards zero).
        for (double v : smoothed({2, 2, 2, 2}, 0.9))
            QCOMPARE(v, 2.0);
        EmaSmoother s(0.5);
        QCOMPARE(s.add(4), 4.0);
        QVERIFY(std::isnan(s.add(NAN))); // a gap in the curve, not a poisoned average
        QCOMPARE(s.add(4), 4.0);
        const QVector<double> raw = smoothed({1, 3}, 0.0);
        QCOMPARE(raw, QVector<double>({1, 3})); // weight 0 is the raw curve
    }

    void theLogLossAxisIsLogarithmicAroundTheLossesAndOffRestoresLinear_data()
    {
        QTest::addColumn<QVector<double>>("losses");
        QTest::addColumn<double>("smallest"); // the smallest positive finite loss
        QTest::addColumn<double>("largest");  // the largest finite loss
        QTest::newRow("falling from 2.3 to 0.05") << QVector<double>{2.3, 1.4, 0.9, 0.4, 0.2, 0.1, 0.05} << 0.05 << 2.3;
        // A diverged 16-bit step records an infinite loss and a fully fitted one can round to
        // 0: neither has a place on a log axis, and neither may take the range from the rest.
        QTest::newRow("with an infinite and a zero loss")
            << QVector<double>{2.3, 1.4, qInf(), 0.9, 0.4, 0.0, 0.1, 0.05} << 0.05 << 2.3;
        QTest::newRow("flat") << QVector<double>{0.7, 0.7, 0.7} << 0.7 << 0.7;
    }

    void theLogLossAxisIsLogarithmicAroundTheLossesAndOffRestoresLinear()
    {
        QFETCH(QVector<double>, losses);
        QFETCH(double, smallest);
        QFETCH(double, largest);
        auto recording = std::make_shared<RunRecording>();
        for (qsizetype i = 0; i < losses.size(); ++i) {
            recording->step << double(i + 1);
            recording->loss << losses[i];
            recording->learningRate << 0.1;
            recording->lossScale << 1.0;
            recording->samplesPerSecond << 1000.0;
        }
        RunMonitor monitor;
        monitor.resize(900, 700);
        monitor.setRecording(recording);
        PlotWidget* plot = monitor.lossPlot();
        auto* toggle = monitor.findChild<QCheckBox*>();
        QVERIFY(toggle);
        QCOMPARE(toggle->text(), QStringLiteral("Log loss axis"));

        toggle->setChecked(true);
        QVERIFY(plot->logY());
        QCOMPARE(plot->yAxis->scaleType(), QCPAxis::stLogarithmic);
        QVERIFY(dynamic_cast<QCPAxisTickerLog*>(plot->yAxis->ticker().data()));
        QCPRange range = plot->yAxis->range();
        QVERIFY2(range.lower > 0, qPrintable(describe(range)));
        // Covers every finite positive loss, with a margin of less than a decade each side.
        QVERIFY2(range.lower < smallest && range.lower > smallest / 10, qPrintable(describe(range)));
        QVERIFY2(range.upper > largest && range.upper < largest * 10, qPrintable(describe(range)));

        toggle->setChecked(false);
        QVERIFY(!plot->logY());
        QCOMPARE(plot->yAxis->scaleType(), QCPAxis::stLinear);
        QVERIFY(!dynamic_cast<QCPAxisTickerLog*>(plot->yAxis->ticker().data()));
        range = plot->yAxis->range();
        QVERIFY2(std::isfinite(range.lower) && std::isfinite(range.upper), qPrintable(describe(range)));
        QVERIFY2(range.lower < smallest && range.upper > largest, qPrintable(describe(range)));
        QVERIFY2(range.size() < 2 * (largest - range.lower) + 1, qPrintable(describe(range)));
    }

    void aTextRunsEpochPlotIsInBitsPerCharacterAndAClassifiersInPercent()
    {
        auto text = epochRecording(DatasetKind::Text, {2.0, 1.5}, {0.30, 0.45});
        auto images = epochRecording(DatasetKind::FashionMnist, {0.6, 0.4}, {0.80, 0.85});

        RunMonitor monitor;
        monitor.setRecording(text);
        PlotWidget* plot = monitor.accuracyPlot();
        QCOMPARE(plot->title(), QStringLiteral("Bits per character"));
        QCOMPARE(plot->yAxis->label(), QStringLiteral("bits per character"));
        // Test loss 1.5 nats is 1.5 / ln 2 = 2.164 bits per character; not the 45% accuracy.
        QCOMPARE(plot->graph(0)->dataCount(), 2);
        QCOMPARE(plot->graph(0)->data()->at(1)->value, 1.5 / std::log(2.0));
        QCOMPARE(recordingStateText(*text), QStringLiteral("finished: test 2.164 bits per character"));

        // The same monitor showing a classifier goes back to percent.
        monitor.setRecording(images);
        QCOMPARE(plot->title(), QStringLiteral("Accuracy"));
        QCOMPARE(plot->yAxis->label(), QStringLiteral("accuracy (%)"));
        QCOMPARE(plot->graph(0)->data()->at(1)->value, 85.0);
        QCOMPARE(recordingStateText(*images), QStringLiteral("finished: test accuracy 85.00%"));

        // A comparison uses bits only when every run is a text run: one axis holds one unit.
        ComparisonView comparison;
        comparison.setRuns({text, text});
        QCOMPARE(comparison.plots()[1]->yAxis->label(), QStringLiteral("bits per character"));
        QCOMPARE(comparison.plots()[1]->graph(1)->data()->at(0)->value, 2.0 / std::log(2.0));
        comparison.setRuns({text, images});
        QCOMPARE(comparison.plots()[1]->yAxis->label(), QStringLiteral("accuracy (%)"));
    }

    void aRegressionRunsEpochPlotIsInRmse()
    {
        auto regression = epochRecording(DatasetKind::Files, {0.25, 0.04}, {NAN, NAN});
        regression->config.data.task = mantissa::DataTask::Regression;
        RunMonitor monitor;
        monitor.setRecording(regression);
        PlotWidget* plot = monitor.accuracyPlot();
        QCOMPARE(plot->title(), QStringLiteral("RMSE"));
        // Test loss 0.04 (mean squared error) is an RMSE of 0.2.
        QCOMPARE(plot->graph(0)->data()->at(1)->value, 0.2);
        QCOMPARE(recordingStateText(*regression), QStringLiteral("finished: test RMSE 0.2"));
    }

    // A run that held out validation samples has a validation curve on both epoch plots and a
    // Validation entry in the comparison's table; one that did not has neither.
    void validationFiguresAreDrawnWhereSamplesWereHeldOut()
    {
        auto held = epochRecording(DatasetKind::FashionMnist, {0.6, 0.4}, {0.80, 0.85});
        held->validationLoss = {0.55, 0.45};
        held->validationAccuracy = {0.82, 0.84};
        auto plain = epochRecording(DatasetKind::FashionMnist, {0.6, 0.4}, {0.80, 0.85});
        plain->validationLoss = {NAN, NAN};
        plain->validationAccuracy = {NAN, NAN};
        const auto graphNamed = [](PlotWidget* plot, const QString& name) -> QCPGraph* {
            for (int i = 0; i < plot->graphCount(); ++i)
                if (plot->graph(i)->name() == name)
                    return plot->graph(i);
            return nullptr;
        };
        RunMonitor monitor;
        monitor.setRecording(held);
        QCPGraph* accuracy = graphNamed(monitor.accuracyPlot(), QStringLiteral("validation"));
        QCPGraph* loss = graphNamed(monitor.lossPlot(), QStringLiteral("validation loss (per epoch)"));
        QVERIFY(accuracy && loss);
        QVERIFY(accuracy->visible() && loss->visible());
        QCOMPARE(accuracy->dataCount(), 2);
        QCOMPARE(accuracy->data()->at(1)->value, 84.0);
        QCOMPARE(loss->data()->at(0)->key, 10.0); // at the step the epoch ended
        QCOMPARE(loss->data()->at(0)->value, 0.55);
        QVERIFY(monitor.accuracyPlot()->legend->hasItemWithPlottable(accuracy));
        monitor.setRecording(plain);
        accuracy = graphNamed(monitor.accuracyPlot(), QStringLiteral("validation"));
        QVERIFY(accuracy && !accuracy->visible());
        QVERIFY(!monitor.accuracyPlot()->legend->hasItemWithPlottable(accuracy));

        ComparisonTableModel table;
        table.setRuns({held, plain});
        QCOMPARE(table.headerData(ComparisonTableModel::ValidationMetric, Qt::Horizontal).toString(),
                 QStringLiteral("Validation"));
        QCOMPARE(table.data(table.index(0, ComparisonTableModel::ValidationMetric)).toString(),
                 QStringLiteral("84.00%"));
        QCOMPARE(table.data(table.index(1, ComparisonTableModel::ValidationMetric)).toString(), QStringLiteral("—"));
        QCOMPARE(table.data(table.index(0, ComparisonTableModel::TestAccuracy)).toString(), QStringLiteral("85.00%"));
    }

    // Runs that did not see the same data (their fingerprints differ) are compared with a warning.
    void aComparisonWarnsWhenTheRunsSawDifferentData()
    {
        auto a = epochRecording(DatasetKind::Files, {0.6, 0.4}, {0.80, 0.85});
        auto b = epochRecording(DatasetKind::Files, {0.6, 0.4}, {0.80, 0.85});
        a->name = "a";
        b->name = "b";
        a->dataFingerprint = "00000000000000aa";
        b->dataFingerprint = "00000000000000aa";
        ComparisonView comparison;
        comparison.setRuns({a, b});
        QCOMPARE(comparison.dataWarning(), QString());
        b->dataFingerprint = "00000000000000bb";
        comparison.setRuns({a, b});
        QVERIFY2(comparison.dataWarning().startsWith(QStringLiteral("Not the same data: these runs did not see the "
                                                                    "same data")),
                 qPrintable(comparison.dataWarning()));
        QVERIFY(comparison.dataWarning().contains(QStringLiteral("b saw data fingerprint 00000000000000bb")));
    }

private:
    static std::shared_ptr<RunRecording> epochRecording(mantissa::DatasetKind dataset, QVector<double> testLoss,
                                                        QVector<double> testAccuracy)
    {
        auto run = std::make_shared<RunRecording>();
        run->name = "run";
        run->config.data.dataset = dataset;
        for (qsizetype i = 0; i < testLoss.size(); ++i) {
            run->epoch << double(i + 1);
            run->epochEndStep << double(10 * (i + 1));
            run->testLoss << testLoss[i];
            run->trainLoss << testLoss[i] + 0.1;
            run->testAccuracy << testAccuracy[i];
            run->trainAccuracy << testAccuracy[i];
        }
        run->summary = mantissa::RunSummary{};
        run->summary->status = mantissa::RunStatus::Finished;
        return run;
    }

    static QString describe(const QCPRange& range)
    {
        return QString("range %1 .. %2").arg(range.lower).arg(range.upper);
    }
};

QTEST_MAIN(PlotsTest)
#include "plots_test.moc"
