// The CUDA backend's backward passes against central finite differences of its own forward,
// in fp32: the same layers and the same check as the CPU suite (layer_gradient_check.h),
// the transformer layers (norms, embeddings, attention, the pre-norm block) among them.
// Parity with the CPU (cuda_parity_test) could hide a mistake both backends share; this
// cannot. The perturbations are uploaded and the outputs downloaded, so every forward runs
// on the GPU.
#include "device_under_test.h"
#include "layer_gradient_check.h"

#include <gtest/gtest.h>

using namespace mantissa;
using mantissa::test::GradientCase;

namespace {

class CudaLayerGradient : public test::DeviceTest, public ::testing::WithParamInterface<GradientCase> {};

TEST_P(CudaLayerGradient, BackwardMatchesFiniteDifferences) { test::checkLayerGradients(device(), GetParam()); }

INSTANTIATE_TEST_SUITE_P(Layers, CudaLayerGradient, ::testing::ValuesIn(test::layerGradientCases()),
                         [](const ::testing::TestParamInfo<GradientCase>& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Transformer, CudaLayerGradient, ::testing::ValuesIn(test::transformerGradientCases()),
                         [](const ::testing::TestParamInfo<GradientCase>& info) { return info.param.name; });

} // namespace
