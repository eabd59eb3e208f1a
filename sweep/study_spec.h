#pragma once
// A study: a paper's claim rerun at workbench scale as a sweep of arms x seeds, with the
// pairs of arms whose verdicts decide whether the claim reproduces. One JSON file per study
// in studies/ (docs/studies.md documents the fields):
//   {"name": "loss-scaling", "title": "...",
//    "claim": {"text": "...", "citation": "..."},
//    "base": "deep-mlp", "set": {"training.max_steps": 400},
//    "arms": [{"name": "fp32", "set": {"precision.mode": "fp32"}},
//             {"name": "then bf16", "fork": {"arm": "nvfp4", "at": 0.8, "set": {"precision.mode": "mixed-bf16"}}}],
//    "seeds": 5,
//    "metrics": ["final_train_loss"], "margins": {"final_train_loss": 0.02},
//    "expect": [{"arm": "fp16", "against": "fp32", "metric": "final_train_loss", "verdict": "worse"}],
//    "differences": ["..."], "full": {"set": {...}, "seeds": 10}}
// An arm with "set" is trained from the start; an arm with "fork" continues each seed of the
// arm it names from that arm's saved state at the fraction `at` of its steps
// (mantissa-cli fork), with its settings changed. The trained arms are a sweep (sweep_spec.h,
// its "arms"), so they run, resume and are stored as any sweep.
#include "engine/sweep/sweep_spec.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mantissa::sweep {

// An arm that continues another arm's runs part-way through.
struct StudyForkArm {
    std::string name;
    std::string parent;    // a trained arm's name
    double at = 0.8;       // the fraction of the parent's steps after which it forks
    std::int64_t step = 0; // the step that fraction gives (at x the parent's training.max_steps)
    std::vector<std::pair<std::string, std::string>> settings; // config path, one JSON value as text
};

// One pair of arms whose verdict the claim predicts: `arm` against `against` on `metric`.
struct StudyExpectation {
    std::string arm, against, metric;
    std::string verdict; // "equivalent", "worse" or "better" (of `arm`, as the sweeps name them)
};

struct StudyMargin {
    std::string metric; // a key of studyMetricKeys()
    double margin = 0;  // in the metric's stored scale (test accuracy in [0, 1])
};

struct StudySpec {
    std::string name, title, claim, citation;
    std::vector<std::string> differences; // how our setup differs from the paper's, stated in the report
    std::string file;                     // where it was read from
    bool full = false;                    // the "full" setting is applied
    SweepSpec sweep;                      // the trained arms (sweep.arms) x seeds
    std::vector<StudyForkArm> forks;
    std::vector<std::string> armOrder; // every arm's name in the file's order
    std::vector<std::string> metrics;  // shown in the report, in this order
    std::vector<StudyMargin> margins;  // the metrics that get verdicts, with their margins
    std::vector<StudyExpectation> expectations;
    std::string hash; // of what decides the runs (the sweep spec and the fork arms): 12 hex digits

    const StudyForkArm* fork(const std::string& arm) const;
};

// The metrics a study may name: the sweeps' (sweep_statistics.h) and
// "weight_grad_below_2^-24", the share of weight-gradient values (over the numerics lens's
// sampled steps) whose magnitude is nonzero and below 2^-24, fp16's smallest subnormal.
const std::vector<std::string>& studyMetricKeys();
inline constexpr const char* kWeightGradUnderflowMetric = "weight_grad_below_2^-24";

// Parses a study file's text. `origin` (the file) prefixes every error, which names the field
// at fault: an unknown field (of the study, an arm, a fork, an expectation or "full"), an arm
// both trained and forked, a fork of an unknown arm or of one without training.max_steps, an
// expectation naming an unknown arm or a metric without a margin, fewer than 2 seeds. Throws
// ConfigError. `full` applies the study's "full" setting (refused when it has none).
StudySpec parseStudySpec(const std::string& json, const std::string& origin, const std::string& baseDirectory,
                         bool full);
StudySpec loadStudySpecFile(const std::string& path, bool full);

// The arms that cannot run, each as "arm NAME: reason" (a setting the config refuses, a format
// the model cannot take, a fork setting that is not a config field), all of them, checked with
// seed 0 before anything runs. Empty when every arm can run.
std::vector<std::string> armsThatCannotRun(const StudySpec& spec);

// The tag that keys one fork run of a study: study name, spec hash, arm and seed, so that a
// study started again finds the forks it already has.
std::string studyForkTag(const StudySpec& spec, const std::string& arm, std::uint64_t seed);

// One fork run a study plans: its fork arm, its seed, and its parent's index in the study's
// sweep (the SweepRun::index of the parent arm's run with that seed). Every fork arm's seeds in
// spec.forks order, seed-minor: the order of the fork tasks of a Slurm submission too.
struct PlannedFork {
    const StudyForkArm* arm = nullptr;
    std::uint64_t seed = 0;
    int parentIndex = 0;
};
std::vector<PlannedFork> plannedForks(const StudySpec& spec);

// The config PATH=VALUE of a fork setting as `mantissa-cli fork --set` takes it.
std::string forkSettingText(const std::pair<std::string, std::string>& setting);

} // namespace mantissa::sweep
