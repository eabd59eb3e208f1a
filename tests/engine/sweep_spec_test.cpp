// Sweep specs: expansion order and labels, the shorthands, the self-contained round trip, and
// the errors a user can make (each naming the key, the value and the run it would have made).
#include "engine/config/presets.h"
#include "engine/sweep/sweep_spec.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using namespace mantissa;

namespace {

std::string errorOf(const std::string& spec)
{
    try {
        expandSweep(parseSweepSpec(spec, "sweep.json", ""), "sweep.json");
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST(SweepSpec, PrecisionsTimesSeedsConfigurationMajor)
{
    const SweepSpec spec = parseSweepSpec(
        R"({"base": "mlp", "precisions": ["fp32", "mixed-fp16"], "seeds": 3, "set": {"training.max_steps": 5}})",
        "sweep.json", "");
    EXPECT_EQ(spec.name, "mlp sweep");
    EXPECT_EQ(spec.runCount(), 6u);
    const SweepPlan plan = expandSweep(spec, "sweep.json");
    ASSERT_EQ(plan.configurations.size(), 2u);
    EXPECT_EQ(plan.configurations[0].label, "fp32");
    EXPECT_EQ(plan.configurations[1].label, "mixed-fp16");
    ASSERT_EQ(plan.runs.size(), 6u);
    for (int i = 0; i < 6; ++i) {
        const SweepRun& run = plan.runs[i];
        EXPECT_EQ(run.index, i);
        EXPECT_EQ(run.configuration, i / 3);
        EXPECT_EQ(run.seed, std::uint64_t(i % 3));
        EXPECT_EQ(run.config.training.seed, std::uint64_t(i % 3));
        EXPECT_EQ(run.config.training.maxSteps, 5);
        EXPECT_EQ(run.config.precision, i < 3 ? PrecisionMode::Fp32 : PrecisionMode::MixedFp16);
        EXPECT_EQ(run.config.name, "mlp");
    }
    EXPECT_EQ(plan.runs[4].label, "precision.mode=mixed-fp16, seed=1");
}

TEST(SweepSpec, AnyKeyByPathAndShorthandsCombine)
{
    const SweepSpec spec = parseSweepSpec(R"({"base": {"preset": "mlp"}, "learning_rates": [0.1, 0.01],
        "loss_scales": ["dynamic", 128], "axes": [{"key": "model.layers[1].units", "values": [16, 32, 64]}],
        "seeds": [7, 9]})",
                                          "sweep.json", "");
    const SweepPlan plan = expandSweep(spec, "sweep.json");
    EXPECT_EQ(plan.configurations.size(), 12u);
    EXPECT_EQ(plan.runs.size(), 24u);
    // The shorthands come first in their fixed order (loss scales before learning rates), then axes.
    EXPECT_EQ(plan.configurations[0].label, "loss_scale=dynamic, lr=0.1, units=16");
    EXPECT_EQ(plan.configurations[4].label, "loss_scale=dynamic, lr=0.01, units=32");
    EXPECT_EQ(plan.configurations[11].label, "loss_scale=static 128, lr=0.01, units=64");
    const RunConfig& last = plan.runs.back().config;
    EXPECT_EQ(last.lossScale.type, LossScaleType::Static);
    EXPECT_FLOAT_EQ(last.lossScale.value, 128);
    EXPECT_FLOAT_EQ(last.optimizer.lr, 0.01f);
    EXPECT_EQ(last.model.layers[1].units, 64);
    EXPECT_EQ(last.training.seed, 9u);
    EXPECT_EQ(plan.runs[0].config.lossScale.type, LossScaleType::Dynamic);
    EXPECT_EQ(plan.runs[0].config.training.seed, 7u);
}

TEST(SweepSpec, SelfContainedFormRoundTrips)
{
    const SweepSpec spec = parseSweepSpec(
        R"({"name": "n", "base": "softmax", "batch_sizes": [32, 64], "seeds": 2, "set": {"training.epochs": 2}})",
        "sweep.json", "");
    const std::string text = sweepSpecToJson(spec);
    const SweepSpec again = parseSweepSpec(text, "stored", "");
    EXPECT_EQ(sweepSpecToJson(again), text);
    EXPECT_EQ(again.name, "n");
    const SweepPlan a = expandSweep(spec, "a"), b = expandSweep(again, "b");
    ASSERT_EQ(a.runs.size(), b.runs.size());
    for (std::size_t i = 0; i < a.runs.size(); ++i)
        EXPECT_EQ(runConfigToJson(a.runs[i].config), runConfigToJson(b.runs[i].config));
    EXPECT_EQ(a.runs[3].config.training.epochs, 2);
    EXPECT_EQ(a.runs[3].config.training.batchSize, 64);
}

TEST(SweepSpec, BaseFromAFileBesideTheSpec)
{
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mantissa-sweep-spec-test";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "model.json") << presetJson("softmax");
    std::ofstream(dir / "sweep.json") << R"({"base": {"file": "model.json"}, "seeds": [1]})";
    const SweepSpec spec = loadSweepSpecFile((dir / "sweep.json").string());
    EXPECT_EQ(spec.runCount(), 1u);
    EXPECT_EQ(expandSweep(spec, "s").runs[0].config.name, "softmax");
    std::filesystem::remove_all(dir);
}

TEST(SweepSpec, WithoutSeedsRunsTheBaseSeedOnce)
{
    const SweepSpec spec = parseSweepSpec(R"({"base": "mlp", "precisions": ["fp32"]})", "s", "");
    ASSERT_EQ(spec.seeds.size(), 1u);
    EXPECT_EQ(spec.seeds[0], presetConfig("mlp").training.seed);
}

TEST(SweepSpec, ErrorsNameTheKeyValueAndRun)
{
    // An unknown key: the config parser's strictness, with the run in front.
    EXPECT_EQ(errorOf(R"({"base": "mlp", "axes": [{"key": "optimizer.lrr", "values": [0.1]}], "seeds": 2})"),
              "sweep.json run 0 of 2 (optimizer.lrr=0.1, seed=0): optimizer.lrr is not a known field");
    // An invalid value for a known key.
    const std::string badMode = errorOf(R"({"base": "mlp", "precisions": ["fp32", "fp17"], "seeds": 1})");
    EXPECT_NE(badMode.find("run 1 of 2 (precision.mode=fp17, seed=0)"), std::string::npos) << badMode;
    EXPECT_NE(badMode.find("fp17"), std::string::npos) << badMode;
    const std::string badType = errorOf(R"({"base": "mlp", "batch_sizes": [32, "many"], "seeds": 1})");
    EXPECT_NE(badType.find("run 1 of 2 (training.batch_size=many, seed=0): training.batch_size has the wrong type"),
              std::string::npos)
        << badType;
    const std::string zeroBatch = errorOf(R"({"base": "mlp", "batch_sizes": [0], "seeds": 1})");
    EXPECT_NE(zeroBatch.find("training.batch_size must be 1 to 65536 samples (got 0)"), std::string::npos) << zeroBatch;
    // A path into an array element that does not exist.
    const std::string noLayer =
        errorOf(R"({"base": "mlp", "axes": [{"key": "model.layers[40].units", "values": [8]}]})");
    EXPECT_NE(noLayer.find("model.layers[40] does not exist"), std::string::npos) << noLayer;
    // Seeds.
    EXPECT_EQ(errorOf(R"({"base": "mlp", "seeds": 0})"),
              "sweep.json: seeds is 0; a sweep needs at least one seed (seeds: N runs seeds 0 to N-1)");
    EXPECT_NE(errorOf(R"({"base": "mlp", "seeds": []})").find("empty list"), std::string::npos);
    EXPECT_NE(errorOf(R"({"base": "mlp", "seeds": [1, 1]})").find("twice"), std::string::npos);
    // The spec itself.
    EXPECT_NE(errorOf(R"({"base": "mlp", "seed": 3})").find("seed is not a known field of a sweep spec"),
              std::string::npos);
    EXPECT_NE(errorOf(R"({"precisions": ["fp32"]})").find("base is missing"), std::string::npos);
    EXPECT_NE(errorOf(R"({"base": "nope"})").find("unknown preset \"nope\""), std::string::npos);
    EXPECT_NE(errorOf(R"({"base": "mlp", "precisions": []})").find("precisions must be a non-empty array"),
              std::string::npos);
    EXPECT_NE(errorOf(R"({"base": "mlp", "set": {"training.epoch": 1}})").find("training.epoch is not a known field"),
              std::string::npos);
    EXPECT_NE(errorOf(R"({"base": "mlp", "axes": [{"key": "training.seed", "values": [1]}]})").find("by \"seeds\""),
              std::string::npos);
    EXPECT_NE(errorOf(R"({"base": "mlp", "axes": [{"key": "a..b", "values": [1]}]})").find("empty member"),
              std::string::npos);
}

// The workbench's "Compare precisions" over seeds builds its spec from the typed config; it is
// the spec the CLI's shorthand (--precisions A,B --seeds N) parses from JSON, field for field.
TEST(SweepSpec, ComparingPrecisionsFromATypedConfigIsTheShorthandsSpec)
{
    RunConfig base = presetConfig("mlp");
    base.training.maxSteps = 5;
    const SweepSpec typed =
        precisionComparisonSpec(base, {PrecisionMode::Fp32, PrecisionMode::MixedFp16, PrecisionMode::Mxfp8}, 3);
    const nlohmann::json shorthand = {{"name", "mlp: fp32 vs mixed-fp16, mxfp8 x 3 seeds"},
                                      {"base", {{"config", nlohmann::json::parse(runConfigToJson(base))}}},
                                      {"precisions", {"fp32", "mixed-fp16", "mxfp8"}},
                                      {"seeds", 3}};
    const SweepSpec parsed = parseSweepSpec(shorthand.dump(), "test", "");
    EXPECT_EQ(sweepSpecToJson(typed), sweepSpecToJson(parsed));
    EXPECT_EQ(expandSweep(typed, "test").runs.size(), 9u);
    // An invalid config is refused as it is, naming the field.
    base.training.batchSize = 0;
    try {
        precisionComparisonSpec(base, {PrecisionMode::Fp32, PrecisionMode::MixedBf16}, 2);
        ADD_FAILURE() << "batch size 0 was accepted";
    } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()), "Compare precisions: training.batch_size must be 1 to 65536 samples (got 0)");
    }
}

TEST(SweepSpec, ArmsSetSeveralKeysTogetherAndComeOutermost)
{
    const SweepSpec spec = parseSweepSpec(
        R"({"base": "mlp", "arms": [{"name": "fp16 static", "set": {"precision.mode": "fp16",
              "precision.loss_scale": {"type": "static", "value": 128}}},
            {"name": "fp32", "set": {"precision.mode": "fp32"}}],
            "learning_rates": [0.1, 0.2], "seeds": 2})",
        "sweep.json", "");
    ASSERT_EQ(spec.arms.size(), 2u);
    EXPECT_EQ(spec.configurationCount(), 4u);
    const SweepPlan plan = expandSweep(spec, "sweep.json");
    ASSERT_EQ(plan.runs.size(), 8u);
    EXPECT_EQ(plan.configurations[0].label, "fp16 static, lr=0.1");
    EXPECT_EQ(plan.configurations[1].label, "fp16 static, lr=0.2");
    EXPECT_EQ(plan.configurations[2].label, "fp32, lr=0.1");
    EXPECT_EQ(plan.configurations[0].arm, 0);
    EXPECT_EQ(plan.configurations[3].arm, 1);
    EXPECT_EQ(plan.runs[0].config.precision, PrecisionMode::Fp16);
    EXPECT_EQ(plan.runs[0].config.lossScale.type, LossScaleType::Static);
    EXPECT_FLOAT_EQ(plan.runs[0].config.lossScale.value, 128.0f);
    EXPECT_FLOAT_EQ(plan.runs[1].config.optimizer.lr, 0.1f);
    EXPECT_EQ(plan.runs[4].config.precision, PrecisionMode::Fp32);
    EXPECT_EQ(plan.runs[4].label, "arm=fp32, optimizer.lr=0.1, seed=0");
    // The self-contained form keeps the arms, and a spec without arms writes none.
    EXPECT_EQ(sweepSpecToJson(parseSweepSpec(sweepSpecToJson(spec), "stored", "")), sweepSpecToJson(spec));
    EXPECT_EQ(sweepSpecToJson(parseSweepSpec(R"({"base": "mlp", "seeds": 2})", "s", "")).find("arms"),
              std::string::npos);
}

TEST(SweepSpec, ArmErrorsNameTheArm)
{
    EXPECT_NE(errorOf(R"({"base": "mlp", "arms": [{"name": "a", "sett": {}}]})")
                  .find("sweep.json: arms[0]: sett is not a known field of an arm"),
              std::string::npos);
    EXPECT_NE(errorOf(R"({"base": "mlp", "arms": [{"name": "a"}, {"name": "a"}]})").find("two arms are named \"a\""),
              std::string::npos);
    const std::string bad = errorOf(R"({"base": "mlp", "arms": [{"name": "odd", "set": {"precision.mode": "fp17"}}]})");
    EXPECT_NE(bad.find("arm=odd"), std::string::npos) << bad;
    EXPECT_NE(bad.find("fp17"), std::string::npos) << bad;
    EXPECT_NE(errorOf(R"({"base": "mlp", "arms": [{"name": "s", "set": {"training.seed": 3}}]})")
                  .find("training.seed is swept by \"seeds\""),
              std::string::npos);
}

TEST(SweepSpec, NestedKeysAnObjectLeftOutOfTheBaseCanBeSet)
{
    // An fp32 config is written without precision.recipe; an arm that switches to a recipe
    // sets its options all the same.
    const SweepPlan plan =
        expandSweep(parseSweepSpec(R"({"base": "mlp", "arms": [{"name": "sr", "set": {"precision.mode": "mxfp4",
                          "precision.recipe.stochastic_rounding": "on"}}]})",
                                   "sweep.json", ""),
                    "sweep.json");
    EXPECT_EQ(plan.runs[0].config.recipe.stochasticRounding, RecipeSwitch::On);
}
