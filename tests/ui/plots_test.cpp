// The plots' own logic: overflow markers found under the mouse, bulk appends that only add
// what is new, and the debiased moving average behind the smoothed loss.
#include "ui/loss_scale_plot.h"
#include "ui/smoothing.h"

#include <QtTest>

#include <cmath>

using namespace mantissa::ui;

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
        run.overflows << OverflowMarker{50, 65536, 32768, "2.linear.weight", "2.linear"};
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
};

QTEST_MAIN(PlotsTest)
#include "plots_test.moc"
