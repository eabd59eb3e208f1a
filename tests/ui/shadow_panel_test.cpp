// The Numerics tab's shadow error page: a stored run with the track opens on it (it has no lens
// statistics), one heatmap row per tensor of the chosen kind in forward order and one column
// per shadowed step, coloured by log10 of the relative error (NaN where the run's tensor was
// not finite), the worst tensors listed first, and the steps written later taken on refresh.
#include "storage/run_store.h"
#include "storage/run_writer.h"
#include "tests/storage/test_support.h"
#include "ui/numerics_view.h"
#include "ui/shadow_error_panel.h"

#include <QComboBox>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <qcustomplot.h>

#include <cmath>

using namespace mantissa;
using namespace mantissa::storage;
using namespace mantissa::ui;

namespace {

ShadowError row(const std::string& tensor, ShadowTensor kind, double relativeRms, bool nonFinite = false)
{
    ShadowError e;
    e.layer = tensor;
    e.kind = kind;
    e.tensor = tensor;
    e.energies.count = 10;
    e.energies.nonFinite = nonFinite ? 1 : 0;
    e.energies.reference = 1;
    e.energies.compared = 1;
    e.energies.error = relativeRms * relativeRms;
    e.energies.dot = 1;
    return e;
}

ShadowRecord record(qint64 step)
{
    ShadowRecord r;
    r.step = step;
    r.errors = {row("0.linear", ShadowTensor::Output, 1e-4), row("0.linear.weight", ShadowTensor::WeightGrad, 1e-2),
                row("1.linear", ShadowTensor::Output, step == 20 ? 1e-3 : 1e-5),
                row("1.linear", ShadowTensor::InputGrad, 0, step == 30)};
    return r;
}

} // namespace

class ShadowPanelTest : public QObject {
    Q_OBJECT

private slots:
    void opensOnTheTrackAndDrawsItsHeatmap()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        RunStore store(path);
        const qint64 run = store.createRun(test::sampleRun());
        {
            RunWriter writer(path, run);
            for (qint64 n = 1; n <= 20; ++n) {
                writer.onStep(test::makeStep(n));
                if (n % 10 == 0)
                    writer.onShadow(record(n));
            }
            QVERIFY(writer.flush());

            NumericsView view;
            view.setRun(&store, run);
            QCOMPARE(view.pages()->currentWidget(), view.shadowPanel());
            ShadowErrorPanel* panel = view.shadowPanel();
            QCOMPARE(panel->rowNames(), QStringList({"0.linear", "1.linear"})); // outputs, forward order
            QCPColorMapData* data = panel->colorMap()->data();
            QCOMPARE(data->keySize(), 2);
            QCOMPARE(data->valueSize(), 2);
            QCOMPARE(data->cell(0, 0), -4.0); // 0.linear at step 10: log10(1e-4)
            QCOMPARE(data->cell(1, 1), -3.0); // 1.linear at step 20
            QCOMPARE(panel->worstTable()->rowCount(), 2);
            QCOMPARE(panel->worstTable()->item(0, 0)->text(), QStringLiteral("1.linear")); // mean 5.05e-4
            QCOMPARE(panel->worstTable()->item(0, 1)->text(), QStringLiteral("5.05e-04"));

            // Input gradients: the one row, exact at steps 10 and 20 (drawn at the floor).
            panel->kindCombo()->setCurrentIndex(1);
            QCOMPARE(panel->rowNames(), QStringList({"1.linear"}));
            QCOMPARE(data->cell(0, 0), -8.0);

            // A step written later arrives on refresh; its non-finite row is NaN (no colour of the scale).
            writer.onStep(test::makeStep(30));
            writer.onShadow(record(30));
            QVERIFY(writer.flush());
            QVERIFY(view.refresh());
            QCOMPARE(data->keySize(), 3);
            QVERIFY(std::isnan(data->cell(2, 0)));
            QCOMPARE(panel->worstTable()->item(0, 4)->text(), QStringLiteral("1")); // non-finite steps
        }
    }

    void saysHowToRecordIt()
    {
        ShadowErrorPanel panel;
        QVERIFY(!panel.hasSteps());
        QCOMPARE(panel.worstTable()->rowCount(), 0);
    }
};

QTEST_MAIN(ShadowPanelTest)
#include "shadow_panel_test.moc"
