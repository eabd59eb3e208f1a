// Studies without training: a spec's refusals (each naming the field and the file), the
// trained arms as a sweep and the fork arms' steps, the arms that cannot run, the shipped
// studies in studies/ parsing and every arm able to run, and the verdict line decided from
// the statistics of synthetic results.
#include "engine/util/check.h"
#include "sweep/study_results.h"
#include "sweep/study_spec.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace mantissa;
using namespace mantissa::sweep;

namespace {

// A valid study over the mlp preset; `extra` replaces or adds top-level fields.
std::string study(const std::string& extra = "", const std::string& arms = "")
{
    return R"({"name": "tiny", "claim": {"text": "fp16 matches fp32", "citation": "A. Author 2020"},
               "base": "mlp", "set": {"training.max_steps": 10},
               "arms": )" +
           (arms.empty() ? std::string(R"([{"name": "fp32", "set": {"precision.mode": "fp32"}},
                          {"name": "mixed", "set": {"precision.mode": "mixed-fp16"}},
                          {"name": "late bf16", "fork": {"arm": "mixed", "at": 0.8,
                                                         "set": {"precision.mode": "mixed-bf16"}}}])")
                         : arms) +
           R"(, "seeds": 5, "metrics": ["final_train_loss", "final_test_accuracy"],
               "margins": {"final_train_loss": 0.05},
               "expect": [{"arm": "mixed", "against": "fp32", "metric": "final_train_loss", "verdict": "equivalent"},
                          {"arm": "late bf16", "against": "fp32", "metric": "final_train_loss",
                           "verdict": "equivalent"}])" +
           extra + "}";
}

std::string errorOf(const std::string& text, bool full = false)
{
    try {
        parseStudySpec(text, "studies/tiny.json", "", full);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

storage::RunInfo finishedRun(qint64 id, double loss)
{
    storage::RunInfo run;
    run.id = id;
    run.status = RunStatus::Finished;
    run.summary.finalTrainLoss = loss;
    return run;
}

ConfigurationResults arm(const std::string& name, const std::vector<double>& losses)
{
    ConfigurationResults r;
    r.configuration.label = name;
    r.planned = int(losses.size());
    for (double loss : losses) {
        r.runs << finishedRun(r.runs.size() + 1, loss);
        ++r.finished;
    }
    return r;
}

StudyVerdict verdictOf(const StudySpec& spec, const std::vector<ConfigurationResults>& arms)
{
    const std::vector<PairVerdictRecord> records =
        pairVerdicts(arms, std::vector<MetricMargin>{{&sweepMetric("final_train_loss"), 0.05}});
    return decideStudyVerdict(spec, arms, records);
}

} // namespace

TEST(StudySpec, TrainedArmsFormASweepAndForksTakeTheirStep)
{
    const StudySpec spec = parseStudySpec(study(), "studies/tiny.json", "", false);
    EXPECT_EQ(spec.name, "tiny");
    EXPECT_EQ(spec.armOrder, (std::vector<std::string>{"fp32", "mixed", "late bf16"}));
    ASSERT_EQ(spec.sweep.arms.size(), 2u);
    EXPECT_EQ(spec.sweep.seeds.size(), 5u);
    ASSERT_EQ(spec.forks.size(), 1u);
    EXPECT_EQ(spec.forks[0].parent, "mixed");
    EXPECT_EQ(spec.forks[0].step, 8);
    // The parent saves its state at the fork step; the other arm does not.
    const SweepPlan plan = expandSweep(spec.sweep, spec.file);
    EXPECT_EQ(plan.runs[5].config.training.saveStateEvery, 8);
    EXPECT_EQ(plan.runs[0].config.training.saveStateEvery, 0);
    EXPECT_EQ(spec.hash.size(), 12u);
    // The hash follows what decides the runs, not the words around them.
    EXPECT_EQ(parseStudySpec(study(R"(, "title": "another title")"), "x.json", "", false).hash, spec.hash);
    EXPECT_NE(parseStudySpec(study(R"(, "set": {"training.max_steps": 20})"), "x.json", "", false).hash, spec.hash);
    EXPECT_TRUE(armsThatCannotRun(spec).empty());
}

TEST(StudySpec, FullSettingReplacesStepsAndSeeds)
{
    const std::string text = study(R"(, "full": {"set": {"training.max_steps": 50}, "seeds": 8})");
    const StudySpec full = parseStudySpec(text, "x.json", "", true);
    EXPECT_EQ(full.sweep.seeds.size(), 8u);
    EXPECT_EQ(full.forks[0].step, 40);
    EXPECT_NE(full.sweep.name, parseStudySpec(text, "x.json", "", false).sweep.name);
    EXPECT_NE(errorOf(study(), true).find("--full asks for the study's \"full\" setting, and it has none"),
              std::string::npos);
}

TEST(StudySpec, UnknownFieldsAreRefusedNamingFieldAndFile)
{
    EXPECT_NE(errorOf(study(R"(, "seedz": 3)")).find("studies/tiny.json: seedz is not a known field of a study spec"),
              std::string::npos);
    EXPECT_NE(errorOf(study("", R"([{"name": "a", "set": {}, "colour": "red"}, {"name": "b"}])"))
                  .find("studies/tiny.json: arms[0]: colour is not a known field of an arm"),
              std::string::npos);
    EXPECT_NE(errorOf(study("", R"([{"name": "fp32"}, {"name": "mixed"},
                                    {"name": "late bf16", "fork": {"arm": "mixed", "at": 0.8, "when": 1,
                                                                   "set": {"precision.mode": "bf16"}}}])"))
                  .find("arms[2].fork: when is not a known field of a fork"),
              std::string::npos);
    EXPECT_NE(errorOf(study(R"(, "full": {"sets": {}})")).find("full: sets is not a known field of the full setting"),
              std::string::npos);
}

TEST(StudySpec, BadArmsExpectationsAndSeedsAreRefused)
{
    EXPECT_NE(errorOf(study("", R"([{"name": "fp32"}, {"name": "x", "fork": {"arm": "nope", "at": 0.5,
                                                                              "set": {"optimizer.lr": 0.1}}}])"))
                  .find("arm x forks \"nope\", which is not an arm of this study"),
              std::string::npos);
    EXPECT_NE(errorOf(study("", R"([{"name": "fp32"}, {"name": "x", "fork": {"arm": "fp32", "at": 1.5,
                                                                              "set": {"optimizer.lr": 0.1}}}])"))
                  .find("fork.at must be a fraction"),
              std::string::npos);
    EXPECT_NE(errorOf(study(R"(, "seeds": 1)")).find("at least 2 per arm"), std::string::npos);
    EXPECT_NE(errorOf(study(R"(, "expect": [{"arm": "mixed", "against": "fp64", "metric": "final_train_loss",
                                             "verdict": "worse"}])"))
                  .find("\"fp64\" is not an arm of this study"),
              std::string::npos);
    EXPECT_NE(errorOf(study(R"(, "expect": [{"arm": "mixed", "against": "fp32", "metric": "final_test_accuracy",
                                             "verdict": "worse"}])"))
                  .find("final_test_accuracy has no margin"),
              std::string::npos);
    EXPECT_NE(errorOf(study(R"(, "metrics": ["final_train_los"])")).find("not one of final_test_accuracy"),
              std::string::npos);
}

// A language model's and a regression's test metrics are study metrics too: the end-of-training
// measure, where a run shorter than an epoch makes the train loss a mean over the whole run.
TEST(StudySpec, EveryTasksTestMetricIsAStudyMetric)
{
    const StudySpec spec =
        parseStudySpec(study(R"(, "metrics": ["final_train_loss", "final_test_bits_per_character", "best_test_rmse"],
                  "margins": {"final_train_loss": 0.05, "final_test_bits_per_character": 0.01})"),
                       "studies/tiny.json", "", false);
    EXPECT_EQ(spec.metrics,
              (std::vector<std::string>{"final_train_loss", "final_test_bits_per_character", "best_test_rmse"}));
    ASSERT_EQ(spec.margins.size(), 2u);
    for (const StudyMargin& m : spec.margins)
        EXPECT_EQ(m.margin, m.metric == "final_test_bits_per_character" ? 0.01 : 0.05) << m.metric;
    const std::string refused = errorOf(study(R"(, "metrics": ["final_test_bpc"])"));
    EXPECT_NE(refused.find("final_test_bits_per_character"), std::string::npos) << refused;
    EXPECT_NE(refused.find("best_test_rmse"), std::string::npos) << refused;
}

TEST(StudySpec, ArmsThatCannotRunAreAllNamedWithTheirReason)
{
    const StudySpec spec = parseStudySpec(study("", R"([{"name": "fp32", "set": {"precision.mode": "fp32"}},
                      {"name": "mixed", "set": {"precision.mode": "fp17"}},
                      {"name": "late bf16", "fork": {"arm": "fp32", "at": 0.5, "set": {"optimizer.lrr": 0.1}}}])"),
                                          "studies/tiny.json", "", false);
    const std::vector<std::string> problems = armsThatCannotRun(spec);
    ASSERT_EQ(problems.size(), 2u);
    EXPECT_EQ(problems[0].rfind("arm mixed: ", 0), 0u) << problems[0];
    EXPECT_NE(problems[0].find("fp17"), std::string::npos) << problems[0];
    EXPECT_EQ(problems[1].rfind("arm late bf16: ", 0), 0u) << problems[1];
    EXPECT_NE(problems[1].find("optimizer.lrr"), std::string::npos) << problems[1];
}

TEST(StudySpec, ShippedStudiesParseAndEveryArmCanRun)
{
    int count = 0;
    for (const auto& entry : std::filesystem::directory_iterator(MANTISSA_STUDIES_DIR)) {
        if (entry.path().extension() != ".json")
            continue;
        ++count;
        SCOPED_TRACE(entry.path().string());
        const StudySpec spec = loadStudySpecFile(entry.path().string(), false);
        EXPECT_GE(spec.sweep.seeds.size(), 5u);
        EXPECT_EQ(spec.name, entry.path().stem().string());
        EXPECT_TRUE(armsThatCannotRun(spec).empty()) << armsThatCannotRun(spec).front();
    }
    EXPECT_GE(count, 5);
}

TEST(StudyVerdict, ComputedFromTheStatistics)
{
    const StudySpec spec = parseStudySpec(study(), "studies/tiny.json", "", false);
    const std::vector<double> fp32 = {1.00, 1.01, 0.99, 1.00, 1.02};
    // Both within 0.05 of fp32 with a small spread: every prediction found.
    StudyVerdict v = verdictOf(spec, {arm("fp32", fp32), arm("mixed", {1.01, 1.00, 1.00, 1.02, 0.99}),
                                      arm("late bf16", {1.00, 1.00, 1.01, 0.99, 1.01})});
    EXPECT_EQ(v.outcome, "reproduces");
    EXPECT_EQ(v.line, "reproduces: 2 of 2 predicted verdicts found");
    // The fork arm clearly worse: one of two.
    v = verdictOf(spec, {arm("fp32", fp32), arm("mixed", {1.01, 1.00, 1.00, 1.02, 0.99}),
                         arm("late bf16", {1.50, 1.52, 1.49, 1.51, 1.50})});
    EXPECT_EQ(v.outcome, "partly reproduces");
    ASSERT_EQ(v.expectations.size(), 2u);
    EXPECT_TRUE(v.expectations[0].met);
    EXPECT_EQ(v.expectations[1].found, "worse");
    // Both worse: none.
    v = verdictOf(spec, {arm("fp32", fp32), arm("mixed", {1.40, 1.42, 1.41, 1.39, 1.40}),
                         arm("late bf16", {1.50, 1.52, 1.49, 1.51, 1.50})});
    EXPECT_EQ(v.outcome, "does not reproduce");
    EXPECT_EQ(v.expectations[0].found, "worse");
    // Too noisy to decide: inconclusive counts as not found.
    v = verdictOf(spec, {arm("fp32", {0.5, 1.5, 1.0, 0.8, 1.2}), arm("mixed", {0.6, 1.4, 1.1, 0.7, 1.3}),
                         arm("late bf16", {1.00, 1.00, 1.01, 0.99, 1.01})});
    EXPECT_EQ(v.expectations[0].found, "inconclusive");
    EXPECT_FALSE(v.expectations[0].met);
    // A planned run without a result: no verdict.
    ConfigurationResults missing = arm("late bf16", {1.00, 1.00, 1.01, 0.99});
    missing.planned = 5;
    v = verdictOf(spec, {arm("fp32", fp32), arm("mixed", {1.01, 1.00, 1.00, 1.02, 0.99}), missing});
    EXPECT_EQ(v.outcome, "no verdict yet");
    EXPECT_EQ(v.line, "no verdict yet: 1 of 15 planned runs have no result");
}

TEST(StudyVerdict, ExpectationReadTheOtherWayRoundTurnsBetterAndWorse)
{
    // "fp32 against mixed: better" is the same finding as "mixed against fp32: worse".
    const StudySpec spec = parseStudySpec(
        study(
            R"(, "expect": [{"arm": "fp32", "against": "mixed", "metric": "final_train_loss", "verdict": "better"}])"),
        "studies/tiny.json", "", false);
    const StudyVerdict v =
        verdictOf(spec, {arm("fp32", {1.00, 1.01, 0.99, 1.00, 1.02}), arm("mixed", {1.40, 1.42, 1.41, 1.39, 1.40}),
                         arm("late bf16", {1.0, 1.0, 1.0, 1.0, 1.0})});
    EXPECT_EQ(v.expectations[0].found, "better");
    EXPECT_EQ(v.outcome, "reproduces");
}
