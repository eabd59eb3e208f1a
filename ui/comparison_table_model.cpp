#include "ui/comparison_table_model.h"

#include "engine/config/distributed_summary.h"
#include "engine/util/format_number.h"
#include "ui/epoch_metric.h"

#include <QBrush>
#include <QFont>

namespace mantissa::ui {

double speedup(const RunSummary& baseline, const RunSummary& run)
{
    if (baseline.trainSeconds <= 0 || run.trainSeconds <= 0)
        return 0;
    return baseline.trainSeconds / run.trainSeconds;
}

namespace {

// A fork trained only the steps after its branch point, so its time and another run's cover
// different steps: beside a fork, the speedup is the ratio of the throughputs instead.
bool comparesAFork(const RunRecording& baseline, const RunRecording& run) { return baseline.fork || run.fork; }

double throughputRatio(const RunSummary& baseline, const RunSummary& run)
{
    if (baseline.samplesPerSecond <= 0 || run.samplesPerSecond <= 0)
        return 0;
    return run.samplesPerSecond / baseline.samplesPerSecond;
}

} // namespace

ComparisonTableModel::ComparisonTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void ComparisonTableModel::setRuns(QList<std::shared_ptr<const RunRecording>> runs)
{
    beginResetModel();
    m_runs = std::move(runs);
    m_baseline = 0;
    endResetModel();
}

void ComparisonTableModel::setBaseline(int row)
{
    if (row < 0 || row >= m_runs.size() || row == m_baseline)
        return;
    m_baseline = row;
    emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

int ComparisonTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_runs.size());
}

int ComparisonTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ComparisonTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Run: return tr("Run");
    case Precision: return tr("Precision");
    case Batch: return tr("Batch");
    case Ranks: return tr("Ranks");
    case TestAccuracy: return tr("Test metric");
    case ValidationMetric: return tr("Validation");
    case TrainTime: return tr("Time to train");
    case Throughput: return tr("Samples/s");
    case Speedup: return tr("Speedup");
    case Skipped: return tr("Skipped steps");
    case FinalScale: return tr("Final loss scale");
    case PeakMemory: return tr("Peak memory");
    default: return {};
    }
}

QVariant ComparisonTableModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const RunRecording& r = *m_runs[index.row()];
    if (role == Qt::FontRole && index.row() == m_baseline) {
        QFont bold;
        bold.setBold(true);
        return bold;
    }
    if (role == Qt::ToolTipRole && index.column() == Speedup) {
        QString tip =
            comparesAFork(*m_runs[m_baseline], r)
                ? tr("This run's samples per second over the baseline's (%1): a fork trained only the "
                     "steps after its branch point, so training times do not compare")
                      .arg(m_runs[m_baseline]->name)
                : tr("Training time of the baseline (%1) divided by this run's").arg(m_runs[m_baseline]->name);
        if (!r.kernels.isEmpty())
            tip += tr("\n\nKernels of this run:\n%1").arg(r.kernels);
        return tip;
    }
    if (role == Qt::ToolTipRole && index.column() == Ranks)
        return QString::fromStdString(describeDistributed(r.config.distributed));
    if (role == Qt::ToolTipRole && index.column() == Throughput && r.summary && !r.summary->ranks.empty())
        return QString::fromStdString(describeRanks(r.summary->ranks));
    if (role == Qt::TextAlignmentRole && index.column() >= Batch)
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role != Qt::DisplayRole)
        return {};
    const bool done = r.summary.has_value();
    switch (index.column()) {
    case Run: return r.name;
    case Precision: return QString::fromStdString(precisionModeName(r.config.precision));
    case Batch: return static_cast<qlonglong>(r.config.training.batchSize);
    case Ranks: return trainedRanks(r.config.distributed);
    case TestAccuracy: {
        // The run's task's metric: accuracy, RMSE or bits per character (epoch_metric.h).
        const EpochMetric metric = epochMetricFor(r.config);
        const QVector<double> values = metric.test(r);
        return metric.format(values.isEmpty() ? NAN : values.last());
    }
    case ValidationMetric: {
        // The same metric on the samples data.validation_split held out; "—" without them.
        const EpochMetric metric = epochMetricFor(r.config);
        const QVector<double> values = metric.validation(r);
        return metric.format(values.isEmpty() ? NAN : values.last());
    }
    case TrainTime:
        if (!done)
            return QString("—");
        if (r.fork) // its own steps only
            return QString("%1 s (after step %2)").arg(r.summary->trainSeconds, 0, 'f', 2).arg(r.fork->step);
        return QString("%1 s").arg(r.summary->trainSeconds, 0, 'f', 2);
    case Throughput:
        // The global batch's samples over the training time: all ranks together.
        return done && r.summary->samplesPerSecond > 0 ? QString::number(r.summary->samplesPerSecond, 'f', 0)
                                                       : QString("—");
    case Speedup: {
        const auto& base = m_runs[m_baseline]->summary;
        const double s = !done || !base                          ? 0
                         : comparesAFork(*m_runs[m_baseline], r) ? throughputRatio(*base, *r.summary)
                                                                 : speedup(*base, *r.summary);
        if (s <= 0)
            return QString("—");
        // Whether the speedup is the hardware's: "1.52x (native bf16)", "0.97x (emulated fp16)".
        const QString ratio = QString::fromStdString(formatRatio(s));
        const QString path = kernelPathLabel(r.config.precision, r.kernels);
        return path.isEmpty() ? ratio : QString("%1 (%2)").arg(ratio, path);
    }
    case Skipped: return done ? static_cast<qlonglong>(r.summary->skippedSteps) : QVariant("—");
    case FinalScale: return done ? QString::fromStdString(formatScale(r.summary->finalLossScale)) : QString("—");
    case PeakMemory: return done ? QString::fromStdString(formatBytes(r.summary->peakBytes)) : QString("—");
    default: return {};
    }
}

} // namespace mantissa::ui
