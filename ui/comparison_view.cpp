#include "ui/comparison_view.h"

#include "engine/data/data_fingerprint.h"
#include "ui/comparison_table_model.h"
#include "ui/config_diff.h"
#include "ui/epoch_metric.h"
#include "ui/loss_curve.h"
#include "ui/loss_scale_plot.h"
#include "ui/plot_style.h"
#include "ui/plot_widget.h"
#include "ui/smoothing.h"

#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace mantissa::ui {

ComparisonView::ComparisonView(QWidget* parent) : QWidget(parent)
{
    m_heading = new QLabel(tr("No comparison yet: use \"Compare precisions\" to train the model in fp32 and in "
                              "the chosen low precision with the same seed."));
    m_heading->setObjectName("comparisonHeading");
    m_heading->setWordWrap(true);
    m_baseline = new QComboBox;
    m_baseline->setObjectName("baseline");
    m_baseline->setSizeAdjustPolicy(QComboBox::AdjustToContents);

    m_loss = new PlotWidget(tr("Train loss (smoothed)"));
    m_loss->xAxis->setLabel(tr("step"));
    m_loss->yAxis->setLabel(tr("cross-entropy loss"));
    m_accuracy = new PlotWidget(tr("Test accuracy"));
    m_accuracy->xAxis->setLabel(tr("epoch"));
    m_accuracy->yAxis->setLabel(tr("accuracy (%)"));
    m_accuracy->setLogToggleAllowed(false);
    auto epochTicker = QSharedPointer<QCPAxisTickerFixed>::create();
    epochTicker->setTickStep(1);
    epochTicker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    m_accuracy->xAxis->setTicker(epochTicker);
    m_accuracy->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignBottom | Qt::AlignRight);
    m_scale = new LossScalePlot;

    m_results = new ComparisonTableModel(this);
    m_resultsView = new QTableView;
    m_resultsView->setObjectName("comparisonResults");
    m_resultsView->setModel(m_results);
    m_resultsView->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_resultsView->verticalHeader()->hide();
    m_resultsView->setSelectionBehavior(QAbstractItemView::SelectRows);

    m_diff = new QTableWidget;
    m_diff->setObjectName("configDiff");
    m_diff->verticalHeader()->hide();
    m_diff->setEditTriggers(QAbstractItemView::NoEditTriggers);

    connect(m_baseline, &QComboBox::currentIndexChanged, m_results, &ComparisonTableModel::setBaseline);

    auto* top = new QHBoxLayout;
    top->addWidget(m_heading, 1);
    top->addWidget(new QLabel(tr("Baseline:")));
    top->addWidget(m_baseline);

    auto* plots = new QGridLayout;
    plots->addWidget(m_loss, 0, 0);
    plots->addWidget(m_accuracy, 0, 1);
    plots->addWidget(m_scale, 0, 2);
    auto* plotsWidget = new QWidget;
    plotsWidget->setLayout(plots);

    // Results above the diff, each full width: the results table has nine columns that all
    // matter, and the diff is usually a row or two.
    auto* tables = new QSplitter(Qt::Vertical);
    auto* resultsBox = new QWidget;
    auto* resultsLayout = new QVBoxLayout(resultsBox);
    resultsLayout->setContentsMargins(0, 0, 0, 0);
    resultsLayout->addWidget(new QLabel(tr("<b>Results</b>")));
    resultsLayout->addWidget(m_resultsView);
    auto* diffBox = new QWidget;
    auto* diffLayout = new QVBoxLayout(diffBox);
    diffLayout->setContentsMargins(0, 0, 0, 0);
    diffLayout->addWidget(new QLabel(tr("<b>Settings that differ</b>")));
    diffLayout->addWidget(m_diff);
    tables->addWidget(resultsBox);
    tables->addWidget(diffBox);
    tables->setStretchFactor(0, 1);
    tables->setStretchFactor(1, 1);

    auto* split = new QSplitter(Qt::Vertical);
    split->addWidget(plotsWidget);
    split->addWidget(tables);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);

    m_dataWarning = new QLabel;
    m_dataWarning->setObjectName(QStringLiteral("dataWarning"));
    m_dataWarning->setWordWrap(true);
    m_dataWarning->setStyleSheet(QStringLiteral("QLabel { background: #fff3cd; color: #664d03; padding: 6px; }"));
    m_dataWarning->hide();

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(m_dataWarning);
    layout->addWidget(split, 1);
}

QString ComparisonView::dataWarning() const { return m_dataWarning->text(); }

QList<PlotWidget*> ComparisonView::plots() const { return {m_loss, m_accuracy, m_scale}; }

void ComparisonView::setRuns(QList<std::shared_ptr<const RunRecording>> runs)
{
    m_runs = std::move(runs);
    m_results->setRuns(m_runs);
    {
        const QSignalBlocker blocker(m_baseline);
        m_baseline->clear();
        for (const auto& r : m_runs)
            m_baseline->addItem(r->name);
        m_baseline->setCurrentIndex(0);
    }
    QStringList names;
    for (const auto& r : m_runs)
        names << r->name;
    m_heading->setText(tr("Comparing %1").arg(names.join(tr(" and "))));
    std::vector<FingerprintedRun> fingerprints;
    for (const auto& r : m_runs)
        fingerprints.push_back({r->name.toStdString(), r->dataFingerprint.toStdString()});
    const QString warning = QString::fromStdString(dataMismatchWarning(fingerprints));
    m_dataWarning->setText(warning.isEmpty() ? QString() : tr("Not the same data: %1.").arg(warning));
    m_dataWarning->setVisible(!warning.isEmpty());
    rebuildPlots();
    rebuildDiff();
}

void ComparisonView::rebuildPlots()
{
    m_loss->clearGraphs();
    m_accuracy->clearGraphs();
    m_scale->clearRuns();
    const EpochMetric metric = epochMetricFor(m_runs);
    m_accuracy->setTitle(
        tr("Test %1").arg(metric.metric == TaskMetric::Rmse ? metric.title() : metric.title().toLower()));
    m_accuracy->yAxis->setLabel(metric.axisLabel());
    m_accuracy->axisRect()->insetLayout()->setInsetAlignment(
        0, Qt::AlignRight | (metric.lowerIsBetter() ? Qt::AlignTop : Qt::AlignBottom));
    // Overflow markers for the run that has them: with fp32 first, that is the low precision one.
    int markerRun = -1;
    for (int i = 0; i < m_runs.size() && markerRun < 0; ++i)
        if (!m_runs[i]->overflows.isEmpty())
            markerRun = i;
    for (int i = 0; i < m_runs.size(); ++i) {
        const RunRecording& r = *m_runs[i];
        // Runs after the first are dashed: curves that coincide (fp32 and a healthy mixed
        // run often do) then still show both colours.
        QPen pen = seriesPen(i, 2);
        if (i > 0)
            pen.setStyle(Qt::DashLine);
        const LossCurve curve = smoothedLossCurve(r, 0.8);
        QCPGraph* loss = m_loss->addGraph();
        loss->setName(r.name);
        loss->setPen(pen);
        loss->setData(curve.step, curve.loss, true);
        if (curve.isFork())
            drawBranch(i, curve);
        QCPGraph* accuracy = m_accuracy->addGraph();
        accuracy->setName(r.name);
        accuracy->setPen(pen);
        accuracy->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, seriesColor(i), 7));
        accuracy->setData(r.epoch, metric.test(r), true);
        QCPGraph* scale = m_scale->addRun(r.name, seriesColor(i), i == markerRun);
        QPen scalePen = scale->pen();
        scalePen.setStyle(pen.style());
        scale->setPen(scalePen);
        m_scale->sync(i, r);
    }
    for (PlotWidget* p : plots())
        p->resetView();
}

void ComparisonView::drawBranch(int index, const LossCurve& curve)
{
    const RunRecording& r = *m_runs[index];
    // The parent's curve before the branch, unless the parent is drawn whole already.
    const bool parentShown = std::any_of(m_runs.begin(), m_runs.end(), [&r](const auto& other) {
        return other->runId != 0 && other->runId == r.fork->parentRunId;
    });
    if (!parentShown) {
        QColor faded = seriesColor(index);
        faded.setAlpha(110);
        QCPGraph* lead = m_loss->addGraph();
        lead->setName(tr("%1 before the fork").arg(r.fork->parentName));
        lead->setPen(QPen(faded, 1.5));
        lead->setData(curve.leadStep, curve.leadLoss, true);
    }
    QCPGraph* branch = m_loss->addGraph();
    branch->setName(tr("forked at step %1").arg(r.fork->step));
    branch->setLineStyle(QCPGraph::lsNone);
    branch->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDiamond, seriesColor(index), seriesColor(index), 10));
    branch->setData({curve.step.first()}, {curve.loss.first()}, true);
    branch->removeFromLegend();
}

void ComparisonView::rebuildDiff()
{
    QStringList jsons, headers{tr("Setting")};
    for (const auto& r : m_runs) {
        jsons << QString::fromStdString(runConfigToJson(r->config));
        headers << r->name;
    }
    QList<ConfigDifference> diffs = diffConfigs(jsons);
    m_diff->clear();
    m_diff->setColumnCount(static_cast<int>(headers.size()));
    m_diff->setHorizontalHeaderLabels(headers);
    m_diff->setRowCount(static_cast<int>(diffs.size()));
    for (int row = 0; row < diffs.size(); ++row) {
        m_diff->setItem(row, 0, new QTableWidgetItem(diffs[row].key));
        for (int col = 0; col < diffs[row].values.size(); ++col)
            m_diff->setItem(row, col + 1, new QTableWidgetItem(diffs[row].values[col]));
    }
    m_diff->resizeColumnsToContents();
}

} // namespace mantissa::ui
