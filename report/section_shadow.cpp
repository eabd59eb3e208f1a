// The shadow error section: per run with the track (numerics.shadow_every), how far each layer's
// outputs and gradients lay from the same step in fp32, the tensors that erred most over the run
// and every tensor at the last shadowed step.
#include "engine/lens/shadow_summary.h"
#include "report/report_format.h"
#include "report/report_sections.h"
#include "report/shadow_heatmap.h"

namespace mantissa::report {

namespace {

constexpr std::size_t kWorstListed = 10;

QString text(const std::string& s) { return QString::fromStdString(s); }

QString kindTitle(ShadowTensor kind)
{
    switch (kind) {
    case ShadowTensor::Output: return QStringLiteral("outputs");
    case ShadowTensor::InputGrad: return QStringLiteral("input gradients");
    case ShadowTensor::WeightGrad: return QStringLiteral("weight gradients");
    }
    return {};
}

void appendRunShadow(ReportDocument& document, const RunData& run, int runIndex)
{
    const std::vector<ShadowRecord>& records = run.shadow;
    document.paragraph(QStringLiteral("%1: %2 shadowed steps (%3 to %4). Each compares the run's tensors with the "
                                      "same step in fp32 on the same master weights, batch and dropout masks: relative "
                                      "RMS error = RMS(run - fp32) / RMS(fp32), SQNR = -20 log10 of it; gradients "
                                      "with the loss scale divided out.")
                           .arg(run.label, formatCount(qint64(records.size())), formatCount(records.front().step),
                                formatCount(records.back().step)));
    // The Numerics tab's heatmap, one per kind of tensor the track holds.
    for (ShadowTensor kind : {ShadowTensor::Output, ShadowTensor::InputGrad, ShadowTensor::WeightGrad}) {
        if (!hasShadowTensors(records, kind))
            continue;
        document.shadowHeatmap(runIndex, kind,
                               QStringLiteral("Shadow error of the %1: %2").arg(kindTitle(kind), run.label),
                               QStringLiteral("Each cell: log10 of one tensor's relative RMS error at one shadowed "
                                              "step, layers in forward order from the top; blue: the run's tensor "
                                              "held Inf or NaN."));
    }
    ReportTable worst;
    worst.header = {QStringLiteral("Tensor"),    QStringLiteral("Kind"),         QStringLiteral("Mean rel. RMS error"),
                    QStringLiteral("Mean SQNR"), QStringLiteral("Worst (step)"), QStringLiteral("Non-finite steps")};
    worst.numeric = {false, false, true, true, true, true};
    const std::vector<ShadowTensorSummary> ranked = rankShadowTensors(records);
    for (std::size_t i = 0; i < ranked.size() && i < kWorstListed; ++i) {
        const ShadowTensorSummary& s = ranked[i];
        worst.rows << QStringList{
            text(s.tensor),
            QString::fromLatin1(shadowTensorName(s.kind)),
            text(formatRelativeRms(s.meanRelativeRms)),
            text(formatSqnrDb(s.meanSqnrDb())),
            QStringLiteral("%1 (%2)").arg(text(formatRelativeRms(s.worstRelativeRms)), formatCount(s.worstStep)),
            formatCount(s.nonFiniteSteps)};
    }
    document.table(worst,
                   QStringLiteral("The %1 tensors with the largest mean relative error.").arg(worst.rows.size()));

    const ShadowRecord& last = records.back();
    ReportTable step;
    step.header = {QStringLiteral("Layer"), QStringLiteral("Tensor"), QStringLiteral("Rel. RMS error"),
                   QStringLiteral("Cosine"), QStringLiteral("SQNR")};
    step.numeric = {false, false, true, true, true};
    for (const ShadowError& e : last.errors)
        step.rows << QStringList{text(e.layer),
                                 e.kind == ShadowTensor::WeightGrad ? text(e.tensor) + QStringLiteral(" (gradient)")
                                                                    : QString::fromLatin1(shadowTensorName(e.kind)),
                                 text(formatRelativeRms(e.energies.relativeRms())),
                                 text(formatCosine(e.energies.cosine())), text(formatSqnrDb(e.energies.sqnrDb()))};
    document.table(step, QStringLiteral("Every layer at step %1, in forward order.").arg(formatCount(last.step)));
}

} // namespace

void appendShadowErrors(ReportDocument& document, const ReportData& data)
{
    bool any = false;
    for (const RunData& run : data.runs)
        any = any || !run.shadow.empty();
    if (!any)
        return;
    document.heading(QStringLiteral("Shadow error vs fp32"));
    for (int i = 0; i < data.runs.size(); ++i) {
        const RunData& run = data.runs[i];
        if (run.shadow.empty())
            continue;
        if (data.isComparison())
            document.heading(run.label, 2);
        appendRunShadow(document, run, i);
    }
}

} // namespace mantissa::report
