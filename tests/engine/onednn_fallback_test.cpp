// A native bf16 primitive that oneDNN refuses to build for a shape: under training.cpu_kernels
// auto the op runs on the emulated path (the oracle's values, bit for bit) and the run's kernel
// record names the shape once; under native it is an error naming the op, the shape and
// oneDNN's reason. oneDNN 2.6.3 builds every shape the engine asks for on the CPUs it runs on
// (a sweep of convolution geometries and matmul layouts found none it refused), so the refusal
// is made where oneDNN's would come from (OneDnnRuntime::refuseForTesting): the primitive's
// construction throws dnnl::error and everything after it is the production path.
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/onednn_runtime.h"
#include "engine/data/dataset.h"
#include "engine/train/trainer.h"
#include "engine/util/check.h"
#include "random_tensor.h"
#include "run_comparison.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace mantissa;
using mantissa::test_support::randomValues;

namespace {

#define SKIP_WITHOUT_NATIVE_BF16()                                                                                     \
    if (!cpu::planCpuKernels(CpuKernels::Auto).nativeBf16)                                                             \
    GTEST_SKIP() << "no native bf16 kernels here: " << cpu::planCpuKernels(CpuKernels::Auto).bf16Path

constexpr const char* kNativeFamilies[] = {"bf16 matmul", "bf16 conv forward", "bf16 conv backward data",
                                           "bf16 conv backward weights"};

std::unique_ptr<CpuBackend> backendWith(CpuKernels kernels, std::initializer_list<const char*> refused = {},
                                        int threads = 2)
{
    auto backend = std::make_unique<CpuBackend>(CpuOptions{threads, kernels});
    for (const char* family : refused)
        backend->oneDnnRuntime().refuseForTesting(family);
    return backend;
}

Tensor upload(Backend& b, const std::vector<float>& values, const Shape& shape, DType type)
{
    Tensor t = b.empty(shape, type);
    b.upload(values.data(), t);
    return t;
}

// The tensor's stored bits (fp32 or 16-bit), so that results compare to the bit.
std::vector<std::uint32_t> storedBits(Backend& b, const Tensor& t)
{
    std::vector<float> values(static_cast<std::size_t>(t.numel()));
    b.download(t, values.data());
    std::vector<std::uint32_t> out(values.size());
    std::transform(values.begin(), values.end(), out.begin(), [](float v) { return std::bit_cast<std::uint32_t>(v); });
    return out;
}

std::vector<std::string> linesWith(const std::string& text, const std::string& start)
{
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (line.starts_with(start))
            lines.push_back(line);
    return lines;
}

struct GemmCase {
    Transpose ta, tb;
    std::int64_t m, n, k;
    float alpha, beta;
    DType out;
};

std::vector<std::uint32_t> runGemm(Backend& b, const GemmCase& c)
{
    const Tensor a = upload(b, randomValues(static_cast<std::size_t>(c.m * c.k), 1), {c.m, c.k}, DType::BF16);
    const Tensor w = upload(b, randomValues(static_cast<std::size_t>(c.k * c.n), 2), {c.k, c.n}, DType::BF16);
    Tensor out = upload(b, randomValues(static_cast<std::size_t>(c.m * c.n), 3), {c.m, c.n}, c.out);
    b.gemm(c.ta, c.tb, c.m, c.n, c.k, c.alpha, a, w, c.beta, out);
    b.gemm(c.ta, c.tb, c.m, c.n, c.k, c.alpha, a, w, c.beta, out); // the same shape again: recorded once
    return storedBits(b, out);
}

TEST(OneDnnFallback, RefusedNativeMatmulRunsEmulatedAndIsRecordedOncePerShape)
{
    SKIP_WITHOUT_NATIVE_BF16();
    const GemmCase cases[] = {
        {Transpose::No, Transpose::No, 8, 16, 24, 1.0f, 0.0f, DType::BF16},  // the kernel would round into bf16
        {Transpose::No, Transpose::Yes, 8, 16, 24, 0.5f, 1.0f, DType::BF16}, // c read back, alpha in the kernel
        {Transpose::Yes, Transpose::No, 8, 16, 24, 1.0f, 0.0f, DType::F32},
    };
    auto fallingBack = backendWith(CpuKernels::Auto, {"bf16 matmul"});
    auto emulated = backendWith(CpuKernels::Emulated);
    for (const GemmCase& c : cases) {
        SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
        EXPECT_EQ(runGemm(*fallingBack, c), runGemm(*emulated, c));
    }
    const std::string paths = fallingBack->kernelPaths();
    // Three shapes (the transposes and the output type make them three primitives), each once.
    const std::vector<std::string> fellBack = linesWith(paths, "ran emulated: ");
    EXPECT_EQ(fellBack.size(), 3u) << paths;
    for (const char* shape : {"8x24 by 24x16, rounded into bf16", "8x24 by 24x16, B transposed, rounded into bf16",
                              "8x24 by 24x16, A transposed"})
        EXPECT_NE(std::find(fellBack.begin(), fellBack.end(),
                            "ran emulated: bf16 matmul " + std::string(shape) +
                                ", which oneDNN refused: refused for testing"),
                  fellBack.end())
            << paths;
    EXPECT_EQ(paths.find("bf16 matmul: "), std::string::npos) << "no bf16 matmul ran: " << paths;
    EXPECT_EQ(linesWith(emulated->kernelPaths(), "ran emulated: ").size(), 0u) << emulated->kernelPaths();
}

struct ConvOutputs {
    std::vector<std::uint32_t> y, dx, dw, dbias, dxJoint, dwJoint;
};

// Forward, the two backward directions one by one, and both in one call (conv2dBackward).
ConvOutputs runConv(Backend& b, DType out)
{
    ConvGeometry g{3, 5, 9, 9, 7, 3, 3, 2, 2, 1, 1, 0, 0};
    g.outH = slidingOutput(g.inH, g.kH, g.strideH, g.padH);
    g.outW = slidingOutput(g.inW, g.kW, g.strideW, g.padW);
    const Shape xs{g.n, g.inChannels, g.inH, g.inW}, ws{g.outChannels, g.inChannels, g.kH, g.kW},
        ys{g.n, g.outChannels, g.outH, g.outW};
    const auto count = [](const Shape& s) { return static_cast<std::size_t>(s.numel()); };
    const Tensor x = upload(b, randomValues(count(xs), 1), xs, DType::BF16);
    const Tensor w = upload(b, randomValues(count(ws), 2), ws, DType::BF16);
    const Tensor dy = upload(b, randomValues(count(ys), 3), ys, DType::BF16);
    const Tensor bias = upload(b, randomValues(7, 4), {7}, DType::F32);
    Tensor y = b.empty(ys, out), dx = b.empty(xs, out), dw = b.empty(ws, out), dbias = b.empty({7}, out);
    b.conv2dForward(x, w, &bias, y, g);
    b.conv2dBackwardData(dy, w, dx, g);
    b.conv2dBackwardFilter(x, dy, dw, &dbias, g);
    ConvOutputs r{storedBits(b, y), storedBits(b, dx), storedBits(b, dw), storedBits(b, dbias), {}, {}};
    Tensor dx2 = b.empty(xs, out), dw2 = b.empty(ws, out), dbias2 = b.empty({7}, out);
    b.conv2dBackward(x, dy, w, dw2, &dbias2, dx2, g);
    r.dxJoint = storedBits(b, dx2);
    r.dwJoint = storedBits(b, dw2);
    return r;
}

TEST(OneDnnFallback, RefusedNativeConvolutionsRunEmulated)
{
    SKIP_WITHOUT_NATIVE_BF16();
    auto emulated = backendWith(CpuKernels::Emulated);
    for (const DType out : {DType::BF16, DType::F32}) {
        SCOPED_TRACE(std::string(dtypeName(out)) + " results");
        const ConvOutputs want = runConv(*emulated, out);
        // Each direction refused on its own (the joint backward then runs one native kernel
        // and one emulated), and all three at once.
        for (const auto& refused :
             {std::vector<const char*>{"bf16 conv forward"}, std::vector<const char*>{"bf16 conv backward data"},
              std::vector<const char*>{"bf16 conv backward weights"},
              std::vector<const char*>{"bf16 conv forward", "bf16 conv backward data", "bf16 conv backward weights"}}) {
            auto backend = std::make_unique<CpuBackend>(CpuOptions{2, CpuKernels::Auto});
            for (const char* family : refused)
                backend->oneDnnRuntime().refuseForTesting(family);
            SCOPED_TRACE(std::string("refused: ") + refused.front() + (refused.size() > 1 ? " and the others" : ""));
            const ConvOutputs got = runConv(*backend, out);
            // A refused direction gives the emulated bits; the others ran native kernels.
            const auto refusedOne = [&refused](const char* family) {
                return std::find_if(refused.begin(), refused.end(),
                                    [family](const char* r) { return std::string(r) == family; }) != refused.end();
            };
            if (refusedOne("bf16 conv forward")) {
                EXPECT_EQ(got.y, want.y);
            }
            if (refusedOne("bf16 conv backward data")) {
                EXPECT_EQ(got.dx, want.dx);
                EXPECT_EQ(got.dxJoint, want.dxJoint);
            }
            if (refusedOne("bf16 conv backward weights")) {
                EXPECT_EQ(got.dw, want.dw);
                EXPECT_EQ(got.dbias, want.dbias);
                EXPECT_EQ(got.dwJoint, want.dwJoint);
            }
            const std::string paths = backend->kernelPaths();
            const std::vector<std::string> fellBack = linesWith(paths, "ran emulated: ");
            EXPECT_EQ(fellBack.size(), refused.size()) << paths;
            for (const char* family : refused) {
                const std::string op = std::string(family).substr(std::string("bf16 conv ").size());
                EXPECT_NE(paths.find("ran emulated: bf16 convolution " + op +
                                     " for x [3, 5, 9, 9], w [7, 5, 3, 3], stride 2x2, padding 1x1, which oneDNN "
                                     "refused: refused for testing"),
                          std::string::npos)
                    << paths;
            }
        }
    }
}

TEST(OneDnnFallback, TrainingRunWithEveryNativeKernelRefusedIsTheEmulatedRun)
{
    SKIP_WITHOUT_NATIVE_BF16();
    RunConfig config = test_support::smallConvConfig(PrecisionMode::MixedBf16);
    const auto trainOn = [&](CpuBackend& backend) {
        const DatasetSplits data = loadDatasets(config.data, config.training.seed);
        Trainer trainer(config, backend, data);
        test_support::TrainedRun run;
        trainer.addObserver(&run.recorder);
        run.summary = trainer.run();
        return run;
    };
    auto fallingBack = backendWith(CpuKernels::Auto, {}, config.training.threads);
    for (const char* family : kNativeFamilies)
        fallingBack->oneDnnRuntime().refuseForTesting(family);
    auto emulated = backendWith(CpuKernels::Emulated, {}, config.training.threads);
    const test_support::TrainedRun got = trainOn(*fallingBack);
    const test_support::TrainedRun want = trainOn(*emulated);
    ASSERT_GT(got.recorder.steps.size(), 4u);
    test_support::expectIdentical(got, want);
    // Every refused shape once, not once per step: fewer lines than steps, none repeated, and
    // each family named.
    const std::string paths = fallingBack->kernelPaths();
    const std::vector<std::string> fellBack = linesWith(paths, "ran emulated: ");
    EXPECT_LT(fellBack.size(), got.recorder.steps.size()) << paths;
    EXPECT_EQ(std::set<std::string>(fellBack.begin(), fellBack.end()).size(), fellBack.size()) << paths;
    for (const char* family :
         {"bf16 matmul", "bf16 convolution forward", "bf16 convolution backward data", "bf16 convolution backward"})
        EXPECT_NE(paths.find("ran emulated: " + std::string(family)), std::string::npos) << paths;
}

TEST(OneDnnFallback, AnExplicitNativeRequestFailsNamingTheOpTheShapeAndTheReason)
{
    SKIP_WITHOUT_NATIVE_BF16();
    auto native = backendWith(CpuKernels::Native, {"bf16 matmul"});
    const GemmCase c{Transpose::No, Transpose::No, 8, 16, 24, 1.0f, 0.0f, DType::F32};
    try {
        runGemm(*native, c);
        FAIL() << "a refused native kernel ran";
    } catch (const UnsupportedError& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("cannot create a bf16 matmul 8x24 by 24x16 (refused for testing)"), std::string::npos)
            << message;
        EXPECT_NE(message.find("training.cpu_kernels auto"), std::string::npos) << message;
    }
    EXPECT_EQ(linesWith(native->kernelPaths(), "ran emulated: ").size(), 0u);
}

TEST(OneDnnFallback, AnFp32RefusalHasNoOtherKernelAndFailsUnderAuto)
{
    auto backend = backendWith(CpuKernels::Auto, {"fp32 matmul"});
    const GemmCase c{Transpose::No, Transpose::No, 8, 16, 24, 1.0f, 0.0f, DType::F32};
    const Tensor a = upload(*backend, randomValues(8 * 24, 1), {8, 24}, DType::F32);
    const Tensor w = upload(*backend, randomValues(24 * 16, 2), {24, 16}, DType::F32);
    Tensor out = backend->empty({8, 16}, DType::F32);
    try {
        backend->gemm(c.ta, c.tb, c.m, c.n, c.k, 1.0f, a, w, 0.0f, out);
        FAIL() << "a refused fp32 kernel ran";
    } catch (const UnsupportedError& e) {
        EXPECT_NE(std::string(e.what()).find("cannot create a fp32 matmul 8x24 by 24x16 (refused for testing)"),
                  std::string::npos)
            << e.what();
    }
}

} // namespace
