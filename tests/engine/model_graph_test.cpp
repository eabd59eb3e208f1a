// The model graph (engine/model/graph): a value read by several nodes sums their gradients, an
// addition joins two branches, a node ahead of the first weights runs no backward, and a layer
// list compiles into nodes whose names, groups and forks are those of its blocks.
#include "engine/backend/backend.h"
#include "engine/config/presets.h"
#include "engine/model/graph/add_op.h"
#include "engine/model/graph/graph.h"
#include "engine/model/layers/activation_layer.h"
#include "engine/model/layers/linear.h"
#include "engine/model/model.h"
#include "engine/util/check.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

constexpr std::int64_t kBatch = 3, kWidth = 4;

std::vector<float> ramp(std::int64_t n, float from, float step)
{
    std::vector<float> v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = from + step * static_cast<float>(i);
    return v;
}

// Records which groups' backward ran (a defined input gradient) or was skipped.
struct BackwardTap final : LayerTap {
    std::vector<std::pair<std::size_t, bool>> backward;
    void afterForward(std::size_t, const Tensor&) override {}
    void afterBackward(std::size_t index, const Tensor& inputGradient) override
    {
        backward.emplace_back(index, inputGradient.defined());
    }
};

std::vector<std::string> nodeNames(const Graph& graph, std::size_t group)
{
    std::vector<std::string> names;
    for (const GraphNode& node : graph.nodes())
        if (node.group == group)
            names.push_back(node.op->name());
    return names;
}

} // namespace

// y = (x W^T) + (x W^T) + x: the linear layer's output is read twice by one addition and the
// input by the linear layer and the second addition, so both sum two gradients.
TEST(ModelGraph, ValuesReadSeveralTimesSumTheirGradients)
{
    auto backend = makeCpuBackend(1);
    Graph graph(Shape({kWidth}));
    graph.beginGroup("0.block", DType::F32);
    Layer* linear = graph.own(std::make_unique<Linear>(kWidth, kWidth, false, "", false));
    linear->setName("0.block.linear");
    linear->createParameters(*backend, DType::F32, 7);
    const ValueId h = linear->appendTo(graph, graph.input());
    const ValueId doubled = graph.addNode1(std::make_unique<AddOp>("0.block.double", DType::F32), {h, h});
    graph.setOutput(graph.addNode1(std::make_unique<AddOp>("0.block", DType::F32), {doubled, graph.input()}));
    ASSERT_EQ(graph.values()[graph.input()].consumers.size(), 2u);
    ASSERT_EQ(graph.values()[h].consumers.size(), 2u);

    const std::vector<float> x = ramp(kBatch * kWidth, -0.5f, 0.125f);
    const std::vector<float> g = ramp(kBatch * kWidth, 0.25f, -0.0625f);
    PassState pass{*backend};
    GraphForward forward = graph.forward(pass, Tensor::fromFloats({kBatch, kWidth}, x));
    const std::vector<float> y = forward.output.toFloats();
    const Tensor dx = graph.backward(pass, Tensor::fromFloats({kBatch, kWidth}, g), forward, true);
    ASSERT_TRUE(dx.defined());

    Parameter* weight = linear->parameters().at(0);
    const std::vector<float> w = weight->master.toFloats(); // [out, in]
    const std::vector<float> dw = weight->fp32Grad.toFloats();
    const std::vector<float> dxValues = dx.toFloats();
    const auto at = [](const std::vector<float>& m, std::int64_t r, std::int64_t c) {
        return static_cast<double>(m[static_cast<std::size_t>(r * kWidth + c)]);
    };
    // Sums of four products in fp32: a few ulps of values of order 1.
    constexpr double tolerance = 1e-6;
    for (std::int64_t n = 0; n < kBatch; ++n)
        for (std::int64_t j = 0; j < kWidth; ++j) {
            double xw = 0, gw = 0;
            for (std::int64_t k = 0; k < kWidth; ++k) {
                xw += at(x, n, k) * at(w, j, k);
                gw += at(g, n, k) * at(w, k, j);
            }
            EXPECT_NEAR(at(y, n, j), 2 * xw + at(x, n, j), tolerance) << "y[" << n << "," << j << "]";
            EXPECT_NEAR(at(dxValues, n, j), 2 * gw + at(g, n, j), tolerance) << "dx[" << n << "," << j << "]";
        }
    for (std::int64_t o = 0; o < kWidth; ++o)
        for (std::int64_t i = 0; i < kWidth; ++i) {
            double expected = 0;
            for (std::int64_t n = 0; n < kBatch; ++n)
                expected += 2 * at(g, n, o) * at(x, n, i);
            EXPECT_NEAR(at(dw, o, i), expected, tolerance) << "dW[" << o << "," << i << "]";
        }
}

TEST(ModelGraph, AdditionRefusesOperandsOfDifferentShapes)
{
    Graph graph(Shape({kWidth}));
    graph.beginGroup("0.block", DType::F32);
    Layer* wider = graph.own(std::make_unique<Linear>(kWidth, kWidth + 1, false, "", false));
    wider->setName("0.block.linear");
    const ValueId h = wider->appendTo(graph, graph.input());
    try {
        graph.addNode1(std::make_unique<AddOp>("0.block.add", DType::F32), {h, graph.input()});
        FAIL() << "an addition of [1, 5] and [1, 4] was accepted";
    } catch (const ConfigError& e) {
        EXPECT_STREQ(e.what(), "0.block.add: an addition takes two inputs of one shape, got [1, 5] and [1, 4]");
    }
}

// A ReLU ahead of the first weights needs no gradient: its backward does not run, and the first
// linear layer computes no gradient for its input; every later group runs.
TEST(ModelGraph, NothingAheadOfTheFirstWeightsRunsBackward)
{
    auto backend = makeCpuBackend(1);
    Graph graph(Shape({kWidth}));
    graph.beginGroup("0.relu", DType::F32);
    Layer* relu = graph.own(std::make_unique<ActivationLayer>(Activation::Relu));
    relu->setName("0.relu");
    ValueId v = relu->appendTo(graph, graph.input());
    graph.beginGroup("1.linear", DType::F32);
    Layer* first = graph.own(std::make_unique<Linear>(kWidth, kWidth, true, "", false));
    first->setName("1.linear");
    first->createParameters(*backend, DType::F32, 3);
    v = first->appendTo(graph, v);
    graph.beginGroup("2.relu", DType::F32);
    Layer* last = graph.own(std::make_unique<ActivationLayer>(Activation::Relu));
    last->setName("2.relu");
    graph.setOutput(last->appendTo(graph, v));

    BackwardTap tap;
    PassState pass{*backend};
    pass.tap = &tap;
    GraphForward forward = graph.forward(pass, Tensor::fromFloats({kBatch, kWidth}, ramp(kBatch * kWidth, -1, 0.2f)));
    graph.backward(pass, Tensor::fromFloats({kBatch, kWidth}, ramp(kBatch * kWidth, 1, 0.1f)), forward, false);
    const std::vector<std::pair<std::size_t, bool>> expected{{2, true}, {1, false}, {0, false}};
    EXPECT_EQ(tap.backward, expected);
    EXPECT_TRUE(pass.inputGradNeeded) << "the pass's flag is left as it was";
}

// A residual block is its input in the block's type, its body's layers, its projection and the
// addition, one group; its input is read by the body and the projection.
TEST(ModelGraph, ResidualBlocksCompileIntoNodesOfOneGroup)
{
    auto backend = makeCpuBackend(1);
    RunConfig c = presetConfig("resnet-small");
    const Model model(c.model, PrecisionMode::MixedBf16, *backend, 1);
    const Graph& graph = model.graph();
    ASSERT_EQ(graph.groups().size(), c.model.layers.size());
    EXPECT_EQ(graph.groups()[5].name, "5.residual");
    EXPECT_EQ(nodeNames(graph, 5),
              (std::vector<std::string>{"5.residual.input", "5.residual.0.conv2d", "5.residual.1.batchnorm",
                                        "5.residual.2.relu", "5.residual.3.conv2d", "5.residual.4.batchnorm",
                                        "5.residual.shortcut", "5.residual"}));
    const GraphNode& entry = graph.nodes()[graph.groups()[5].firstNode];
    EXPECT_EQ(graph.values()[entry.outputs[0]].consumers.size(), 2u) << "the body and the projection";
    EXPECT_EQ(graph.values()[entry.outputs[0]].dtype, DType::BF16);
    EXPECT_EQ(graph.values()[entry.outputs[0]].shape, Shape({32, 28, 28}));
    EXPECT_EQ(graph.values()[graph.output()].shape, Shape({10}));
    // A plain layer is one node of its own group.
    EXPECT_EQ(nodeNames(graph, 0), (std::vector<std::string>{"0.conv2d"}));
}

// A transformer block's two residual paths are forks of the graph, joined by additions.
TEST(ModelGraph, TransformerBlocksCompileIntoNormsAttentionMlpAndAdditions)
{
    RunConfig c = presetConfig("vit-tiny");
    auto backend = makeCpuBackend(1);
    const Model model(c.model, PrecisionMode::Fp32, *backend, 1);
    const Graph& graph = model.graph();
    EXPECT_EQ(nodeNames(graph, 2),
              (std::vector<std::string>{"2.transformer.input", "2.transformer.norm1", "2.transformer.attention",
                                        "2.transformer.attention_residual", "2.transformer.norm2", "2.transformer.mlp",
                                        "2.transformer"}));
    const GraphGroup& block = graph.groups()[2];
    const ValueId x = graph.nodes()[block.firstNode].outputs[0];
    const ValueId h = graph.nodes()[block.firstNode + 3].outputs[0];
    EXPECT_EQ(graph.values()[x].consumers.size(), 2u) << "norm1 and the first addition";
    EXPECT_EQ(graph.values()[h].consumers.size(), 2u) << "norm2 and the second addition";
    // The parameters keep the names checkpoints and stored runs know.
    std::vector<std::string> names;
    for (Parameter* p : graph.groupParameters(2))
        names.push_back(p->name);
    EXPECT_EQ(names.front(), "2.transformer.mlp.down.weight");
    EXPECT_EQ(names.back(), "2.transformer.norm1.bias");
}
