// Every layer's backward on the CPU backend against central finite differences of its
// forward, for dx and for every parameter (the cases and the check: layer_gradient_check.h;
// gpu/cuda_gradient_test runs the same ones on the CUDA backend).
#include "layer_gradient_check.h"

#include <gtest/gtest.h>

using namespace mantissa;
using mantissa::test::GradientCase;

namespace {

class LayerGradient : public ::testing::TestWithParam<GradientCase> {};

TEST_P(LayerGradient, BackwardMatchesFiniteDifferences)
{
    auto backend = makeCpuBackend(2);
    test::checkLayerGradients(*backend, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Layers, LayerGradient, ::testing::ValuesIn(test::layerGradientCases()),
                         [](const ::testing::TestParamInfo<GradientCase>& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Transformer, LayerGradient, ::testing::ValuesIn(test::transformerGradientCases()),
                         [](const ::testing::TestParamInfo<GradientCase>& info) { return info.param.name; });

} // namespace
