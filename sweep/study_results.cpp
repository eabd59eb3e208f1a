#include "sweep/study_results.h"

#include "engine/config/config_enums.h"
#include "engine/numerics/tensor_stats.h"
#include "engine/util/check.h"
#include "stats/comparison_text.h"
#include "storage/run_store.h"

#include <QHash>

#include <algorithm>
#include <cmath>

namespace mantissa::sweep {

using storage::RunInfo;

namespace {

bool isResult(const RunInfo& run) { return run.status == RunStatus::Finished || run.status == RunStatus::Diverged; }

void count(ConfigurationResults& r, const RunInfo& run)
{
    r.runs << run;
    switch (run.status) {
    case RunStatus::Finished: ++r.finished; break;
    case RunStatus::Diverged: ++r.diverged; break;
    case RunStatus::Failed: ++r.failed; break;
    default: ++r.interrupted; break; // interrupted, stopped, or still running
    }
}

// The share of a run's weight-gradient values, over its sampled steps, that are nonzero and
// below 2^-24: the histogram's bins of exponents -25 and lower (a bin holds [2^e, 2^(e+1))).
std::optional<double> weightGradUnderflowShare(const storage::RunStore& store, qint64 runId)
{
    double below = 0, total = 0;
    for (const qint64 step : store.numericsSteps(runId)) {
        for (const TensorNumerics& t : store.numerics(runId, step).tensors) {
            if (t.kind != TensorKind::WeightGrad)
                continue;
            total += double(t.stats.count);
            for (int bin = histogramBinOfExponent(kHistogramMinExponent); bin <= histogramBinOfExponent(-25); ++bin)
                below += double(t.stats.histogram[std::size_t(bin)]);
        }
    }
    if (total == 0)
        return std::nullopt;
    return below / total;
}

// The verdict of `arm` against `against` on `metric` among the records; better and worse turned
// round where the records hold the pair the other way.
std::string foundVerdict(const StudySpec& spec, const std::vector<PairVerdictRecord>& records,
                         const StudyExpectation& x)
{
    const auto index = [&](const std::string& name) {
        return std::size_t(std::find(spec.armOrder.begin(), spec.armOrder.end(), name) - spec.armOrder.begin());
    };
    const std::size_t arm = index(x.arm), against = index(x.against);
    for (const PairVerdictRecord& r : records) {
        if (r.metric->key != x.metric)
            continue;
        const std::string name = verdictName(r);
        if (r.other == arm && r.baseline == against)
            return name;
        if (r.other == against && r.baseline == arm)
            return name == "better" ? "worse" : name == "worse" ? "better" : name;
    }
    return "undecidable";
}

QString armSettingsText(const StudySpec& spec, const std::string& arm)
{
    QStringList parts;
    if (const StudyForkArm* fork = spec.fork(arm)) {
        for (const auto& setting : fork->settings)
            parts << QString::fromStdString(forkSettingText(setting));
        return QStringLiteral("fork of %1 at step %2 (%3%): %4")
            .arg(QString::fromStdString(fork->parent))
            .arg(fork->step)
            .arg(fork->at * 100, 0, 'g', 3)
            .arg(parts.join(QStringLiteral(", ")));
    }
    for (const SweepArm& a : spec.sweep.arms)
        if (a.name == arm)
            for (const auto& setting : a.settings)
                if (setting.first != "training.save_state_every")
                    parts << QString::fromStdString(forkSettingText(setting));
    return parts.isEmpty() ? QStringLiteral("the base") : parts.join(QStringLiteral(", "));
}

QString setupText(const StudySpec& spec)
{
    const RunConfig base = parseRunConfig(spec.sweep.baseConfigJson, spec.file);
    QStringList seeds;
    for (const std::uint64_t s : spec.sweep.seeds)
        seeds << QString::number(s);
    QString data = QString::fromStdString(std::string(enumKey(base.data.dataset)));
    if (base.data.limitTrain > 0 || base.data.limitTest > 0)
        data += QStringLiteral(" (first %1 training and %2 test samples)")
                    .arg(base.data.limitTrain > 0 ? QString::number(base.data.limitTrain) : QStringLiteral("all"))
                    .arg(base.data.limitTest > 0 ? QString::number(base.data.limitTest) : QStringLiteral("all"));
    const QString steps = base.training.maxSteps > 0 ? QStringLiteral("%1 steps").arg(base.training.maxSteps)
                                                     : QStringLiteral("%1 epoch(s)").arg(base.training.epochs);
    QString text;
    text += QStringLiteral("- Model: `%1`%2\n")
                .arg(QString::fromStdString(base.name),
                     base.description.empty() ? QString()
                                              : QStringLiteral(": ") + QString::fromStdString(base.description));
    text += QStringLiteral("- Data: %1\n").arg(data);
    text += QStringLiteral("- Training: %1, batch %2, %3 lr %4\n")
                .arg(steps)
                .arg(base.training.batchSize)
                .arg(QString::fromStdString(std::string(enumKey(base.optimizer.type))))
                .arg(base.optimizer.lr);
    text += QStringLiteral("- Seeds: %1 per arm (%2)%3\n")
                .arg(spec.sweep.seeds.size())
                .arg(seeds.join(QStringLiteral(", ")), spec.full ? QStringLiteral("; the full setting") : QString());
    text += QStringLiteral("- Arms:\n");
    for (const std::string& arm : spec.armOrder)
        text += QStringLiteral("  - **%1**: %2\n").arg(QString::fromStdString(arm), armSettingsText(spec, arm));
    return text;
}

QString cell(QString text) { return text.replace(u'|', QStringLiteral("\\|")); }

} // namespace

QString studyVerdictRule()
{
    return QStringLiteral("The claim reproduces when every predicted verdict is found, partly reproduces when some "
                          "are, and does not reproduce when none is; an inconclusive pair counts as not found. No "
                          "verdict is given while a planned run has no result.");
}

StudyVerdict decideStudyVerdict(const StudySpec& spec, const std::vector<ConfigurationResults>& arms,
                                const std::vector<PairVerdictRecord>& records)
{
    StudyVerdict verdict;
    int met = 0;
    for (const StudyExpectation& x : spec.expectations) {
        ExpectationOutcome outcome{x, foundVerdict(spec, records, x), false};
        outcome.met = outcome.found == x.verdict;
        met += outcome.met ? 1 : 0;
        verdict.expectations.push_back(std::move(outcome));
    }
    int missing = 0, planned = 0;
    for (const ConfigurationResults& r : arms) {
        missing += r.planned - r.results();
        planned += r.planned;
    }
    const int total = int(spec.expectations.size());
    if (missing > 0) {
        verdict.outcome = QStringLiteral("no verdict yet");
        verdict.line = QStringLiteral("no verdict yet: %1 of %2 planned runs have no result").arg(missing).arg(planned);
        return verdict;
    }
    verdict.outcome = met == total ? QStringLiteral("reproduces")
                      : met == 0   ? QStringLiteral("does not reproduce")
                                   : QStringLiteral("partly reproduces");
    verdict.line = QStringLiteral("%1: %2 of %3 predicted verdicts found").arg(verdict.outcome).arg(met).arg(total);
    return verdict;
}

SweepMetric studyMetric(const std::string& key, const storage::RunStore& store, const QList<RunInfo>& runs)
{
    if (key != kWeightGradUnderflowMetric)
        return sweepMetric(key);
    auto shares = std::make_shared<QHash<qint64, double>>();
    for (const RunInfo& run : runs)
        if (const auto share = weightGradUnderflowShare(store, run.id))
            shares->insert(run.id, *share);
    return {kWeightGradUnderflowMetric,
            QStringLiteral("weight gradients below 2^-24 (%)"),
            {"share of weight gradients below 2^-24", 100, "points", 3},
            [shares](const RunInfo& r) {
                const auto it = shares->constFind(r.id);
                return it == shares->constEnd() ? std::nullopt : std::optional<double>(*it);
            }};
}

bool ForkTask::done() const { return fork && isResult(*fork); }

std::vector<ForkTask> studyForkTasks(const storage::RunStore& store, const StudySpec& spec,
                                     const std::optional<storage::SweepInfo>& sweep)
{
    std::vector<ForkTask> tasks;
    const QList<RunInfo> sweepRuns = sweep ? store.sweepRuns(sweep->id) : QList<RunInfo>{};
    for (const PlannedFork& planned : plannedForks(spec)) {
        ForkTask task{planned.arm, planned.seed, std::nullopt, std::nullopt};
        for (const RunInfo& r : sweepRuns) // oldest attempt first: the latest result wins
            if (r.sweepIndex == planned.parentIndex && isResult(r))
                task.parent = r;
        storage::RunFilter filter;
        filter.tag = QString::fromStdString(studyForkTag(spec, planned.arm->name, planned.seed));
        for (const RunInfo& r : store.listRuns(filter)) { // newest first
            if (!task.fork || (isResult(r) && !isResult(*task.fork)))
                task.fork = r;
        }
        tasks.push_back(std::move(task));
    }
    return tasks;
}

StudyResults collectStudyResults(const storage::RunStore& store, const StudySpec& spec)
{
    StudyResults results;
    results.spec = spec;
    results.sweep = store.findSweepBySpec(QString::fromStdString(sweepSpecToJson(spec.sweep)));
    const SweepPlan plan = expandSweep(spec.sweep, spec.file);
    const QList<RunInfo> sweepRuns = results.sweep ? store.sweepRuns(results.sweep->id) : QList<RunInfo>{};
    const std::vector<ConfigurationResults> trained = collectResults(plan, sweepRuns);
    const std::vector<ForkTask> forks = studyForkTasks(store, spec, results.sweep);
    for (const std::string& arm : spec.armOrder) {
        ConfigurationResults r;
        r.configuration.index = int(results.arms.size());
        r.configuration.label = arm;
        if (const StudyForkArm* fork = spec.fork(arm)) {
            for (const ForkTask& task : forks) {
                if (task.arm != fork)
                    continue;
                if (task.parent && task.parent->status == RunStatus::Diverged && !task.fork) {
                    results.armNotes[arm] << QStringLiteral("seed %1: no fork, its parent (%2) diverged")
                                                 .arg(task.seed)
                                                 .arg(QString::fromStdString(fork->parent));
                    continue;
                }
                ++r.planned;
                if (task.fork)
                    count(r, *task.fork);
                else if (!task.parent)
                    results.armNotes[arm] << QStringLiteral("seed %1: no fork yet, its parent (%2) has no result")
                                                 .arg(task.seed)
                                                 .arg(QString::fromStdString(fork->parent));
            }
        } else {
            for (const ConfigurationResults& t : trained)
                if (spec.sweep.arms[std::size_t(t.configuration.arm)].name == arm) {
                    r.planned = t.planned;
                    for (const RunInfo& run : t.runs)
                        count(r, run);
                }
            // Once the study has begun, the seeds still without a result are named (a run that
            // failed, or a Slurm task whose database was not imported).
            for (const SweepRun& run : plan.runs) {
                const int armIndex = plan.configurations[std::size_t(run.configuration)].arm;
                if (!results.sweep || spec.sweep.arms[std::size_t(armIndex)].name != arm)
                    continue;
                const bool hasResult = std::any_of(sweepRuns.begin(), sweepRuns.end(), [&](const RunInfo& r) {
                    return r.sweepIndex == run.index && isResult(r);
                });
                if (!hasResult)
                    results.armNotes[arm] << QStringLiteral("seed %1: no result yet (run %2 of sweep %3)")
                                                 .arg(run.seed)
                                                 .arg(run.index)
                                                 .arg(results.sweep->id);
            }
        }
        results.arms.push_back(std::move(r));
    }

    QList<RunInfo> all;
    for (const ConfigurationResults& r : results.arms)
        for (const RunInfo& run : r.runs)
            if (isResult(run)) {
                all << run;
                ++results.buildRuns[run.engineVersion];
            }
    auto metrics = std::make_shared<std::vector<SweepMetric>>();
    for (const std::string& key : spec.metrics)
        metrics->push_back(studyMetric(key, store, all));
    results.metrics = metrics;
    std::vector<MetricMargin> margins;
    for (const StudyMargin& m : spec.margins)
        for (const SweepMetric& metric : *metrics)
            if (metric.key == m.metric)
                margins.emplace_back(&metric, m.margin);
    results.verdicts = pairVerdicts(results.arms, margins);
    results.verdict = decideStudyVerdict(spec, results.arms, results.verdicts);
    return results;
}

QString studyReportMarkdown(const StudyResults& results)
{
    const StudySpec& spec = results.spec;
    QString md;
    md += QStringLiteral("# %1\n\n").arg(QString::fromStdString(spec.title));
    md += QStringLiteral("**Claim.** %1 (%2)\n\n")
              .arg(QString::fromStdString(spec.claim), QString::fromStdString(spec.citation));
    md += QStringLiteral("**Result: %1.**\n\n").arg(results.verdict.line);

    md += QStringLiteral("## Setup\n\n") + setupText(spec) + u'\n';
    if (results.sweep) {
        md += QStringLiteral("Runs: sweep %1 (\"%2\")").arg(results.sweep->id).arg(results.sweep->name);
        if (!spec.forks.empty())
            md += QStringLiteral(" and the fork runs tagged `study:%1:%2:...`")
                      .arg(QString::fromStdString(spec.name), QString::fromStdString(spec.hash));
        md += QStringLiteral("; spec hash %1.\n\n").arg(QString::fromStdString(spec.hash));
    }

    md += QStringLiteral("## Results per arm\n\nMean +/- sd [95% interval of the mean] over the seeds that "
                         "finished (a diverged run counts in the divergence rate only).\n\n");
    md += QStringLiteral("| arm | runs (results of planned) | diverged [95% CI] |");
    for (const SweepMetric& m : *results.metrics)
        md += u' ' + cell(m.label) + QStringLiteral(" |");
    md += QStringLiteral("\n| --- | --- | --- |") + QStringLiteral(" --- |").repeated(int(results.metrics->size())) +
          u'\n';
    for (const ConfigurationResults& r : results.arms) {
        md += QStringLiteral("| %1 | %2 of %3 | %4 |")
                  .arg(cell(QString::fromStdString(r.configuration.label)))
                  .arg(r.results())
                  .arg(r.planned)
                  .arg(divergenceText(r));
        for (const SweepMetric& m : *results.metrics)
            md += u' ' + meanSdText(metricValues(r, m), m.format.scale, m.format.decimals, true) + QStringLiteral(" |");
        md += u'\n';
    }
    for (const auto& [arm, notes] : results.armNotes)
        for (const QString& note : notes)
            md += QStringLiteral("\n- %1: %2").arg(QString::fromStdString(arm), note);
    md += QStringLiteral("\n\n## Verdicts between arms\n\n");
    QStringList margins;
    for (const StudyMargin& m : spec.margins)
        for (const SweepMetric& metric : *results.metrics)
            if (metric.key == m.metric)
                margins << QStringLiteral("%1 +/-%2%3")
                               .arg(QString::fromStdString(metric.format.name))
                               .arg(m.margin * metric.format.scale, 0, 'g', 3)
                               .arg(metric.format.unit.empty()
                                        ? QString()
                                        : QStringLiteral(" ") + QString::fromStdString(metric.format.unit));
    md += QStringLiteral("Equivalent: two one-sided tests (TOST) put the difference within the margin (%1); better "
                         "or worse: a t-test finds a difference; else inconclusive. Every arm runs the same seeds, "
                         "so both tests are paired seed by seed (a fork continues its parent's seed); p-values "
                         "Holm-corrected over the pairs of each metric, at the 5% level.\n\n")
              .arg(margins.join(QStringLiteral(", ")));
    for (const PairVerdictRecord& r : results.verdicts)
        md += QStringLiteral("- ") +
              QString::fromStdString(stats::describeVerdict(
                  results.arms[r.other].configuration.label, results.arms[r.baseline].configuration.label,
                  r.metric->format, r.verdict, r.margin, r.baselineCount, r.otherCount)) +
              u'\n';
    if (results.verdicts.empty())
        md += QStringLiteral("- none yet: each arm needs results with the metric\n");

    md += QStringLiteral("\n## Does the claim reproduce?\n\n| arm | against | metric | predicted | found |\n"
                         "| --- | --- | --- | --- | --- |\n");
    for (const ExpectationOutcome& o : results.verdict.expectations)
        md += QStringLiteral("| %1 | %2 | %3 | %4 | %5%6 |\n")
                  .arg(cell(QString::fromStdString(o.expectation.arm)),
                       cell(QString::fromStdString(o.expectation.against)),
                       QString::fromStdString(o.expectation.metric), QString::fromStdString(o.expectation.verdict),
                       QString::fromStdString(o.found), o.met ? QStringLiteral(" (as predicted)") : QString());
    md += QStringLiteral("\n%1\n\n**%2.**\n").arg(studyVerdictRule(), results.verdict.line);

    if (!spec.differences.empty()) {
        md += QStringLiteral("\n## How this setup differs from the paper's\n\n");
        for (const std::string& d : spec.differences)
            md += QStringLiteral("- %1\n").arg(QString::fromStdString(d));
    }
    md += QStringLiteral("\n## Builds\n\n");
    if (results.buildRuns.empty()) {
        md += QStringLiteral("No run has a result yet.\n");
    } else if (results.buildRuns.size() == 1) {
        md += QStringLiteral("Every run was recorded by Mantissa %1.\n").arg(results.buildRuns.begin()->first);
    } else {
        QStringList builds;
        for (const auto& [version, runs] : results.buildRuns)
            builds << QStringLiteral("%1 (%2 runs)").arg(version).arg(runs);
        md += QStringLiteral("**Warning: the results mix builds**: %1. Runs of different versions may differ for "
                             "reasons other than the arms; run the study again in a new database (--db) to compare "
                             "like with like.\n")
                  .arg(builds.join(QStringLiteral(", ")));
    }
    return md;
}

} // namespace mantissa::sweep
