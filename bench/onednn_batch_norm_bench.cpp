// oneDNN's batch normalisation against the CPU backend's own, training forward then backward on
// an NCHW tensor of resnet-small's first block (128x32x28x28), fp32 and bf16, in alternated
// rounds of 20 calls each; prints the medians and ranges in ms per forward+backward. The
// backend keeps its own kernels where this shows them faster (backend/cpu/batch_norm.cpp).
//
//     build/bin/onednn_batch_norm_bench [rounds]
#include "engine/backend/backend.h"
#include "engine/backend/backend_factory.h"

#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using namespace mantissa;

namespace {

constexpr int kN = 128, kC = 32, kH = 28, kW = 28;
constexpr int kCallsPerRound = 20;

double seconds() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// "median [lowest-highest]" of per-call milliseconds.
void printSpread(const char* what, std::vector<double> ms)
{
    std::sort(ms.begin(), ms.end());
    std::printf("  %-9s median %7.3f ms [%.3f-%.3f]\n", what, ms[ms.size() / 2], ms.front(), ms.back());
}

// oneDNN's forward-training and backward primitives on plain NCHW (its ncsp kernel; the blocked
// layouts would need a reorder each way, as the convolutions do).
struct OneDnnBatchNorm {
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{engine};
    dnnl::batch_normalization_forward forward;
    dnnl::batch_normalization_backward backward;
    std::unordered_map<int, dnnl::memory> forwardArgs, backwardArgs;

    explicit OneDnnBatchNorm(bool bf16)
    {
        const dnnl::memory::desc data({kN, kC, kH, kW},
                                      bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32,
                                      dnnl::memory::format_tag::nchw);
        const dnnl::memory::desc channel({kC}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::x);
        const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
        const dnnl::batch_normalization_forward::primitive_desc fpd(
            {dnnl::prop_kind::forward_training, data, 1e-5f, flags}, engine);
        const dnnl::batch_normalization_backward::primitive_desc bpd(
            {dnnl::prop_kind::backward, data, data, 1e-5f, flags}, engine, fpd);
        forward = dnnl::batch_normalization_forward(fpd);
        backward = dnnl::batch_normalization_backward(bpd);
        const dnnl::memory src(data, engine), dst(data, engine), diffSrc(data, engine), diffDst(data, engine);
        const dnnl::memory mean(fpd.mean_desc(), engine), variance(fpd.variance_desc(), engine);
        const dnnl::memory scale(channel, engine), shift(channel, engine), diffScale(channel, engine),
            diffShift(channel, engine);
        std::fill_n(static_cast<float*>(scale.get_data_handle()), kC, 1.0f);
        std::fill_n(static_cast<float*>(shift.get_data_handle()), kC, 0.0f);
        std::fill_n(static_cast<char*>(src.get_data_handle()), data.get_size(), 0);
        std::fill_n(static_cast<char*>(diffDst.get_data_handle()), data.get_size(), 0);
        forwardArgs = {{DNNL_ARG_SRC, src},           {DNNL_ARG_DST, dst},     {DNNL_ARG_MEAN, mean},
                       {DNNL_ARG_VARIANCE, variance}, {DNNL_ARG_SCALE, scale}, {DNNL_ARG_SHIFT, shift}};
        backwardArgs = {
            {DNNL_ARG_SRC, src},           {DNNL_ARG_DIFF_DST, diffDst},     {DNNL_ARG_MEAN, mean},
            {DNNL_ARG_VARIANCE, variance}, {DNNL_ARG_SCALE, scale},          {DNNL_ARG_SHIFT, shift},
            {DNNL_ARG_DIFF_SRC, diffSrc},  {DNNL_ARG_DIFF_SCALE, diffScale}, {DNNL_ARG_DIFF_SHIFT, diffShift}};
    }

    void run()
    {
        forward.execute(stream, forwardArgs);
        backward.execute(stream, backwardArgs);
        stream.wait();
    }
};

// The backend's batchNormForward (training) and batchNormBackward on the same shape.
struct OwnBatchNorm {
    std::unique_ptr<Backend> backend = makeCpuBackend(CpuOptions{2, CpuKernels::Auto});
    Tensor x, y, dy, dx, gamma, beta, dgamma, dbeta;
    BatchNormState state;

    explicit OwnBatchNorm(bool bf16)
    {
        const DType type = bf16 ? DType::BF16 : DType::F32;
        std::vector<float> values(static_cast<std::size_t>(kN) * kC * kH * kW);
        std::mt19937 random(1);
        std::normal_distribution<float> normal(0.5f, 2.0f);
        for (float& v : values)
            v = normal(random);
        Tensor wide = backend->empty({kN, kC, kH, kW}, DType::F32);
        backend->upload(values.data(), wide);
        x = backend->empty({kN, kC, kH, kW}, type);
        dy = backend->empty({kN, kC, kH, kW}, type);
        backend->cast(wide, x);
        backend->cast(wide, dy);
        y = backend->empty({kN, kC, kH, kW}, type);
        dx = backend->empty({kN, kC, kH, kW}, type);
        for (Tensor* t : {&gamma, &beta, &dgamma, &dbeta, &state.runningMean, &state.runningVar, &state.savedMean,
                          &state.savedInvStd})
            *t = backend->empty({kC}, DType::F32);
        backend->fill(gamma, 1.0f);
        backend->fill(beta, 0.0f);
        backend->fill(state.runningMean, 0.0f);
        backend->fill(state.runningVar, 1.0f);
    }

    void run()
    {
        backend->batchNormForward(x, gamma, beta, y, state, true, 0.1f, 1e-5f);
        backend->batchNormBackward(x, dy, gamma, state, dx, dgamma, dbeta);
    }
};

} // namespace

int main(int argc, char** argv)
{
    const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 9;
    std::printf("batch norm training forward + backward, NCHW %dx%dx%dx%d, 2 threads, %d rounds of %d calls\n", kN, kC,
                kH, kW, rounds, kCallsPerRound);
    for (bool bf16 : {false, true}) {
        OneDnnBatchNorm onednn(bf16);
        OwnBatchNorm own(bf16);
        for (int i = 0; i < 3; ++i) { // warm-up: primitives' first runs, the pool's first blocks
            onednn.run();
            own.run();
        }
        std::vector<double> onednnMs, ownMs;
        for (int r = 0; r < rounds; ++r) {
            const double t0 = seconds();
            for (int i = 0; i < kCallsPerRound; ++i)
                onednn.run();
            const double t1 = seconds();
            for (int i = 0; i < kCallsPerRound; ++i)
                own.run();
            const double t2 = seconds();
            onednnMs.push_back((t1 - t0) / kCallsPerRound * 1e3);
            ownMs.push_back((t2 - t1) / kCallsPerRound * 1e3);
        }
        std::printf("%s:\n", bf16 ? "bf16" : "fp32");
        printSpread("oneDNN", onednnMs);
        printSpread("Mantissa", ownMs);
    }
}
