#pragma once
// A study's results as stored: its trained arms from its sweep, its fork arms from the runs
// tagged with their key (studyForkTag), the verdicts between every pair of arms on the
// metrics with a margin (sweep_statistics.h: Holm-corrected as a sweep's are), the predicted
// verdicts found or not, and the line that says whether the claim reproduces. The CLI prints
// the report and the workbench shows it; neither writes a verdict of its own.
#include "sweep/study_spec.h"
#include "sweep/sweep_results.h"
#include "sweep/sweep_statistics.h"

#include <QString>

#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace mantissa::storage {
class RunStore;
}

namespace mantissa::sweep {

// One predicted verdict and the verdict the statistics give.
struct ExpectationOutcome {
    StudyExpectation expectation;
    std::string found; // "equivalent", "worse", "better", "inconclusive" or "undecidable"
    bool met = false;
};

struct StudyVerdict {
    // "reproduces", "partly reproduces", "does not reproduce", or "no verdict yet" while runs are missing.
    QString outcome;
    QString line; // the outcome with its reason: "partly reproduces: 1 of 2 predicted verdicts found"
    std::vector<ExpectationOutcome> expectations;
};

// The rule, stated once: every predicted verdict found: reproduces; none: does not reproduce;
// some: partly reproduces. While a run of some arm is missing (planned but without a result)
// there is no verdict yet. `arms` are in spec.armOrder; `records` come from pairVerdicts over
// them.
StudyVerdict decideStudyVerdict(const StudySpec& spec, const std::vector<ConfigurationResults>& arms,
                                const std::vector<PairVerdictRecord>& records);
// The rule in a sentence, for the report.
QString studyVerdictRule();

struct StudyResults {
    StudySpec spec;
    std::optional<storage::SweepInfo> sweep;     // none before the study's first run
    std::vector<ConfigurationResults> arms;      // in spec.armOrder, labelled by arm name
    std::map<std::string, QStringList> armNotes; // a fork arm's seeds that could not fork, and why
    // The metrics of the report (the sweeps' and the study's own); records point into it.
    std::shared_ptr<const std::vector<SweepMetric>> metrics;
    std::vector<PairVerdictRecord> verdicts;
    StudyVerdict verdict;
    std::map<QString, int> buildRuns; // engine version -> runs with a result recorded by it
};

// The metric `key` of the study (studyMetricKeys()); the weight-gradient underflow share reads
// each run's numerics-lens histograms from `store` once, here.
SweepMetric studyMetric(const std::string& key, const storage::RunStore& store, const QList<storage::RunInfo>& runs);

// Throws StorageError or ConfigError.
StudyResults collectStudyResults(const storage::RunStore& store, const StudySpec& spec);

// For every fork arm and seed: the parent run of that seed (its latest finished or diverged
// attempt in the study's sweep) and the fork's latest attempt if it has one.
struct ForkTask {
    const StudyForkArm* arm = nullptr;
    std::uint64_t seed = 0;
    std::optional<storage::RunInfo> parent;
    std::optional<storage::RunInfo> fork; // finished or diverged: done
    bool done() const;
};
std::vector<ForkTask> studyForkTasks(const storage::RunStore& store, const StudySpec& spec,
                                     const std::optional<storage::SweepInfo>& sweep);

// The report as Markdown: the claim, the setup, the table per arm (mean, sd and 95% interval
// of each metric), the verdicts, the predicted verdicts and the line, the differences from the
// paper, and which builds recorded the runs (flagged when more than one did).
QString studyReportMarkdown(const StudyResults& results);

} // namespace mantissa::sweep
