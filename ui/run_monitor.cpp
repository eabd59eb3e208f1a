#include "ui/run_monitor.h"

#include "engine/config/distributed_summary.h"
#include "ui/epoch_metric.h"
#include "ui/loss_scale_plot.h"
#include "ui/plot_style.h"
#include "ui/plot_widget.h"

#include <QCheckBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QSlider>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace mantissa::ui {

QString recordingStateText(const RunRecording& r)
{
    if (!r.summary) {
        if (!r.start)
            return QObject::tr("loading data…");
        return QObject::tr("running: step %1 of %2")
            .arg(r.step.isEmpty() ? 0 : static_cast<qlonglong>(r.step.last()))
            .arg(r.start->totalSteps);
    }
    const RunSummary& s = *r.summary;
    QString text = QString::fromLatin1(runStatusName(s.status));
    if (const QString last = epochMetricFor(r.config).describeLast(r); !last.isEmpty())
        text += ": " + last;
    if (s.skippedSteps > 0)
        text += QObject::tr(", %n skipped step(s)", nullptr, static_cast<int>(s.skippedSteps));
    if (!s.message.empty())
        text += " — " + QString::fromStdString(s.message);
    return text;
}

RunMonitor::RunMonitor(QWidget* parent) : QWidget(parent)
{
    m_heading = new QLabel(tr("No run yet: press Run to train the model."));
    m_heading->setObjectName("monitorHeading");
    m_heading->setWordWrap(true);
    QFont headingFont = m_heading->font();
    headingFont.setBold(true);
    m_heading->setFont(headingFont);

    m_smoothingSlider = new QSlider(Qt::Horizontal);
    m_smoothingSlider->setObjectName("smoothing");
    m_smoothingSlider->setRange(0, 99);
    m_smoothingSlider->setValue(60);
    m_smoothingSlider->setMaximumWidth(180);
    m_smoothingSlider->setToolTip(tr("Weight of the exponential moving average over the per-step loss"));
    connect(m_smoothingSlider, &QSlider::valueChanged, this, [this](int v) { setSmoothing(v / 100.0); });
    m_logLoss = new QCheckBox(tr("Log loss axis"));
    auto* reset = new QPushButton(tr("Reset views"));
    auto* hint = new QLabel(tr("Drag to pan, wheel to zoom, right-click to save a plot as PNG or PDF."));
    hint->setStyleSheet("color: palette(mid);");

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Smoothing")));
    controls->addWidget(m_smoothingSlider);
    controls->addWidget(m_logLoss);
    controls->addWidget(reset);
    controls->addWidget(hint, 1);

    buildPlots();
    connect(m_logLoss, &QCheckBox::toggled, m_loss, &PlotWidget::setLogY);
    connect(reset, &QPushButton::clicked, this, [this] {
        for (PlotWidget* p : plots())
            p->resetView();
    });

    auto* grid = new QGridLayout;
    grid->addWidget(m_loss, 0, 0);
    grid->addWidget(m_accuracy, 0, 1);
    grid->addWidget(m_scale, 1, 0);
    grid->addWidget(m_throughput, 1, 1);
    grid->addWidget(m_allReduce, 2, 0, 1, 2);
    m_allReduce->hide();
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_heading);
    layout->addLayout(controls);
    layout->addLayout(grid, 1);
    clearGraphs();
}

QList<PlotWidget*> RunMonitor::plots() const { return {m_loss, m_accuracy, m_scale, m_throughput, m_allReduce}; }

void RunMonitor::buildPlots()
{
    m_loss = new PlotWidget(tr("Loss"));
    m_loss->xAxis->setLabel(tr("step"));
    m_loss->yAxis->setLabel(tr("cross-entropy loss"));
    // A recorded run that has ended can be forked at the saved state nearest the click.
    m_loss->setMenuExtension([this](QMenu& menu, double step) {
        if (!m_recording || m_recording->runId <= 0 || !m_recording->finished())
            return;
        const qint64 runId = m_recording->runId;
        QAction* fork =
            menu.addAction(tr("Fork from here…"), this, [this, runId, step] { emit forkRequested(runId, step); });
        fork->setObjectName(QStringLiteral("forkFromHere"));
        fork->setToolTip(tr("A new run from the training state saved nearest step %1, with other settings")
                             .arg(std::max(0.0, std::round(step))));
    });
    m_accuracy = new PlotWidget(tr("Accuracy"));
    m_accuracy->xAxis->setLabel(tr("epoch"));
    m_accuracy->yAxis->setLabel(tr("accuracy (%)"));
    m_accuracy->setLogToggleAllowed(false);
    auto epochTicker = QSharedPointer<QCPAxisTickerFixed>::create();
    epochTicker->setTickStep(1); // epochs are whole numbers
    epochTicker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    m_accuracy->xAxis->setTicker(epochTicker);
    m_accuracy->legend->setVisible(true);
    m_accuracy->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignBottom | Qt::AlignRight);
    m_scale = new LossScalePlot;
    m_throughput = new PlotWidget(tr("Throughput and learning rate"));
    m_throughput->xAxis->setLabel(tr("step"));
    m_throughput->yAxis->setLabel(tr("samples/s"));
    m_throughput->yAxis2->setVisible(true);
    m_throughput->yAxis2->setLabel(tr("learning rate"));
    m_throughput->setLogToggleAllowed(false);
    m_allReduce = new PlotWidget(tr("16-bit all-reduce"));
    m_allReduce->setObjectName("allReducePlot");
    m_allReduce->xAxis->setLabel(tr("step"));
    m_allReduce->yAxis->setLabel(tr("values per step"));
    m_allReduce->legend->setVisible(true);
}

void RunMonitor::clearGraphs()
{
    for (PlotWidget* p : plots())
        p->clearGraphs();
    m_scale->clearRuns();
    const QColor blue = seriesColor(0), orange = seriesColor(1);

    m_rawLoss = m_loss->addGraph();
    m_rawLoss->setName(tr("train loss (per step)"));
    m_rawLoss->setPen(QPen(faint(blue, 70)));
    m_smoothLoss = m_loss->addGraph();
    m_smoothLoss->setName(tr("train loss (smoothed)"));
    m_smoothLoss->setPen(seriesPen(0, 2));
    m_testLoss = m_loss->addGraph();
    m_testLoss->setName(tr("test loss (per epoch)"));
    m_testLoss->setPen(seriesPen(1, 1.6));
    m_testLoss->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, orange, 7));

    m_testAccuracy = m_accuracy->addGraph();
    m_testAccuracy->setName(tr("test"));
    m_testAccuracy->setPen(seriesPen(1, 2));
    m_testAccuracy->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, orange, 7));
    m_trainAccuracy = m_accuracy->addGraph();
    m_trainAccuracy->setName(tr("train"));
    m_trainAccuracy->setPen(seriesPen(0, 1.6));
    m_trainAccuracy->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssSquare, blue, 6));

    const QColor green = seriesColor(2);
    m_validationLoss = m_loss->addGraph();
    m_validationLoss->setName(tr("validation loss (per epoch)"));
    m_validationLoss->setPen(seriesPen(2, 1.6));
    m_validationLoss->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangle, green, 7));
    m_validationAccuracy = m_accuracy->addGraph();
    m_validationAccuracy->setName(tr("validation"));
    m_validationAccuracy->setPen(seriesPen(2, 1.6));
    m_validationAccuracy->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangle, green, 7));
    for (QCPGraph* graph : {m_validationLoss, m_validationAccuracy}) {
        graph->setVisible(false);
        graph->removeFromLegend();
    }

    m_scale->addRun(tr("loss scale"), blue, true);

    m_samplesPerSecond = m_throughput->addGraph();
    m_samplesPerSecond->setName(tr("samples/s"));
    m_samplesPerSecond->setPen(QPen(seriesColor(2)));
    m_learningRate = m_throughput->addGraph(m_throughput->xAxis, m_throughput->yAxis2);
    m_learningRate->setName(tr("learning rate"));
    m_learningRate->setPen(seriesPen(3, 2));

    m_allReduceFlushed = m_allReduce->addGraph();
    m_allReduceFlushed->setName(tr("flushed to zero by the division before the sum"));
    m_allReduceFlushed->setPen(seriesPen(0, 1.6));
    m_allReduceOverflowed = m_allReduce->addGraph();
    m_allReduceOverflowed->setName(tr("overflowed in the sum"));
    m_allReduceOverflowed->setPen(seriesPen(1, 1.6));
    m_allReduce->hide();
    m_smoother.reset();
}

void RunMonitor::setRecording(std::shared_ptr<const RunRecording> recording)
{
    m_recording = std::move(recording);
    clearGraphs();
    const EpochMetric metric = m_recording ? epochMetricFor(m_recording->config) : EpochMetric{};
    m_accuracy->setTitle(metric.title());
    m_accuracy->yAxis->setLabel(metric.axisLabel());
    // Lower is better in bits: the legend then sits where the curves are not.
    m_accuracy->axisRect()->insetLayout()->setInsetAlignment(
        0, Qt::AlignRight | (metric.lowerIsBetter() ? Qt::AlignTop : Qt::AlignBottom));
    for (PlotWidget* p : plots()) {
        p->resetView();
        p->markDirty();
    }
    refresh();
}

void RunMonitor::setSmoothing(double weight)
{
    m_smoother = EmaSmoother(weight);
    if (m_smoothingSlider->value() != qRound(weight * 100))
        m_smoothingSlider->setValue(qRound(weight * 100));
    m_smoothLoss->data()->clear();
    if (m_recording) {
        const int have = m_rawLoss->dataCount();
        QVector<double> values;
        values.reserve(have);
        for (int i = 0; i < have; ++i)
            values << m_smoother.add(m_recording->loss[i]);
        m_smoothLoss->setData(m_recording->step.mid(0, have), values, true);
    }
    m_loss->markDirty();
    m_loss->replotIfDirty();
}

void RunMonitor::refresh()
{
    if (m_recording) {
        syncSteps(*m_recording);
        syncEpochs(*m_recording);
        m_scale->sync(0, *m_recording);
    }
    updateHeading();
    for (PlotWidget* p : plots())
        p->replotIfDirty();
}

void RunMonitor::syncSteps(const RunRecording& r)
{
    const int have = m_rawLoss->dataCount();
    if (r.step.size() <= have)
        return;
    const QVector<double> steps = r.step.mid(have);
    const QVector<double> losses = r.loss.mid(have);
    QVector<double> smooth;
    smooth.reserve(losses.size());
    for (double v : losses)
        smooth << m_smoother.add(v);
    // Bulk appends of sorted keys: QCustomPlot then skips its sort and merge.
    m_rawLoss->addData(steps, losses, true);
    m_smoothLoss->addData(steps, smooth, true);
    m_samplesPerSecond->addData(steps, r.samplesPerSecond.mid(have), true);
    m_learningRate->addData(steps, r.learningRate.mid(have), true);
    m_loss->markDirty();
    m_throughput->markDirty();
    if (r.hasAllReduceCounts()) {
        m_allReduceFlushed->addData(steps, r.allReduceFlushed.mid(have), true);
        m_allReduceOverflowed->addData(steps, r.allReduceOverflowed.mid(have), true);
        m_allReduce->show();
        m_allReduce->markDirty();
    }
}

void RunMonitor::syncEpochs(const RunRecording& r)
{
    const int have = m_testAccuracy->dataCount();
    if (r.epoch.size() <= have)
        return;
    m_testLoss->addData(r.epochEndStep.mid(have), r.testLoss.mid(have), true);
    const EpochMetric metric = epochMetricFor(r.config);
    m_testAccuracy->addData(r.epoch.mid(have), metric.test(r).mid(have), true);
    m_trainAccuracy->addData(r.epoch.mid(have), metric.train(r).mid(have), true);
    if (EpochMetric::hasValidation(r)) { // held out from the first epoch on, or never
        m_validationLoss->addData(r.epochEndStep.mid(have), r.validationLoss.mid(have), true);
        m_validationAccuracy->addData(r.epoch.mid(have), metric.validation(r).mid(have), true);
        for (QCPGraph* graph : {m_validationLoss, m_validationAccuracy}) {
            graph->setVisible(true);
            graph->addToLegend();
        }
    }
    m_loss->markDirty();
    m_accuracy->markDirty();
}

void RunMonitor::updateHeading()
{
    if (!m_recording)
        return;
    QString heading = m_recording->name;
    // A data-parallel run's curves are the global batch's; the heading says how many ranks made them.
    if (trainedRanks(m_recording->config.distributed) > 1)
        heading += " · " + QString::fromStdString(describeDistributed(m_recording->config.distributed));
    m_heading->setText(heading + " — " + recordingStateText(*m_recording));
}

} // namespace mantissa::ui
