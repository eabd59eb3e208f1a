// The advisor's probe on a small trained MLP in which one layer is made sensitive by
// construction: its input unit 0 is dead (the layer before writes 0 there) and every weight
// reading it is 10^4, which multiplies 0 in fp32 but sets the E8M0 scale of each of the
// layer's MXFP4 blocks so high that every other weight flushes to zero.
#include "engine/advisor/advice.h"
#include "engine/advisor/precision_probe.h"
#include "engine/backend/backend.h"
#include "engine/model/layer.h"
#include "engine/train/trainer.h"
#include "engine/util/check.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

using namespace mantissa;

namespace {

Parameter& parameterNamed(Model& model, const std::string& name)
{
    for (Parameter* p : model.parametersInBackwardOrder())
        if (p->name == name)
            return *p;
    throw std::runtime_error("no parameter " + name);
}

void edit(Backend& backend, Parameter& p, const std::function<void(std::vector<float>&)>& change)
{
    std::vector<float> values(static_cast<std::size_t>(p.master.numel()));
    backend.download(p.master, values.data());
    change(values);
    backend.upload(values.data(), p.master);
    if (!p.working.sharesStorageWith(p.master))
        backend.upload(values.data(), p.working);
}

class PrecisionProbeTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_path = std::filesystem::temp_directory_path() /
                 ("mantissa-probe-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
                  "-" + std::to_string(::getpid()) + ".ckpt");
        Trainer trainer(m_config, *m_backend, m_data);
        trainer.run();
        Model& model = trainer.model();
        // 1.linear [32, 64]: unit 0 always 0 after its ReLU.
        edit(*m_backend, parameterNamed(model, "1.linear.weight"),
             [](std::vector<float>& w) { std::fill(w.begin(), w.begin() + 64, 0.0f); });
        edit(*m_backend, parameterNamed(model, "1.linear.bias"), [](std::vector<float>& b) { b[0] = -1.0f; });
        // 2.linear [32, 32]: column 0, which reads unit 0, at 10^4.
        edit(*m_backend, parameterNamed(model, "2.linear.weight"), [](std::vector<float>& w) {
            for (std::size_t row = 0; row < 32; ++row)
                w[row * 32] = 1e4f;
        });
        trainer.saveCheckpoint(m_path.string());
    }
    void TearDown() override { std::filesystem::remove(m_path); }

    RunConfig m_config = test_support::smallSyntheticConfig();
    std::unique_ptr<Backend> m_backend = makeCpuBackend(1);
    DatasetSplits m_data = loadDatasets(m_config.data, m_config.training.seed);
    std::filesystem::path m_path;
};

} // namespace

TEST_F(PrecisionProbeTest, RanksTheLayerMxfp4DestroysFirst)
{
    PrecisionProbe probe(m_config, *m_backend, m_data, m_path.string(), {2, 32});
    ASSERT_EQ(probe.layers().size(), 3u);
    EXPECT_EQ(probe.layers()[1].name, "2.linear");
    EXPECT_EQ(probe.layers()[1].flops, 2 * 32 * 32);
    EXPECT_EQ(probe.heldOutDescription(), "synthetic/test: the first 64 samples (2 batches of up to 32)");
    std::vector<LayerProbeResult> results;
    for (const AdvisorLayer& layer : probe.layers())
        results.push_back(probe.probe(layer.name, LayerPrecision::Mxfp4));
    for (const LayerProbeResult& r : results)
        EXPECT_TRUE(r.misfit.empty()) << r.misfit;
    for (const LayerProbeResult& r : results)
        std::printf("%s: loss increase %g, output relative error %g\n", r.layer.c_str(), r.lossIncrease,
                    r.outputRelativeError);
    // The sensitive layer costs more than ten times what either other one does in loss, and
    // its output error is several times theirs (MXFP4 moves this small model's output by
    // about 13% wherever it goes; here the output is all error).
    EXPECT_GT(results[1].lossIncrease, 0.5);
    EXPECT_GT(results[1].lossIncrease, 10 * std::max(results[0].lossIncrease, results[2].lossIncrease));
    EXPECT_GT(results[1].outputRelativeError, 0.9);
    EXPECT_GT(results[1].outputRelativeError,
              5 * std::max(results[0].outputRelativeError, results[2].outputRelativeError));
    // The cheap score ranks it first as well.
    const std::vector<double> scores = probe.scores(LayerPrecision::Mxfp4);
    ASSERT_EQ(scores.size(), 3u);
    for (std::size_t l = 0; l < scores.size(); ++l)
        std::printf("%s: score %g\n", results[l].layer.c_str(), scores[l]);
    EXPECT_GT(scores[1], std::max(scores[0], scores[2]));
}

TEST_F(PrecisionProbeTest, ScoreOnlySpendsALossBudgetOnTheLayersThatCostLittle)
{
    // The raw score is far below the probe here (the weights' second-order term alone, about
    // 1/100 of the measured increases). One calibration probe (the layer of median score)
    // scales the scores into loss units; a budget of 0.002 in held-out loss then takes the two
    // cheap layers and keeps the one MXFP4 destroys, whose estimate alone exceeds it. With the
    // raw score as the estimate every layer would fit the budget; ranked wrongly, another
    // layer would be kept.
    PrecisionProbe probe(m_config, *m_backend, m_data, m_path.string(), {2, 32});
    AdviceRequest request;
    request.formats = {LayerPrecision::Mxfp4};
    request.budget = 0.002;
    request.scoreOnly = true;
    request.calibrationProbes = 1;
    const std::optional<AdviceTable> advice = adviseLayers(probe, request, m_config.recipe, "fp32");
    ASSERT_TRUE(advice.has_value());
    const AdviceTable& table = *advice;
    std::size_t probed = 0;
    for (std::size_t l = 0; l < table.layers.size(); ++l) {
        std::printf("%s: score %g, estimate %g%s, chosen %s\n", table.layers[l].name.c_str(), table.scores[l][0],
                    table.costs[l][0], table.measured(l, 0) ? " (probe)" : "", chosenFormat(table, l).c_str());
        if (table.measured(l, 0)) {
            ++probed;
            EXPECT_EQ(table.costs[l][0], table.probes[l][0].lossIncrease);
        } else {
            EXPECT_DOUBLE_EQ(table.costs[l][0], table.scoreScale[0] * table.scores[l][0]);
        }
    }
    EXPECT_EQ(probed, 1u);
    EXPECT_GT(table.scoreScale[0], 0.0);
    EXPECT_TRUE(table.assignment.withinBudget);
    EXPECT_EQ(chosenFormat(table, 0), "mxfp4");
    EXPECT_EQ(chosenFormat(table, 1), "");
    EXPECT_EQ(chosenFormat(table, 2), "mxfp4");
    EXPECT_LE(table.assignment.lossIncrease, request.budget);
    EXPECT_NE(scoreScaleSentence(table, 0).find("layers probed"), std::string::npos);

    // Uncalibrated, the raw score spends the same budget on every layer, the destroyed one too.
    request.calibrationProbes = 0;
    const std::optional<AdviceTable> raw = adviseLayers(probe, request, m_config.recipe, "fp32");
    ASSERT_TRUE(raw.has_value());
    EXPECT_EQ(raw->scoreScale[0], 1.0);
    for (std::size_t l = 0; l < raw->layers.size(); ++l) {
        EXPECT_FALSE(raw->measured(l, 0));
        EXPECT_EQ(chosenFormat(*raw, l), "mxfp4");
    }
    EXPECT_NE(scoreScaleSentence(*raw, 0).find("no layer probed"), std::string::npos);
}

TEST_F(PrecisionProbeTest, TheBaselinesOwnFormatCostsNothing)
{
    PrecisionProbe probe(m_config, *m_backend, m_data, m_path.string(), {2, 32});
    EXPECT_EQ(probe.baselineOutputRelativeError(), 0.0); // an fp32 run is its own fp32 shadow
    const LayerProbeResult same = probe.probe("2.linear", LayerPrecision::Fp32);
    EXPECT_EQ(same.lossIncrease, 0.0);
    EXPECT_EQ(same.outputRelativeError, 0.0);
    for (double s : probe.scores(LayerPrecision::Fp32))
        EXPECT_EQ(s, 0.0);
}

TEST_F(PrecisionProbeTest, NamesALayerWhoseShapeTheFormatRefuses)
{
    PrecisionProbe probe(m_config, *m_backend, m_data, m_path.string(), {1, 32});
    const LayerProbeResult r = probe.probe("3.linear", LayerPrecision::Nvfp4);
    EXPECT_NE(r.misfit.find("3.linear's out features (4) is not a multiple of 16"), std::string::npos) << r.misfit;
    EXPECT_TRUE(probe.probe("2.linear", LayerPrecision::Nvfp4).misfit.empty());
}

TEST_F(PrecisionProbeTest, RefusesBadInput)
{
    EXPECT_THROW(PrecisionProbe(m_config, *m_backend, m_data, m_path.string(), {0, 32}), ConfigError);
    RunConfig wider = m_config;
    wider.model.layers[1].units = 48;
    EXPECT_THROW(PrecisionProbe(wider, *m_backend, m_data, m_path.string(), {1, 32}), IoError);
    EXPECT_THROW(PrecisionProbe(m_config, *m_backend, m_data, "/nonexistent/state.ckpt", {1, 32}), IoError);
    DatasetSplits empty = m_data;
    empty.test = Dataset{};
    empty.validation = Dataset{};
    EXPECT_THROW(PrecisionProbe(m_config, *m_backend, empty, m_path.string(), {1, 32}), ConfigError);
}
