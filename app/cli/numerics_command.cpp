// mantissa-cli numerics RUN: the numerics lens's per-layer table at one sampled step:
// for every layer's activation, activation gradient, weights and weight gradients, the
// largest magnitude and the shares that are zero, flush to zero, are subnormal or
// overflow in the run's 16-bit type, and for gradients the loss scale that would lift
// the chosen percentile into the normal range without overflow. Under a sub-16-bit recipe, a
// second table shows what the quantisation did to every GEMM input (gemm_input_table.h).
// With --shadow (or when the run has only that), the shadow error track instead: every layer
// against the same step in fp32, and the tensors that erred most (shadow_table.h).
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/gemm_input_table.h"
#include "cli/run_format.h"
#include "cli/run_lookup.h"
#include "cli/scale_format.h"
#include "cli/shadow_table.h"
#include "cli/text_table.h"
#include "engine/lens/what_if.h"

#include <cmath>
#include <cstdio>

namespace mantissa::cli {

namespace {

constexpr const char* kCommand = "numerics";
constexpr const char* kUsage = "RUN [--shadow] [--layer NAME] [--step N] [--percentile P]";

// The shadowed step nearest to `wanted`, or the last when `wanted` is negative.
std::size_t nearestShadowed(const std::vector<ShadowRecord>& records, qint64 wanted)
{
    std::size_t best = records.size() - 1;
    if (wanted < 0)
        return best;
    for (std::size_t i = records.size(); i-- > 0;)
        if (std::llabs(records[i].step - wanted) <= std::llabs(records[best].step - wanted))
            best = i;
    return best;
}

int printShadow(const storage::RunInfo& run, const std::vector<ShadowRecord>& records, qint64 wantedStep,
                const QString& layer)
{
    if (records.empty())
        return fail(kCommand,
                    QStringLiteral("run %1 (%2) recorded no shadow errors; train it with "
                                   "\"numerics\": {\"shadow_every\": 10} in its config (or --shadow-every 10)")
                        .arg(run.id)
                        .arg(run.name),
                    kExitBadInput);
    std::printf("run %lld (%s)\n", static_cast<long long>(run.id), qPrintable(run.name));
    const std::size_t at = nearestShadowed(records, wantedStep);
    if (!printShadowStep(records, at, layer))
        return fail(kCommand, QStringLiteral("no layer \"%1\" at step %2").arg(layer).arg(records[at].step),
                    kExitBadInput);
    if (layer.isEmpty())
        printWorstShadowTensors(records, 5);
    return kExitOk;
}

// The sampled step nearest to `wanted` (the earlier one on a tie).
qint64 nearestStep(const QList<qint64>& steps, qint64 wanted)
{
    qint64 best = steps.front();
    for (qint64 s : steps)
        if (std::llabs(s - wanted) < std::llabs(best - wanted))
            best = s;
    return best;
}

bool matchesLayer(const TensorNumerics& t, const QString& filter)
{
    if (filter.isEmpty())
        return true;
    const QString layer = QString::fromStdString(t.layer);
    return filter == layer || filter == QString::number(t.layerIndex) || filter == QString::fromStdString(t.tensor);
}

// "3.linear.weight" in layer "3.linear" -> "weight".
QString shortName(const TensorNumerics& t)
{
    const QString tensor = QString::fromStdString(t.tensor);
    const QString prefix = QString::fromStdString(t.layer) + u'.';
    return tensor.startsWith(prefix) ? tensor.mid(prefix.size()) : tensor;
}

// "0%", or the share with what it holds: "0.01% (3 Inf)".
QString nonFiniteCell(const TensorStats& s)
{
    if (s.nonFinite == 0)
        return formatPercent(0.0);
    return QStringLiteral("%1 (%2)").arg(formatPercent(s.fraction(s.nonFinite)),
                                         QString::fromStdString(describeNonFinite(s.nonFinite, s.nan)));
}

QString suggestedScale(const NumericsRecord& record, const TensorNumerics& t, double percentile)
{
    if (t.kind != TensorKind::WeightGrad && t.kind != TensorKind::ActivationGrad)
        return QStringLiteral("-");
    // A histogram of scaled values is shifted back by the scale's exponent.
    const int shift = record.scaledGradients ? -std::ilogb(record.lossScale) : 0;
    const auto s = suggestLossScale(t.stats.histogram, percentile, t.target, shift);
    if (!s)
        return QStringLiteral("-");
    return formatScale(s->suggested) + (s->fits ? QString() : QStringLiteral(" (!)"));
}

} // namespace

int runNumericsCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Per-layer numerics of a run at one sampled step (train with \"numerics\": {\"every\": N}).");
    parser.addPositionalArgument("run", "The run's id or name.", "RUN");
    addDatabaseOption(parser);
    parser.addOption({"shadow", "The shadow error track: every layer against the same step in fp32 "
                                "(train with \"numerics\": {\"shadow_every\": N})."});
    parser.addOption({"layer", "Only this layer (name \"3.linear\", index or tensor name).", "NAME"});
    parser.addOption({"step", "The sampled step nearest to N (default: the last).", "N"});
    parser.addOption({"percentile",
                      "Percentile of nonzero gradient magnitudes the suggested scale lifts into fp16's "
                      "normal range (default 1).",
                      "P", "1"});
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    if (const auto exit = requirePositionals(parser, 1, kCommand, kUsage))
        return *exit;
    bool ok = true;
    const double percentile = parser.value("percentile").toDouble(&ok);
    if (!ok || percentile <= 0 || percentile > 100)
        return fail(kCommand, QStringLiteral("--percentile must be a number in (0, 100]"), kExitBadInput);
    qint64 wantedStep = -1;
    if (parser.isSet("step")) {
        wantedStep = parser.value("step").toLongLong(&ok);
        if (!ok || wantedStep < 0)
            return fail(kCommand, QStringLiteral("--step must be a step number"), kExitBadInput);
    }
    try {
        const auto store = openRunStore(parser);
        const storage::RunInfo run = lookUpRun(*store, parser.positionalArguments().first());
        const QList<qint64> steps = store->numericsSteps(run.id);
        const std::vector<ShadowRecord> shadow = store->shadowRecords(run.id);
        if (parser.isSet("shadow") || (steps.isEmpty() && !shadow.empty()))
            return printShadow(run, shadow, wantedStep, parser.value("layer"));
        if (steps.isEmpty()) {
            return fail(kCommand,
                        QStringLiteral("run %1 (%2) recorded no numerics; train it with "
                                       "\"numerics\": {\"every\": 100} in its config")
                            .arg(run.id)
                            .arg(run.name),
                        kExitBadInput);
        }
        const qint64 step = wantedStep < 0 ? steps.back() : nearestStep(steps, wantedStep);
        const NumericsRecord record = store->numerics(run.id, step);
        std::printf("run %lld (%s), step %lld (sampled: %lld steps, %lld to %lld); loss scale %s; "
                    "gradients %s\n",
                    static_cast<long long>(run.id), qPrintable(run.name), static_cast<long long>(step),
                    static_cast<long long>(steps.size()), static_cast<long long>(steps.front()),
                    static_cast<long long>(steps.back()), qPrintable(formatScale(record.lossScale)),
                    record.scaledGradients ? "scaled" : "unscaled");
        using Align = TextTable::Align;
        TextTable table;
        table.addColumn(QStringLiteral("layer"));
        table.addColumn(QStringLiteral("tensor"));
        table.addColumn(QStringLiteral("name"));
        table.addColumn(QStringLiteral("dtype"));
        table.addColumn(QStringLiteral("amax"), Align::Right);
        table.addColumn(QStringLiteral("zeros"), Align::Right);
        table.addColumn(QStringLiteral("underflow"), Align::Right);
        table.addColumn(QStringLiteral("subnormal"), Align::Right);
        table.addColumn(QStringLiteral("overflow"), Align::Right);
        table.addColumn(QStringLiteral("non-finite"), Align::Right);
        table.addColumn(QStringLiteral("suggested scale"), Align::Right);
        const QString layer = parser.value("layer");
        for (const TensorNumerics& t : record.tensors) {
            if (!matchesLayer(t, layer))
                continue;
            const TensorStats& s = t.stats;
            const std::string_view target = dtypeName(t.target);
            table.addRow({QString::fromStdString(t.layer), QString::fromLatin1(tensorKindName(t.kind)), shortName(t),
                          QString::fromLatin1(target.data(), qsizetype(target.size())), formatValue(s.amax, 4),
                          formatPercent(s.fraction(s.zeros)), formatPercent(s.fraction(s.underflow)),
                          formatPercent(s.fraction(s.subnormal)), formatPercent(s.fraction(s.overflow)),
                          nonFiniteCell(s), suggestedScale(record, t, percentile / 100.0)});
        }
        if (table.isEmpty())
            return fail(kCommand, QStringLiteral("no layer \"%1\" at step %2").arg(layer).arg(step), kExitBadInput);
        table.print(stdout);
        std::printf("fractions against dtype (the run's 16-bit type): underflow = nonzero values that round to "
                    "zero, at the scale the run used; suggested scale: the %g%% percentile of nonzero |g| into "
                    "the normal range, top bin below the largest finite value ((!) = cannot both hold)\n",
                    percentile);
        printGemmInputs(record, layer);
        if (!shadow.empty())
            std::printf("\nthe run also has a shadow error track (%zu steps): mantissa-cli numerics %lld --shadow\n",
                        shadow.size(), static_cast<long long>(run.id));
        return kExitOk;
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
