#pragma once
// The run monitor: train loss per step (raw, faint, behind an adjustable moving average),
// test loss and accuracy per epoch (bits per character for a language model: epoch_metric.h),
// the loss scale with overflow markers, throughput and learning rate, and for a data-parallel
// run that all-reduces in 16 bits what each step's sum flushed and overflowed. It shows one RunRecording and catches up with it on refresh(), which
// the workbench calls from the run controller's timer: plots never redraw per step.
#include "ui/run_recording.h"
#include "ui/smoothing.h"

#include <QWidget>

#include <memory>

class QCheckBox;
class QCPGraph;
class QLabel;
class QSlider;

namespace mantissa::ui {

class LossScalePlot;
class PlotWidget;

class RunMonitor : public QWidget {
    Q_OBJECT
public:
    explicit RunMonitor(QWidget* parent = nullptr);

    // Shows `recording` from scratch; later refresh() calls append what it gained.
    void setRecording(std::shared_ptr<const RunRecording> recording);
    const RunRecording* recording() const { return m_recording.get(); }
    // Appends new data to the graphs and redraws the plots that changed.
    void refresh();
    // The moving-average weight in [0, 0.99] (0 = raw).
    void setSmoothing(double weight);

    PlotWidget* lossPlot() const { return m_loss; }
    PlotWidget* accuracyPlot() const { return m_accuracy; }
    LossScalePlot* scalePlot() const { return m_scale; }
    PlotWidget* throughputPlot() const { return m_throughput; }
    // Shown only for a recording with all-reduce counts (RunRecording::hasAllReduceCounts).
    PlotWidget* allReducePlot() const { return m_allReduce; }
    QList<PlotWidget*> plots() const;

signals:
    // "Fork from here…" on the loss plot of a recorded run that has ended, clicked at `step`.
    void forkRequested(qint64 runId, double step);

private:
    void buildPlots();
    void clearGraphs();
    void syncSteps(const RunRecording& r);
    void syncEpochs(const RunRecording& r);
    void updateHeading();

    std::shared_ptr<const RunRecording> m_recording;
    QLabel* m_heading;
    QSlider* m_smoothingSlider;
    QCheckBox* m_logLoss;
    PlotWidget* m_loss;
    PlotWidget* m_accuracy;
    LossScalePlot* m_scale;
    PlotWidget* m_throughput;
    PlotWidget* m_allReduce;
    QCPGraph* m_rawLoss = nullptr;
    QCPGraph* m_smoothLoss = nullptr;
    QCPGraph* m_testLoss = nullptr;
    QCPGraph* m_testAccuracy = nullptr;
    QCPGraph* m_trainAccuracy = nullptr;
    // Drawn (and in the legends) once an epoch was evaluated on validation samples.
    QCPGraph* m_validationLoss = nullptr;
    QCPGraph* m_validationAccuracy = nullptr;
    QCPGraph* m_samplesPerSecond = nullptr;
    QCPGraph* m_learningRate = nullptr;
    QCPGraph* m_allReduceFlushed = nullptr;
    QCPGraph* m_allReduceOverflowed = nullptr;
    EmaSmoother m_smoother{0.6};
};

// The one-line state of a recording: "running: step 120 of 480", "finished: test accuracy 84.1%",
// "finished: test 2.314 bits per character".
QString recordingStateText(const RunRecording& recording);

} // namespace mantissa::ui
