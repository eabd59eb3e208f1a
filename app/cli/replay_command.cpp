// mantissa-cli replay RUN: how other loss-scale policies would have fared on this run's
// gradients: from each step's largest unscaled gradient magnitude (steps.grad_amax), the
// steps each policy would have skipped and the scales it would have reached
// (engine/lens/scaler_replay.h says what the replay assumes).
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/run_format.h"
#include "cli/run_lookup.h"
#include "cli/scale_format.h"
#include "cli/text_table.h"
#include "engine/config/run_config.h"
#include "engine/lens/scaler_replay.h"

#include <bit>
#include <cmath>
#include <cstdio>

namespace mantissa::cli {

namespace {

constexpr const char* kCommand = "replay";

// The smallest magnitude that rounds to infinity in the type the numerics lens measures the
// run against (PrecisionPolicy::lensTarget: fp16 for an fp32 run, "what if this ran in fp16").
// A precision this build does not know is measured against fp16 too.
float overflowThreshold(const QString& precision)
{
    const auto mode = parsePrecisionMode(precision.toStdString());
    const DType target = PrecisionPolicy(mode.value_or(PrecisionMode::Fp32)).lensTarget();
    return std::bit_cast<float>(roundingThresholds(target).overflowMin);
}

// The run's own scaler, when it had one, replayed as a check of the replay itself.
std::optional<ScalerPolicy> ownPolicy(const storage::RunInfo& run)
{
    try {
        const RunConfig config = parseRunConfig(run.configJson.toStdString(), "run config");
        LossScaleSpec spec = config.lossScale;
        spec.type = PrecisionPolicy(config.precision).resolveLossScale(spec.type);
        if (spec.type == LossScaleType::None)
            return std::nullopt;
        return ScalerPolicy{"this run's (replayed)", spec};
    } catch (const std::exception&) {
        return std::nullopt; // a config this build cannot read: the standard policies still apply
    }
}

} // namespace

int runReplayCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription("Replay loss-scale policies over a run's recorded gradient magnitudes.");
    parser.addPositionalArgument("run", "The run's id or name.", "RUN");
    addDatabaseOption(parser);
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    if (const auto exit = requirePositionals(parser, 1, kCommand, "RUN"))
        return *exit;
    try {
        const auto store = openRunStore(parser);
        const storage::RunInfo run = lookUpRun(*store, parser.positionalArguments().first());
        const storage::StepSeries steps = store->steps(run.id);
        if (steps.isEmpty())
            return fail(kCommand, QStringLiteral("run %1 (%2) has no steps").arg(run.id).arg(run.name), kExitBadInput);
        std::vector<float> amax;
        amax.reserve(std::size_t(steps.size()));
        qint64 recordedSkips = 0;
        double recordedMin = steps.lossScale.front();
        for (qsizetype i = 0; i < steps.size(); ++i) {
            const double a = steps.gradAmax[i];
            // NULL: a row from before grad_amax was recorded (a skipped step stores inf).
            if (std::isnan(a) && !steps.skipped[i]) {
                return fail(kCommand,
                            QStringLiteral("run %1 (%2) was recorded without gradient magnitudes "
                                           "(by an older Mantissa); train it again to replay it")
                                .arg(run.id)
                                .arg(run.name),
                            kExitBadInput);
            }
            amax.push_back(steps.skipped[i] ? INFINITY : float(a));
            recordedSkips += steps.skipped[i];
            recordedMin = std::min(recordedMin, steps.lossScale[i]);
        }
        std::vector<ScalerPolicy> policies;
        if (const auto own = ownPolicy(run))
            policies.push_back(*own);
        for (const ScalerPolicy& p : standardScalerPolicies())
            policies.push_back(p);
        const float overflowAt = overflowThreshold(run.precision);

        using Align = TextTable::Align;
        TextTable table;
        table.addColumn(QStringLiteral("policy"));
        table.addColumn(QStringLiteral("skipped steps"), Align::Right);
        table.addColumn(QStringLiteral("final scale"), Align::Right);
        table.addColumn(QStringLiteral("min scale"), Align::Right);
        table.addRow({QStringLiteral("recorded"), QString::number(recordedSkips),
                      formatScale(run.summary.finalLossScale.value_or(steps.lossScale.back())),
                      formatScale(recordedMin)});
        for (const ScalerPolicy& p : policies) {
            const ReplayResult r = replayScaler(amax, p, overflowAt);
            table.addRow({QString::fromStdString(r.policy), QString::number(r.skippedSteps), formatScale(r.finalScale),
                          formatScale(r.minScale)});
        }
        std::printf("run %lld (%s): %lld steps replayed; overflow when |g| * scale >= %s\n",
                    static_cast<long long>(run.id), qPrintable(run.name), static_cast<long long>(steps.size()),
                    qPrintable(formatValue(overflowAt)));
        table.print(stdout);
        std::printf("pytorch: init 2^16, x2 every 2000, x0.5 on overflow; deepspeed: init 2^16, window 1000, "
                    "hysteresis 2. Steps the run skipped count as overflows for every policy.\n");
        return kExitOk;
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
