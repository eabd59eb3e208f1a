// The settings section: what a reader needs to reproduce or judge the runs, one column
// per run, and in a comparison the settings that differ named plainly.
#include "engine/config/distributed_summary.h"
#include "engine/observe/rank_throughput.h"
#include "engine/precision/loss_scaler.h"
#include "engine/util/format_number.h"
#include "report/report_format.h"
#include "report/report_sections.h"

namespace mantissa::report {

namespace {

QString number(double value) { return QString::fromStdString(formatNumber(value)); }

template <typename E>
QString key(E value)
{
    const std::string_view text = enumKey(value);
    return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

QString lossScaling(const RunConfig& config)
{
    try {
        return QString::fromStdString(LossScaler(config.lossScale, config.precision).describe());
    } catch (const Error& e) {
        return QStringLiteral("invalid: %1").arg(QString::fromUtf8(e.what()));
    }
}

QString optimizer(const OptimizerSpec& o)
{
    QStringList parts{key(o.type), QStringLiteral("lr ") + number(o.lr)};
    if (o.type == OptimizerKind::Sgd) {
        if (o.momentum != 0)
            parts << QStringLiteral("momentum ") + number(o.momentum) +
                         (o.nesterov ? QStringLiteral(" (Nesterov)") : QString());
    } else {
        parts << QStringLiteral("betas %1, %2").arg(number(o.beta1), number(o.beta2))
              << QStringLiteral("eps ") + number(o.epsilon);
    }
    if (o.weightDecay != 0)
        parts << QStringLiteral("weight decay ") + number(o.weightDecay);
    if (o.gradClipNorm != 0)
        parts << QStringLiteral("clip norm ") + number(o.gradClipNorm);
    return parts.join(QStringLiteral(", "));
}

QString schedule(const ScheduleSpec& s, float lr)
{
    QString text = key(s.type);
    if (s.type == ScheduleKind::Step) {
        QStringList epochs;
        for (int milestone : s.milestones)
            epochs << QString::number(milestone);
        text += QStringLiteral(": x%1 at epochs %2").arg(number(s.gamma), epochs.join(QStringLiteral(", ")));
    } else if (s.type == ScheduleKind::Cosine) {
        text += QStringLiteral(" down to ") + number(s.minLr);
    } else if (s.type == ScheduleKind::OneCycle) {
        text += QStringLiteral(": peak %1, rising for %2% of the steps")
                    .arg(number(s.maxLr != 0 ? s.maxLr : 10 * lr), number(100 * s.pctStart));
    }
    if (s.warmupSteps > 0)
        text += QStringLiteral("; linear warm-up over %1 steps").arg(formatCount(s.warmupSteps));
    return text;
}

QString dataset(const DataSpec& d)
{
    QStringList parts{key(d.dataset)};
    if (d.dataset == DatasetKind::Synthetic) {
        parts << QStringLiteral("%1 train / %2 test samples")
                     .arg(formatCount(d.syntheticTrain), formatCount(d.syntheticTest))
              << QStringLiteral("shape %1").arg(QString::fromStdString(Shape(d.syntheticShape).toString()))
              << QStringLiteral("%1 classes, noise %2").arg(d.syntheticClasses).arg(number(d.syntheticNoise));
    }
    if (d.dataset == DatasetKind::Files)
        parts << QString::fromStdString(d.path) << QStringLiteral("format %1").arg(key(d.format));
    if (d.limitTrain > 0)
        parts << QStringLiteral("first %1 training samples").arg(formatCount(d.limitTrain));
    if (d.limitTest > 0)
        parts << QStringLiteral("first %1 test samples").arg(formatCount(d.limitTest));
    if (d.validationSplit > 0)
        parts << QStringLiteral("%1% held out for validation").arg(number(100 * d.validationSplit));
    parts << (d.normalize ? QStringLiteral("normalised") : QStringLiteral("not normalised"));
    return parts.join(QStringLiteral(", "));
}

QString epochs(const TrainingSpec& t)
{
    QString text = QString::number(t.epochs);
    if (t.maxSteps > 0)
        text += QStringLiteral(" (at most %1 steps)").arg(formatCount(t.maxSteps));
    return text;
}

QString device(const TrainingSpec& t)
{
    QString text = QString::fromStdString(t.device);
    text += t.threads > 0 ? QStringLiteral(", %1 CPU threads").arg(t.threads) : QStringLiteral(", all CPU cores");
    return text;
}

struct Setting {
    const char* name;
    QString (*value)(const RunConfig&);
};

const Setting kSettings[] = {
    {"Precision mode", [](const RunConfig& c) { return key(c.precision); }},
    {"Loss scaling", [](const RunConfig& c) { return lossScaling(c); }},
    {"Optimizer", [](const RunConfig& c) { return optimizer(c.optimizer); }},
    {"LR schedule", [](const RunConfig& c) { return schedule(c.schedule, c.optimizer.lr); }},
    {"Batch size", [](const RunConfig& c) { return formatCount(c.training.batchSize); }},
    {"Data parallel", [](const RunConfig& c) { return QString::fromStdString(describeDistributed(c.distributed)); }},
    {"Epochs", [](const RunConfig& c) { return epochs(c.training); }},
    {"Seed", [](const RunConfig& c) { return QString::number(c.training.seed); }},
    {"Dataset", [](const RunConfig& c) { return dataset(c.data); }},
    {"Device asked for", [](const RunConfig& c) { return device(c.training); }},
};

// Each rank of the data-parallel runs: a slow rank holds the others up at every all-reduce, so
// the run's throughput alone does not say where the time went.
void appendRanks(ReportDocument& document, const ReportData& data)
{
    ReportTable table;
    table.header = {QStringLiteral("Run"), QStringLiteral("Rank"), QStringLiteral("Samples/s"),
                    QStringLiteral("Training time"), QStringLiteral("All-reduce share")};
    table.numeric = {false, true, true, true, true};
    for (const RunData& run : data.runs) {
        for (const RankThroughput& r : run.ranks)
            table.rows << QStringList{run.label, QString::number(r.rank), formatCount(qint64(r.samplesPerSecond + 0.5)),
                                      QStringLiteral("%1 s").arg(r.trainSeconds, 0, 'f', 1),
                                      formatPercent(r.allReduceShare(), 0)};
    }
    if (!table.rows.isEmpty())
        document.table(table, QStringLiteral("Per rank of the data-parallel runs: the samples of its slices per "
                                             "second, and the share of its training time spent in all-reduces "
                                             "(waiting for the slowest rank included)."));
}

} // namespace

void appendSettings(ReportDocument& document, const ReportData& data)
{
    document.heading(QStringLiteral("Settings"));
    ReportTable table;
    table.header << QStringLiteral("Setting");
    for (const RunData& run : data.runs)
        table.header << run.label;
    QStringList differing;
    for (const Setting& setting : kSettings) {
        QStringList row{QString::fromLatin1(setting.name)};
        for (const RunData& run : data.runs)
            row << (run.config ? setting.value(*run.config) : notKnown());
        if (row.mid(1).removeDuplicates() < row.size() - 2)
            differing << QString::fromLatin1(setting.name).toLower();
        table.rows << row;
    }
    document.table(table);
    appendRanks(document, data);
    if (!data.isComparison())
        return;
    if (differing.isEmpty())
        document.paragraph(QStringLiteral("The runs share every setting above."));
    else
        document.paragraph(QStringLiteral("The runs differ in: %1; every other setting is the same.")
                               .arg(differing.join(QStringLiteral(", "))));
}

} // namespace mantissa::report
