#include "ui/sweep_comparison_view.h"

#include "report/band_plot.h"
#include "ui/epoch_metric.h"
#include "ui/plot_style.h"
#include "ui/plot_widget.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace mantissa::ui {

SweepComparisonView::SweepComparisonView(QWidget* parent) : QWidget(parent)
{
    m_heading = new QLabel;
    m_heading->setObjectName("sweepHeading");
    m_heading->setWordWrap(true);
    m_band = new QComboBox;
    m_band->setObjectName("sweepBand");
    m_band->addItem(tr("min to max"), int(sweep::BandKind::MinMax));
    m_band->addItem(tr("95% CI of the mean"), int(sweep::BandKind::ConfidenceInterval));
    connect(m_band, &QComboBox::currentIndexChanged, this, &SweepComparisonView::rebuildPlots);

    m_loss = new PlotWidget(tr("Train loss (smoothed), mean over seeds"));
    m_loss->xAxis->setLabel(tr("step"));
    m_loss->yAxis->setLabel(tr("cross-entropy loss"));
    m_accuracy = new PlotWidget(tr("Test accuracy, mean over seeds"));
    m_accuracy->xAxis->setLabel(tr("epoch"));
    m_accuracy->yAxis->setLabel(tr("accuracy (%)"));
    m_accuracy->setLogToggleAllowed(false);
    auto epochTicker = QSharedPointer<QCPAxisTickerFixed>::create();
    epochTicker->setTickStep(1);
    epochTicker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    m_accuracy->xAxis->setTicker(epochTicker);
    m_accuracy->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignBottom | Qt::AlignRight);

    m_table = new QTableWidget;
    m_table->setObjectName("sweepStatistics");
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_sentences = new QLabel;
    m_sentences->setObjectName("sweepSentences");
    m_sentences->setWordWrap(true);
    m_sentences->setTextInteractionFlags(Qt::TextSelectableByMouse);

    // The verdicts' margins: a pair within them is "equivalent" (sweep_statistics.h).
    const sweep::EquivalenceMargins defaults;
    m_accuracyMargin = new QDoubleSpinBox;
    m_accuracyMargin->setObjectName("sweepAccuracyMargin");
    m_accuracyMargin->setRange(0.01, 100);
    m_accuracyMargin->setDecimals(2);
    m_accuracyMargin->setSingleStep(0.1);
    m_accuracyMargin->setSuffix(tr(" points"));
    m_accuracyMargin->setValue(defaults.testAccuracy * 100);
    m_lossMargin = new QDoubleSpinBox;
    m_lossMargin->setObjectName("sweepLossMargin");
    m_lossMargin->setRange(0.0001, 10);
    m_lossMargin->setDecimals(4);
    m_lossMargin->setSingleStep(0.005);
    m_lossMargin->setValue(defaults.trainLoss);
    connect(m_accuracyMargin, &QDoubleSpinBox::valueChanged, this, &SweepComparisonView::rebuildSentences);
    connect(m_lossMargin, &QDoubleSpinBox::valueChanged, this, &SweepComparisonView::rebuildSentences);
    m_rule = new QLabel;
    m_rule->setObjectName("sweepVerdictRule");
    m_rule->setWordWrap(true);

    auto* top = new QHBoxLayout;
    top->addWidget(m_heading, 1);
    top->addWidget(new QLabel(tr("Band:")));
    top->addWidget(m_band);
    top->addWidget(new QLabel(tr("Equivalent within ±")));
    top->addWidget(m_accuracyMargin);
    m_testMarginName = new QLabel(tr("accuracy, ±"));
    top->addWidget(m_testMarginName);
    top->addWidget(m_lossMargin);
    top->addWidget(new QLabel(tr("loss")));

    auto* plots = new QWidget;
    auto* plotLayout = new QHBoxLayout(plots);
    plotLayout->setContentsMargins(0, 0, 0, 0);
    plotLayout->addWidget(m_loss);
    plotLayout->addWidget(m_accuracy);

    auto* tables = new QWidget;
    auto* tableLayout = new QVBoxLayout(tables);
    tableLayout->setContentsMargins(0, 0, 0, 0);
    tableLayout->addWidget(new QLabel(tr("<b>Statistics over the seeds</b> (metrics over the runs that did not "
                                         "diverge; the divergence interval is Wilson's)")));
    tableLayout->addWidget(m_table, 1);
    tableLayout->addWidget(m_rule);
    tableLayout->addWidget(m_sentences);

    auto* split = new QSplitter(Qt::Vertical);
    split->addWidget(plots);
    split->addWidget(tables);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(split, 1);
}

sweep::BandKind SweepComparisonView::bandKind() const { return sweep::BandKind(m_band->currentData().toInt()); }

void SweepComparisonView::setBandKind(sweep::BandKind kind) { m_band->setCurrentIndex(m_band->findData(int(kind))); }

void SweepComparisonView::setComparison(SweepComparison comparison)
{
    m_comparison = std::move(comparison);
    m_heading->setText(m_comparison.title);
    configureTestMetric();
    rebuildPlots();
    rebuildTable();
}

void SweepComparisonView::configureTestMetric()
{
    // The test metric's margin is in its unit: accuracy in points, RMSE in the targets' unit,
    // bits per character.
    const TaskMetric metric = m_comparison.metric;
    const EpochMetric epochMetric{metric};
    m_accuracy->setTitle(tr("Test %1, mean over seeds")
                             .arg(metric == TaskMetric::Rmse ? epochMetric.title() : epochMetric.title().toLower()));
    m_accuracy->yAxis->setLabel(epochMetric.axisLabel());
    m_accuracy->axisRect()->insetLayout()->setInsetAlignment(
        0, Qt::AlignRight | (epochMetric.lowerIsBetter() ? Qt::AlignTop : Qt::AlignBottom));
    if (metric == m_marginMetric)
        return; // the user's margin stays while the unit does
    m_marginMetric = metric;
    const sweep::EquivalenceMargins defaults;
    const QSignalBlocker blocker(m_accuracyMargin);
    const bool accuracy = metric == TaskMetric::Accuracy;
    m_accuracyMargin->setRange(accuracy ? 0.01 : 0.0001, accuracy ? 100 : 1e6);
    m_accuracyMargin->setDecimals(accuracy ? 2 : 4);
    m_accuracyMargin->setSingleStep(accuracy ? 0.1 : 0.005);
    m_accuracyMargin->setSuffix(accuracy ? tr(" points") : QString());
    m_accuracyMargin->setValue(defaults.testMetric(metric) * (accuracy ? 100 : 1));
    m_testMarginName->setText(metric == TaskMetric::Accuracy ? tr("accuracy, ±")
                              : metric == TaskMetric::Rmse   ? tr("RMSE, ±")
                                                             : tr("bits per character, ±"));
}

void SweepComparisonView::rebuildPlots()
{
    m_loss->clearGraphs();
    m_accuracy->clearGraphs();
    const sweep::BandKind kind = bandKind();
    for (int c = 0; c < m_comparison.configurationCount(); ++c) {
        const auto& runs = m_comparison.finishedRuns[c];
        if (runs.isEmpty())
            continue; // nothing finished: the table says how its runs ended
        const QString name = tr("%1 (n = %2)").arg(m_comparison.label(c)).arg(runs.size());
        report::addBandGraphs(*m_loss, lossBand(runs, kind), name, seriesColor(c), 1, c > 0);
        const report::BandGraphs accuracy =
            report::addBandGraphs(*m_accuracy, testMetricBand(runs, kind, m_comparison.metric), name, seriesColor(c),
                                  m_comparison.metric == TaskMetric::Accuracy ? 100 : 1, c > 0);
        accuracy.mean->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, seriesColor(c), 7));
    }
    m_loss->resetView();
    m_accuracy->resetView();
    // Room around the first and last epoch, so that their markers and band edges are not cut
    // by the frame.
    const QCPRange epochs = m_accuracy->xAxis->range();
    m_accuracy->xAxis->setRange(epochs.lower - 0.2, epochs.upper + 0.2);
    m_accuracy->replot();
}

void SweepComparisonView::rebuildTable()
{
    const sweep::StatisticsTable& table = m_comparison.table;
    m_table->clear();
    m_table->setColumnCount(int(table.header.size()));
    m_table->setHorizontalHeaderLabels(table.header);
    m_table->setRowCount(int(table.rows.size()));
    for (int row = 0; row < table.rows.size(); ++row)
        for (int col = 0; col < table.rows[row].size(); ++col) {
            auto* item = new QTableWidgetItem(table.rows[row][col]);
            if (col > 0)
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_table->setItem(row, col, item);
        }
    m_table->resizeColumnsToContents();
    rebuildSentences();
}

void SweepComparisonView::rebuildSentences()
{
    const TaskMetric metric = m_comparison.metric;
    sweep::EquivalenceMargins margins;
    margins.testMetric(metric) = m_accuracyMargin->value() / (metric == TaskMetric::Accuracy ? 100 : 1);
    margins.trainLoss = m_lossMargin->value();
    m_comparison.sentences = sweep::pairSentences(m_comparison.results, margins);
    m_rule->setText(m_comparison.results.size() > 1 ? sweep::verdictRule(margins, metric) : QString());
    m_sentences->setText(m_comparison.sentences.isEmpty() ? tr("One configuration: nothing to compare it with.")
                                                          : m_comparison.sentences.join(QStringLiteral("\n")));
}

} // namespace mantissa::ui
