#include "cli/shadow_table.h"

#include "cli/float_text.h"
#include "cli/text_table.h"
#include "engine/lens/shadow_summary.h"

#include <cstdio>

namespace mantissa::cli {

namespace {

QString text(const std::string& s) { return QString::fromStdString(s); }

// "1.linear.weight" in layer "1.linear" -> "weight"; the layer's own tensors -> "".
QString shortName(const std::string& layer, const std::string& tensor)
{
    const QString t = text(tensor);
    const QString prefix = text(layer) + u'.';
    if (tensor == layer)
        return {};
    return t.startsWith(prefix) ? t.mid(prefix.size()) : t;
}

} // namespace

bool printShadowStep(const std::vector<ShadowRecord>& records, std::size_t at, const QString& layer)
{
    const ShadowRecord& r = records[at];
    std::printf("shadow error track, step %lld (shadowed: %zu steps, %lld to %lld); loss scale %s divided out of "
                "the run's gradients\n",
                static_cast<long long>(r.step), records.size(), static_cast<long long>(records.front().step),
                static_cast<long long>(records.back().step), qPrintable(formatFloat(r.lossScale)));
    using Align = TextTable::Align;
    TextTable table;
    table.addColumn(QStringLiteral("layer"));
    table.addColumn(QStringLiteral("tensor"));
    table.addColumn(QStringLiteral("name"));
    table.addColumn(QStringLiteral("rel RMS error"), Align::Right);
    table.addColumn(QStringLiteral("cosine"), Align::Right);
    table.addColumn(QStringLiteral("SQNR"), Align::Right);
    table.addColumn(QStringLiteral("non-finite"), Align::Right);
    for (const ShadowError& e : r.errors) {
        if (!layer.isEmpty() && layer != text(e.layer) && layer != text(e.tensor))
            continue;
        table.addRow({text(e.layer), QString::fromLatin1(shadowTensorName(e.kind)), shortName(e.layer, e.tensor),
                      text(formatRelativeRms(e.energies.relativeRms())), text(formatCosine(e.energies.cosine())),
                      text(formatSqnrDb(e.energies.sqnrDb())), QString::number(e.energies.nonFinite)});
    }
    if (table.isEmpty())
        return false;
    table.print(stdout);
    std::printf("against the same step in fp32 on the same master weights, batch and dropout masks: rel RMS error "
                "= RMS(run - fp32) / RMS(fp32), SQNR = -20 log10(rel RMS error); nan: the run's tensor held Inf "
                "or NaN\n");
    return true;
}

void printWorstShadowTensors(const std::vector<ShadowRecord>& records, std::size_t count)
{
    const std::vector<ShadowTensorSummary> ranked = rankShadowTensors(records);
    using Align = TextTable::Align;
    TextTable table;
    table.addColumn(QStringLiteral("tensor"));
    table.addColumn(QStringLiteral("kind"));
    table.addColumn(QStringLiteral("mean rel RMS"), Align::Right);
    table.addColumn(QStringLiteral("mean SQNR"), Align::Right);
    table.addColumn(QStringLiteral("worst"), Align::Right);
    table.addColumn(QStringLiteral("at step"), Align::Right);
    table.addColumn(QStringLiteral("fp32 RMS"), Align::Right);
    table.addColumn(QStringLiteral("run RMS"), Align::Right);
    table.addColumn(QStringLiteral("non-finite steps"), Align::Right);
    for (std::size_t i = 0; i < ranked.size() && i < count; ++i) {
        const ShadowTensorSummary& s = ranked[i];
        table.addRow({text(s.tensor), QString::fromLatin1(shadowTensorName(s.kind)),
                      text(formatRelativeRms(s.meanRelativeRms)), text(formatSqnrDb(s.meanSqnrDb())),
                      text(formatRelativeRms(s.worstRelativeRms)), QString::number(s.worstStep),
                      text(formatRelativeRms(s.meanReferenceRms)), text(formatRelativeRms(s.meanComparedRms)),
                      QString::number(s.nonFiniteSteps)});
    }
    std::printf("\nlargest errors over %zu shadowed steps (mean relative RMS error):\n", records.size());
    table.print(stdout);
    std::printf("fp32 RMS and run RMS: the mean RMS of the fp32 pass's tensor and of the run's; where the fp32 RMS "
                "is far below its neighbours' the exact value is near zero and its relative error says little\n");
}

} // namespace mantissa::cli
