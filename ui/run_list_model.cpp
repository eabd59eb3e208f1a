#include "ui/run_list_model.h"

#include "engine/config/distributed_summary.h"
#include "storage/run_store.h"
#include "ui/run_status_bar.h"

namespace mantissa::ui {

namespace {

// The tooltip of the Ranks column: the all-reduce settings come from the stored config, read
// only when asked (a tooltip), not for every row of a long list.
QString distributedDescription(const storage::RunInfo& run)
{
    try {
        return QString::fromStdString(describeDistributed(
            parseRunConfig(run.configJson.toStdString(), "run " + run.name.toStdString()).distributed));
    } catch (const std::exception&) {
        return run.worldSize > 1 ? QObject::tr("%1 ranks").arg(run.worldSize) : QObject::tr("1 process");
    }
}

// "#12 at step 480": the run a fork continues and where; empty for a run that is no fork. Sorted
// by parent then step, so that a run's forks sit together in order.
QVariant forkedFromText(const storage::RunInfo& r, bool sorting)
{
    if (!r.parent)
        return QString();
    if (sorting)
        return QStringLiteral("%1:%2")
            .arg(r.parent->runId.value_or(0), 12, 10, QChar('0'))
            .arg(r.parent->step, 12, 10, QChar('0'));
    return r.parent->runId ? QObject::tr("#%1 at step %2").arg(*r.parent->runId).arg(r.parent->step)
                           : QObject::tr("(deleted) at step %1").arg(r.parent->step);
}

// The best test figure of the run's task (the highest accuracy, the lowest RMSE or bits per
// character) from the stored summary; unset where the run never reached an evaluation.
std::optional<double> bestMetric(TaskMetric metric, const storage::StoredSummary& s)
{
    if (metric == TaskMetric::Accuracy)
        return s.bestTestAccuracy;
    if (!s.bestTestLoss)
        return std::nullopt;
    return taskMetricValue(metric, *s.bestTestLoss, NAN);
}

QString bestMetricTooltip(TaskMetric metric)
{
    switch (metric) {
    case TaskMetric::Accuracy: return QObject::tr("Best test accuracy over the run's epochs");
    case TaskMetric::Rmse: return QObject::tr("Lowest test RMSE over the run's epochs (regression)");
    case TaskMetric::BitsPerCharacter: return QObject::tr("Lowest test bits per character over the run's epochs");
    }
    return {};
}

} // namespace

RunListModel::RunListModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunListModel::setStore(storage::RunStore* store)
{
    m_store = store;
    reload();
}

void RunListModel::reload()
{
    QList<storage::RunInfo> runs;
    if (m_store) {
        try {
            runs = m_store->listRuns();
        } catch (const std::exception& e) {
            emit storeError(QString::fromLocal8Bit(e.what()));
        }
    }
    QList<TaskMetric> metrics;
    for (const storage::RunInfo& run : runs)
        metrics << taskMetricOfStored(run.configJson.toStdString());
    beginResetModel();
    m_runs = std::move(runs);
    m_metrics = std::move(metrics);
    endResetModel();
}

qint64 RunListModel::runId(int row) const { return row >= 0 && row < m_runs.size() ? m_runs[row].id : 0; }

int RunListModel::rowOfRun(qint64 id) const
{
    for (int row = 0; row < m_runs.size(); ++row)
        if (m_runs[row].id == id)
            return row;
    return -1;
}

int RunListModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_runs.size());
}

int RunListModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RunListModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal)
        return {};
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case BestMetric:
            return tr(
                "Best test figure of the run's task: the highest accuracy, the lowest RMSE or bits per character");
        case Skipped: return tr("Steps skipped because a gradient overflowed");
        case Ranks: return tr("Processes that trained the run data-parallel (mpirun, srun); 1 for a single process");
        case ForkedFrom: return tr("A fork: the run whose training state it continued, and after which step");
        default: return {};
        }
    }
    if (role != Qt::DisplayRole)
        return {};
    // Short headers: ten columns must fit the run browser beside the model editor.
    switch (section) {
    case Name: return tr("Name");
    case Preset: return tr("Preset");
    case Precision: return tr("Precision");
    case Ranks: return tr("Ranks");
    case ForkedFrom: return tr("Forked from");
    case Status: return tr("Status");
    case BestMetric: return tr("Best");
    case Skipped: return tr("Skipped");
    case Duration: return tr("Duration");
    case Created: return tr("Created");
    case Tags: return tr("Tags");
    case Notes: return tr("Notes");
    default: return {};
    }
}

Qt::ItemFlags RunListModel::flags(const QModelIndex& index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    Qt::ItemFlags f = Qt::ItemIsSelectable | Qt::ItemIsEnabled;
    if (index.column() == Name)
        f |= Qt::ItemIsEditable;
    return f;
}

QVariant RunListModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const storage::RunInfo& r = m_runs[index.row()];
    if (role == RunIdRole)
        return r.id;
    const TaskMetric metric = m_metrics[index.row()];
    if (role == Qt::ToolTipRole && (index.column() == BestMetric || index.column() == Skipped)) {
        return index.column() == BestMetric ? bestMetricTooltip(metric)
                                            : tr("Steps skipped because gradients overflowed");
    }
    if (role == Qt::ToolTipRole) {
        if (index.column() == Status && !r.errorMessage.isEmpty())
            return r.errorMessage;
        if (index.column() == Notes && !r.notes.isEmpty())
            return r.notes;
        if (index.column() == Ranks)
            return distributedDescription(r);
        if (index.column() == ForkedFrom && r.parent)
            return r.parent->runId ? tr("Continues run #%1's training state after step %2 with its own settings")
                                         .arg(*r.parent->runId)
                                         .arg(r.parent->step)
                                   : tr("Forked at step %1 from a run no longer in this database").arg(r.parent->step);
        return {};
    }
    if (role == Qt::TextAlignmentRole && (index.column() == BestMetric || index.column() == Skipped ||
                                          index.column() == Duration || index.column() == Ranks))
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    const bool sorting = role == SortRole;
    if (role != Qt::DisplayRole && role != Qt::EditRole && !sorting)
        return {};
    switch (index.column()) {
    case Name: return r.name;
    case Preset: return r.preset;
    case Precision: return r.precision;
    case Ranks: return r.worldSize;
    case ForkedFrom: return forkedFromText(r, sorting);
    case Status: return QString::fromLatin1(runStatusName(r.status));
    case BestMetric: {
        const std::optional<double> best = bestMetric(metric, r.summary);
        if (sorting) {
            // Runs of one task sort together, best first in a descending sort: accuracies
            // ascend, the lower-is-better figures are negated, and the task is the major key.
            if (!best)
                return -1e30;
            return static_cast<double>(metric) * -1e12 + (lowerIsBetter(metric) ? -*best : *best);
        }
        if (!best)
            return QString("—");
        const QString text = QString::fromStdString(formatTaskMetric(metric, *best));
        switch (metric) {
        case TaskMetric::Accuracy: return text;
        case TaskMetric::Rmse: return tr("%1 RMSE").arg(text);
        case TaskMetric::BitsPerCharacter: return tr("%1 bpc").arg(text);
        }
        return text;
    }
    case Skipped:
        if (sorting)
            return r.summary.skippedSteps.value_or(-1);
        return r.summary.skippedSteps ? QVariant(*r.summary.skippedSteps) : QVariant("—");
    case Duration:
        if (sorting)
            return r.wallSeconds.value_or(-1);
        if (!r.wallSeconds)
            return QString("—");
        return formatDuration(*r.wallSeconds);
    case Created:
        if (sorting)
            return r.createdAt;
        // Sortable and short: runs of one afternoon differ in the minutes.
        return r.createdAt.toLocalTime().toString("yyyy-MM-dd HH:mm");
    case Tags: return r.tags.join(", ");
    case Notes: return sorting ? r.notes : r.notes.section('\n', 0, 0);
    default: return {};
    }
}

bool RunListModel::setData(const QModelIndex& index, const QVariant& value, int role)
{
    if (role != Qt::EditRole || !m_store || !checkIndex(index, CheckIndexOption::IndexIsValid) ||
        index.column() != Name)
        return false;
    const QString name = value.toString().trimmed();
    if (name == m_runs[index.row()].name)
        return true;
    try {
        m_store->renameRun(m_runs[index.row()].id, name);
    } catch (const std::exception& e) {
        emit storeError(QString::fromLocal8Bit(e.what()));
        return false;
    }
    refreshRow(index.row());
    return true;
}

bool RunListModel::setNotes(int row, const QString& notes)
{
    if (!m_store || row < 0 || row >= m_runs.size())
        return false;
    try {
        m_store->setNotes(m_runs[row].id, notes);
    } catch (const std::exception& e) {
        emit storeError(QString::fromLocal8Bit(e.what()));
        return false;
    }
    refreshRow(row);
    return true;
}

bool RunListModel::setTags(int row, const QStringList& tags)
{
    if (!m_store || row < 0 || row >= m_runs.size())
        return false;
    const qint64 id = m_runs[row].id;
    try {
        for (const QString& old : m_runs[row].tags)
            if (!tags.contains(old))
                m_store->removeTag(id, old);
        for (const QString& tag : tags)
            m_store->addTag(id, tag);
    } catch (const std::exception& e) {
        emit storeError(QString::fromLocal8Bit(e.what()));
        refreshRow(row);
        return false;
    }
    refreshRow(row);
    return true;
}

bool RunListModel::deleteRun(int row)
{
    if (!m_store || row < 0 || row >= m_runs.size())
        return false;
    try {
        const QStringList leftOver = m_store->deleteRun(m_runs[row].id);
        if (!leftOver.isEmpty())
            emit storeError(tr("The run was deleted, but these checkpoint files could not be removed: %1")
                                .arg(leftOver.join(", ")));
    } catch (const std::exception& e) {
        emit storeError(QString::fromLocal8Bit(e.what()));
        return false;
    }
    beginRemoveRows({}, row, row);
    m_runs.removeAt(row);
    m_metrics.removeAt(row);
    endRemoveRows();
    return true;
}

void RunListModel::refreshRow(int row)
{
    try {
        m_runs[row] = m_store->run(m_runs[row].id);
    } catch (const std::exception& e) {
        emit storeError(QString::fromLocal8Bit(e.what()));
    }
    emit dataChanged(index(row, 0), index(row, ColumnCount - 1));
}

} // namespace mantissa::ui
