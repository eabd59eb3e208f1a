// Every op of the Backend contract on the CUDA backend against the CPU backend (the oracle):
// one table of cases, each run in fp32, fp16 and bf16 from the same seeded inputs on both,
// every output compared under the tolerance stated beside it (parity_check.h says why each
// kind of tolerance is what it is). A failure names the output and its worst deviation.
// Without a usable GPU, or without the CUDA backend in the build, every case is skipped.
//
// The step on the device (StepScalars: the loss, the finite check, clipping, the optimizers
// and the loss-scale rule reading and writing their scalars on the device) is held to the
// CPU's step_ops the same way: every state slot is compared, exactly unless it is the loss
// or the norm (double sums in another order), and slots an op must not write start as NaN.
#include "device_under_test.h"
#include "parity_check.h"

#include "engine/numerics/conversions.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

using namespace mantissa;
using namespace mantissa::test;

namespace {

constexpr std::uint32_t kSeed = 20240611;
const std::vector<DType> kAllTypes{DType::F32, DType::F16, DType::BF16};
const std::vector<DType> k16BitTypes{DType::F16, DType::BF16};
// Element counts for elementwise and multi-tensor ops: below, at and above a multiple of 8 or
// of a vector width, and one large enough to need many blocks.
const std::vector<std::int64_t> kSizes{1, 7, 8, 33, 6400};

struct ParityCase {
    std::string name;
    Op op;                     // the family Backend::supports is asked about
    std::vector<DType> dtypes; // the types the case runs in
    std::function<void(OpRun&, DType)> run;
};

std::string extents(std::initializer_list<std::int64_t> dims)
{
    std::string out;
    for (auto d : dims) {
        if (!out.empty())
            out += 'x';
        out += std::to_string(d);
    }
    return out;
}

std::string sized(const std::string& what, std::int64_t n) { return what + " n=" + std::to_string(n); }

// --- memory ------------------------------------------------------------------------------------

ParityCase uploadDownload()
{
    return {"uploadDownload", Op::Cast, kAllTypes, [](OpRun& r, DType t) {
                // Unrounded host values: upload itself must round them, to nearest even.
                for (auto n : kSizes) {
                    const auto host = r.draw(n, specials());
                    Tensor x = r.backend().empty({n}, t);
                    r.backend().upload(host.data(), x);
                    r.keep(sized("round trip", n), x, exact());
                }
            }};
}

ParityCase fill()
{
    return {"fill", Op::Cast, kAllTypes, [](OpRun& r, DType t) {
                for (float value : {0.1f, -2.5f, 65519.0f, 70000.0f, 1e-9f, -0.0f}) {
                    Tensor x = r.output({33}, t);
                    r.backend().fill(x, value);
                    r.keep("fill " + std::to_string(value), x, exact());
                }
                for (auto n : {std::int64_t{1}, std::int64_t{6400}}) {
                    Tensor x = r.output({n}, t);
                    r.backend().fill(x, 0.3f);
                    r.keep(sized("fill 0.3", n), x, exact());
                }
            }};
}

ParityCase cast()
{
    return {"cast", Op::Cast, kAllTypes, [](OpRun& r, DType t) {
                for (DType to : kAllTypes) {
                    for (auto n : {std::int64_t{7}, std::int64_t{6400}}) {
                        Tensor src = r.input({n}, t, specials());
                        Tensor dst = r.output({n}, to);
                        r.backend().cast(src, dst);
                        r.keep(sized(std::string("to ") + std::string(dtypeName(to)), n), dst, exact());
                    }
                }
            }};
}

// --- dense algebra ---------------------------------------------------------------------------------

ParityCase gemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, float beta)
{
    const std::string name = std::string("gemm") + (ta == Transpose::Yes ? "T" : "N") +
                             (tb == Transpose::Yes ? "T" : "N") + "_" + extents({m, n, k}) +
                             (beta != 0 ? "_accumulate" : "");
    return {name, Op::Gemm, kAllTypes, [=](OpRun& r, DType t) {
                Tensor a = r.input(ta == Transpose::No ? Shape{m, k} : Shape{k, m}, t, uniform(-1, 1));
                Tensor b = r.input(tb == Transpose::No ? Shape{k, n} : Shape{n, k}, t, uniform(-1, 1));
                // With beta = 0, C must not be read: it starts as NaN, and NaN * 0 is NaN.
                Tensor c = beta != 0 ? r.input({m, n}, t, uniform(-1, 1)) : r.output({m, n}, t);
                r.backend().gemm(ta, tb, m, n, k, alpha, a, b, beta, c);
                r.keep("C", c, reduction(k + (beta != 0 ? 1 : 0), t));
            }};
}

// A linear layer with bias: the bias joins the fp32 sum and C is rounded once (backend.h). The
// shapes include a tall-skinny and a wide one and k not a multiple of 8; the bias is drawn as
// large as the products (uniform(-1, 1) inputs) so that in 16 bits they often cancel, where a
// second rounding after a rounded GEMM would be off by up to half an ulp of the larger term.
ParityCase gemmRowBias(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k)
{
    const std::string name = std::string("gemmRowBias") + (ta == Transpose::Yes ? "T" : "N") +
                             (tb == Transpose::Yes ? "T" : "N") + "_" + extents({m, n, k});
    return {name, Op::Gemm, kAllTypes, [=](OpRun& r, DType t) {
                Tensor a = r.input(ta == Transpose::No ? Shape{m, k} : Shape{k, m}, t, uniform(-1, 1));
                Tensor b = r.input(tb == Transpose::No ? Shape{k, n} : Shape{n, k}, t, uniform(-1, 1));
                Tensor bias = r.input({n}, t, uniform(-4, 4));
                Tensor c = r.output({m, n}, t); // starts as NaN: C must not be read
                r.backend().gemmRowBias(ta, tb, m, n, k, a, b, bias, c);
                r.keep("C", c, reduction(k + 1, t));
            }};
}

ParityCase rowBiasGrad()
{
    return {"rowBiasGrad", Op::Gemm, kAllTypes, [](OpRun& r, DType t) {
                for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {7, 33}, {64, 100}}) {
                    Tensor dy = r.input({rows, cols}, t, uniform(-1, 1));
                    Tensor dbias = r.output({cols}, t);
                    r.backend().rowBiasGrad(dy, dbias);
                    r.keep("dbias " + extents({rows, cols}), dbias, reduction(rows, t));
                }
            }};
}

// --- convolution -----------------------------------------------------------------------------------

struct ConvShape {
    std::int64_t n, c, h, w, oc, kernel, stride, pad;
    bool bias;
    // A per-tensor FP8 recipe's decode scales (OperandScales): the sums scaled once, then the bias.
    OperandScales scales = {};
    std::int64_t groups = 1, dilation = 1;
};

ParityCase conv(const ConvShape& s)
{
    const std::string name = "conv" + extents({s.kernel, s.kernel}) + "s" + std::to_string(s.stride) + "p" +
                             std::to_string(s.pad) + "_" + extents({s.n, s.c, s.h, s.w}) + "to" + std::to_string(s.oc) +
                             (s.bias ? "_bias" : "_noBias") + (s.scales.unit() ? "" : "_scaled") +
                             (s.groups > 1 ? "_groups" + std::to_string(s.groups) : "") +
                             (s.dilation > 1 ? "_dilation" + std::to_string(s.dilation) : "");
    return {
        name, Op::Conv2d, kAllTypes, [s](OpRun& r, DType t) {
            ConvGeometry g;
            g.n = s.n, g.inChannels = s.c, g.inH = s.h, g.inW = s.w, g.outChannels = s.oc;
            g.kH = g.kW = s.kernel, g.strideH = g.strideW = s.stride, g.padH = g.padW = s.pad;
            g.groups = s.groups, g.dilationH = g.dilationW = s.dilation;
            g.outH = slidingOutput(s.h, s.kernel, s.stride, s.pad, s.dilation);
            g.outW = slidingOutput(s.w, s.kernel, s.stride, s.pad, s.dilation);
            const std::int64_t perGroup = s.c / s.groups;
            const Shape xs{s.n, s.c, s.h, s.w}, ws{s.oc, perGroup, s.kernel, s.kernel}, ys{s.n, s.oc, g.outH, g.outW};
            Tensor x = r.input(xs, t, uniform(-1, 1));
            Tensor w = r.input(ws, t, uniform(-1, 1));
            Tensor bias = s.bias ? r.input({s.oc}, t, uniform(-1, 1)) : Tensor();
            Tensor dy = r.input(ys, t, uniform(-1, 1));

            Tensor y = r.output(ys, t);
            r.backend().conv2dForward(x, w, s.bias ? &bias : nullptr, y, g, s.scales);
            r.keep("y", y, reduction(perGroup * s.kernel * s.kernel + (s.bias ? 1 : 0), t));

            Tensor dx = r.output(xs, t);
            r.backend().conv2dBackwardData(dy, w, dx, g, s.scales);
            r.keep("dx", dx, reduction(s.oc / s.groups * s.kernel * s.kernel, t));

            Tensor dw = r.output(ws, t);
            Tensor dbias = s.bias ? r.output({s.oc}, t) : Tensor();
            r.backend().conv2dBackwardFilter(x, dy, dw, s.bias ? &dbias : nullptr, g, s.scales);
            const std::int64_t positions = s.n * g.outH * g.outW;
            r.keep("dw", dw, reduction(positions, t));
            if (s.bias)
                r.keep("dbias", dbias, reduction(positions, t));
        }};
}

// --- batch norm ------------------------------------------------------------------------------------

ParityCase batchNorm(std::vector<std::int64_t> dims)
{
    std::string name = "batchNorm";
    for (std::size_t i = 0; i < dims.size(); ++i) {
        name += i ? 'x' : '_';
        name += std::to_string(dims[i]);
    }
    return {name, Op::BatchNorm, kAllTypes, [dims](OpRun& r, DType t) {
                const Shape shape(dims);
                const std::int64_t channels = dims[1], count = shape.numel() / channels;
                const float momentum = 0.1f, epsilon = 1e-5f;
                // A mean of 3 against a spread of 1: a one-pass variance would cancel.
                Tensor x = r.input(shape, t, uniform(2, 4));
                Tensor gamma = r.input({channels}, DType::F32, uniform(0.5f, 1.5f));
                Tensor beta = r.input({channels}, DType::F32, uniform(-0.5f, 0.5f));
                BatchNormState state;
                state.runningMean = r.input({channels}, DType::F32, uniform(-1, 1));
                state.runningVar = r.input({channels}, DType::F32, uniform(0.5f, 2));
                state.savedMean = r.output({channels}, DType::F32);
                state.savedInvStd = r.output({channels}, DType::F32);

                // Evaluation first: it normalises with the running statistics and leaves them alone.
                Tensor yEval = r.output(shape, t);
                r.backend().batchNormForward(x, gamma, beta, yEval, state, false, momentum, epsilon);
                r.keep("y (evaluation)", yEval, normwise(16));
                r.keep("runningMean after evaluation", state.runningMean, exact());
                r.keep("runningVar after evaluation", state.runningVar, exact());

                // Statistics are fp32 computations over `count` values whatever x's type.
                const Tolerance statistics = reduction(count, DType::F32);
                Tensor y = r.output(shape, t);
                r.backend().batchNormForward(x, gamma, beta, y, state, true, momentum, epsilon);
                r.keep("y (training)", y, statistics);
                r.keep("savedMean", state.savedMean, statistics);
                r.keep("savedInvStd", state.savedInvStd, statistics);
                r.keep("runningMean", state.runningMean, statistics);
                r.keep("runningVar", state.runningVar, statistics);

                Tensor dy = r.input(shape, t, uniform(-1, 1));
                Tensor dx = r.output(shape, t);
                Tensor dgamma = r.output({channels}, DType::F32), dbeta = r.output({channels}, DType::F32);
                r.backend().batchNormBackward(x, dy, gamma, state, dx, dgamma, dbeta);
                r.keep("dx", dx, statistics);
                r.keep("dgamma", dgamma, statistics);
                r.keep("dbeta", dbeta, statistics);
            }};
}

// --- activations -----------------------------------------------------------------------------------

ParityCase activation(Activation kind, const std::string& kindName)
{
    return {"activation" + kindName, Op::Activation, kAllTypes, [kind](OpRun& r, DType t) {
                // ReLU is a select (exact); the others go through libm-class functions.
                const Tolerance tolerance = kind == Activation::Relu ? exact() : normwise(16);
                for (auto n : kSizes) {
                    // Exact zeros of both signs: ReLU and its gradient must treat them alike.
                    Tensor x = r.input({n}, t, with(with(uniform(-5, 5), 0.0f, 13), -0.0f, 17, 5));
                    Tensor y = r.output({n}, t);
                    r.backend().activationForward(kind, x, y);
                    r.keep(sized("y", n), y, tolerance);

                    // Backward reads the stored output (tanh, sigmoid) or the input (ReLU, GELU);
                    // y is drawn from the output's range so both backends read the same one.
                    const Draw yRange = kind == Activation::Sigmoid ? uniform(0, 1) : uniform(-1, 1);
                    Tensor yIn = r.input({n}, t, yRange);
                    Tensor dy = r.input({n}, t, uniform(-1, 1));
                    Tensor dx = r.output({n}, t);
                    r.backend().activationBackward(kind, x, yIn, dy, dx);
                    r.keep(sized("dx", n), dx, tolerance);
                }
            }};
}

// The same fp32 formulas on both backends (pointwise_function.h), without library calls: clip
// and leaky ReLU exact; the ramps' alpha x + beta may be one fused multiply-add on the device.
ParityCase pointwise(PointwiseFunction f, const std::string& kindName)
{
    return {"pointwise" + kindName, Op::Activation, kAllTypes, [f](OpRun& r, DType t) {
                const bool ramp = f.kind == PointwiseKind::HardSigmoid || f.kind == PointwiseKind::HardSwish;
                const Tolerance tolerance = ramp ? normwise(4) : exact();
                for (auto n : kSizes) {
                    // The ramps' ends (0, 6, +-3, +-2.5) and zeros of both signs, where the
                    // derivatives switch.
                    Tensor x = r.input({n}, t, with(with(with(uniform(-8, 8), 0.0f, 13), 6.0f, 11), 3.0f, 7, 2));
                    Tensor y = r.output({n}, t);
                    r.backend().pointwiseForward(f, x, y);
                    r.keep(sized("y", n), y, tolerance);
                    Tensor dy = r.input({n}, t, uniform(-1, 1));
                    Tensor dx = r.output({n}, t);
                    r.backend().pointwiseBackward(f, x, dy, dx);
                    r.keep(sized("dx", n), dx, tolerance);
                }
            }};
}

// --- pooling ---------------------------------------------------------------------------------------

struct PoolShape {
    bool max;
    std::int64_t n, c, h, w, kernel, stride, pad;
    bool withNaN = false; // a NaN wins its window and must come out of it
    bool countPadding = false;
};

ParityCase pool(const PoolShape& s)
{
    const std::string name = std::string(s.max ? "maxPool" : "avgPool") + extents({s.kernel, s.kernel}) + "s" +
                             std::to_string(s.stride) + "p" + std::to_string(s.pad) + "_" +
                             extents({s.n, s.c, s.h, s.w}) + (s.withNaN ? "_withNaN" : "") +
                             (s.countPadding ? "_countPadding" : "");
    return {name, Op::Pooling, kAllTypes, [s](OpRun& r, DType t) {
                PoolGeometry g;
                g.n = s.n, g.channels = s.c, g.inH = s.h, g.inW = s.w, g.kH = g.kW = s.kernel;
                g.strideH = g.strideW = s.stride, g.padH = g.padW = s.pad, g.countPadding = s.countPadding;
                g.outH = slidingOutput(s.h, s.kernel, s.stride, s.pad);
                g.outW = slidingOutput(s.w, s.kernel, s.stride, s.pad);
                const Shape xs{s.n, s.c, s.h, s.w}, ys{s.n, s.c, g.outH, g.outW};
                // Windows overlapping one input: its gradient sums that many terms.
                const std::int64_t overlap =
                    ((s.kernel + s.stride - 1) / s.stride) * ((s.kernel + s.stride - 1) / s.stride);
                Tensor dy = r.input(ys, t, uniform(-1, 1));
                Tensor dx = r.output(xs, t);
                Tensor y = r.output(ys, t);
                if (s.max) {
                    // Few distinct levels: windows tie, and the first maximum (row-major) must win.
                    Tensor x = r.input(xs, t, s.withNaN ? with(levels(), NAN, 37, 5) : levels());
                    Tensor argmax = r.output(ys, DType::F32);
                    r.backend().maxPoolForward(x, y, argmax, g);
                    r.keep("y", y, exact());
                    r.keep("argmax", argmax, exact());
                    r.backend().maxPoolBackward(dy, argmax, dx, g);
                } else {
                    Tensor x = r.input(xs, t, uniform(-1, 1));
                    r.backend().avgPoolForward(x, y, g);
                    r.keep("y", y, reduction(s.kernel * s.kernel, DType::F32));
                    r.backend().avgPoolBackward(dy, dx, g);
                }
                r.keep("dx", dx, s.max && overlap == 1 ? exact() : reduction(overlap, DType::F32));
            }};
}

// --- dropout and elementwise -------------------------------------------------------------------------

ParityCase dropout(float p)
{
    return {"dropoutP" + std::to_string(static_cast<int>(p * 100)), Op::Dropout, kAllTypes, [p](OpRun& r, DType t) {
                std::vector<std::int64_t> sizes = kSizes;
                sizes.push_back((1 << 17) + 3); // past any one block or vector of indices
                for (auto n : sizes) {
                    Tensor x = r.input({n}, t, uniform(-1, 1));
                    Tensor y = r.output({n}, t), mask = r.output({n}, DType::F32);
                    r.backend().dropoutForward(x, y, mask, p, 42, 7);
                    // The mask is a hash of (seed, counter, index): the same bits everywhere.
                    r.keep(sized("mask", n), mask, exact());
                    r.keep(sized("y", n), y, exact());
                    Tensor dy = r.input({n}, t, uniform(-1, 1));
                    Tensor dx = r.output({n}, t);
                    r.backend().dropoutBackward(dy, mask, dx);
                    r.keep(sized("dx", n), dx, exact());
                }
            }};
}

ParityCase add()
{
    return {"add", Op::Elementwise, kAllTypes, [](OpRun& r, DType t) {
                for (auto n : kSizes) {
                    Tensor a = r.input({n}, t, uniform(-1, 1)), b = r.input({n}, t, uniform(-1, 1));
                    Tensor out = r.output({n}, t);
                    r.backend().add(a, b, out);
                    r.keep(sized("a + b", n), out, exact());
                    r.backend().add(a, b, a); // out may alias a
                    r.keep(sized("a + b written over a", n), a, exact());
                }
            }};
}

// --- loss ------------------------------------------------------------------------------------------

// Labels: class indices in [0, classes), as fp32.
Draw classIndices(std::int64_t classes)
{
    return [classes](std::mt19937& g, std::size_t) {
        return static_cast<float>(std::uniform_int_distribution<std::int64_t>(0, classes - 1)(g));
    };
}

ParityCase softmaxCrossEntropy(std::int64_t batch, std::int64_t classes)
{
    return {"softmaxCrossEntropy_" + extents({batch, classes}), Op::SoftmaxCrossEntropy, kAllTypes,
            [batch, classes](OpRun& r, DType t) {
                // Logits up to 8 in size: exp() of them overflows fp16, so the max must come off
                // first. Rounded to bf16 some rows tie; the arg-max is then the first of them.
                Tensor logits = r.input({batch, classes}, t, uniform(-8, 8));
                Tensor labels = r.input({batch}, DType::F32, classIndices(classes));
                const Tolerance loss = reduction(classes + batch, DType::F32);
                const LossResult plain = r.backend().softmaxCrossEntropy(logits, labels, 1.0f, nullptr);
                r.keepScalar("meanLoss without dlogits", plain.meanLoss, loss);
                r.keepScalar("correct without dlogits", static_cast<double>(plain.correct), exact());

                Tensor dlogits = r.output({batch, classes}, t);
                const LossResult scaled = r.backend().softmaxCrossEntropy(logits, labels, 1024.0f, &dlogits);
                r.keepScalar("meanLoss with dlogits", scaled.meanLoss, loss);
                r.keepScalar("correct with dlogits", static_cast<double>(scaled.correct), exact());
                r.keep("dlogits (loss scale 1024)", dlogits, reduction(classes, DType::F32));
            }};
}

// --- the numerics lens's measurement -------------------------------------------------------------------

// Magnitudes from 2^-45 to 2^22 (past both ends of the histogram and of fp16's range), random
// signs, with specials() mixed in: every count, bin and the largest value must be exact.
Draw wideMagnitudes()
{
    const Draw special = specials();
    return [special](std::mt19937& g, std::size_t i) {
        if (i % 5 == 0)
            return special(g, i);
        const float mantissa = std::uniform_real_distribution<float>(1.0f, 2.0f)(g);
        const int exponent = std::uniform_int_distribution<int>(-45, 22)(g);
        return (g() & 1 ? -1.0f : 1.0f) * std::ldexp(mantissa, exponent);
    };
}

ParityCase tensorStats()
{
    return {"tensorStats", Op::Elementwise, kAllTypes, [](OpRun& r, DType t) {
                for (auto n : {std::int64_t{1}, std::int64_t{33}, std::int64_t{6400}, std::int64_t{300001}}) {
                    const Tensor x = r.input({n}, t, wideMagnitudes());
                    for (DType target : k16BitTypes) {
                        for (float scale : {1.0f, 1.0f / 65536.0f}) {
                            const TensorStats s = r.backend().tensorStats(x, target, scale);
                            const std::string what =
                                sized("to " + std::string(dtypeName(target)) + (scale == 1.0f ? "" : " scaled 2^-16"),
                                      n) +
                                ": ";
                            // Known totals too, so that a wrong oracle cannot hide a wrong device.
                            std::int64_t binned = 0;
                            for (std::uint32_t b : s.histogram)
                                binned += b;
                            EXPECT_EQ(s.count, n) << r.backend().name() << " " << what;
                            EXPECT_EQ(binned, n) << r.backend().name() << " " << what;
                            r.keepScalar(what + "amax", s.amax, exact());
                            r.keepScalar(what + "zeros", static_cast<double>(s.zeros), exact());
                            r.keepScalar(what + "underflow", static_cast<double>(s.underflow), exact());
                            r.keepScalar(what + "subnormal", static_cast<double>(s.subnormal), exact());
                            r.keepScalar(what + "overflow", static_cast<double>(s.overflow), exact());
                            r.keepScalar(what + "nonFinite", static_cast<double>(s.nonFinite), exact());
                            for (std::size_t b = 0; b < s.histogram.size(); ++b)
                                r.keepScalar(what + "bin " + std::to_string(b), s.histogram[b], exact());
                        }
                    }
                }
            }};
}

// --- multi-tensor ops --------------------------------------------------------------------------------

// One tensor of each of kSizes, of the given types in turn.
std::vector<Tensor> tensorList(OpRun& r, const std::vector<DType>& types, const std::vector<Draw>& draws)
{
    std::vector<Tensor> list;
    for (std::size_t i = 0; i < kSizes.size(); ++i)
        list.push_back(r.input({kSizes[i]}, types[i % types.size()], draws[i % draws.size()]));
    return list;
}

enum class Poison { None, InfInSecond, NaNInThird };

// --- optimizers ------------------------------------------------------------------------------------

// The tensors behind the optimizer slots of one step, one parameter per size in kSizes;
// every other parameter has weight decay off, as biases and norms do.
struct OptimizerTensors {
    std::vector<Tensor> master, grad, state1, state2, working;
    std::vector<OptimizerSlot> slots;

    // `pure`: master and state in `t` (fp16 or bf16 runs); otherwise fp32 masters with a
    // working copy in `t` (none when t is fp32: the layer computes with the master itself).
    OptimizerTensors(OpRun& r, DType t, bool pure, int states)
    {
        const DType masterType = pure ? t : DType::F32;
        const bool hasWorking = !pure && t != DType::F32;
        for (auto n : kSizes) {
            master.push_back(r.input({n}, masterType, uniform(-1, 1)));
            grad.push_back(r.input({n}, DType::F32, uniform(-0.1f, 0.1f)));
            state1.push_back(states >= 1 ? r.input({n}, masterType, uniform(-0.05f, 0.05f)) : Tensor());
            state2.push_back(states >= 2 ? r.input({n}, masterType, uniform(1e-4f, 1e-2f)) : Tensor());
            working.push_back(hasWorking ? r.output({n}, t) : Tensor());
        }
        for (std::size_t i = 0; i < kSizes.size(); ++i) {
            OptimizerSlot slot;
            slot.master = &master[i];
            slot.grad = &grad[i];
            slot.state1 = state1[i].defined() ? &state1[i] : nullptr;
            slot.state2 = state2[i].defined() ? &state2[i] : nullptr;
            slot.working = working[i].defined() ? &working[i] : nullptr;
            slot.decay = i % 2 == 0;
            slots.push_back(slot);
        }
    }

    // Every tensor of the step under `tolerance`: for an update, a few fp32 operations per
    // element, contracted into FMAs or not, and a weight near zero takes an update of the size
    // of the others, so callers use a norm-wise one.
    void keep(OpRun& r, Tolerance tolerance) const
    {
        for (std::size_t i = 0; i < kSizes.size(); ++i) {
            r.keep(sized("master", kSizes[i]), master[i], tolerance);
            if (state1[i].defined())
                r.keep(sized("state1", kSizes[i]), state1[i], tolerance);
            if (state2[i].defined())
                r.keep(sized("state2", kSizes[i]), state2[i], tolerance);
            if (working[i].defined())
                r.keep(sized("working copy", kSizes[i]), working[i], tolerance);
        }
    }
};

// --- the step on the device ------------------------------------------------------------------------

constexpr std::array<const char*, kStepStateCount> kStateNames{
    "LossScale", "GoodSteps",      "HysteresisLeft", "ScaleUsed", "Loss", "Correct",
    "Skipped",   "FirstNonFinite", "GradAmax",       "GradNorm",  "Held"};
static_assert(kStateNames.back() != nullptr, "a StepState without a name here");

using StateValues = std::vector<std::pair<StepState, float>>;
using InputValues = std::vector<std::pair<StepInput, float>>;

// A step's scalars on r's backend: the slots given, NaN everywhere else (but for the running-ahead
// flags, which are 0: a step not held), so that a slot an op writes when it should not (or fails
// to write) shows as a mismatch.
StepScalars stepScalars(OpRun& r, const StateValues& state, const InputValues& inputs = {})
{
    std::vector<float> s(kStepStateCount, NAN), in(kStepInputCount, NAN);
    s[static_cast<std::size_t>(slot(StepState::Held))] = 0.0f;
    in[static_cast<std::size_t>(slot(StepInput::HoldIfPreviousSkipped))] = 0.0f;
    for (const auto& [which, value] : state)
        s[static_cast<std::size_t>(slot(which))] = value;
    for (const auto& [which, value] : inputs)
        in[static_cast<std::size_t>(slot(which))] = value;
    StepScalars scalars{r.backend().empty({kStepInputCount}, DType::F32),
                        r.backend().empty({kStepStateCount}, DType::F32)};
    r.backend().upload(in.data(), scalars.inputs);
    r.backend().upload(s.data(), scalars.state);
    return scalars;
}

std::vector<float> stateOf(OpRun& r, const StepScalars& scalars)
{
    std::vector<float> s(kStepStateCount);
    r.backend().download(scalars.state, s.data());
    return s;
}

float stateAt(const std::vector<float>& s, StepState which) { return s[static_cast<std::size_t>(slot(which))]; }

// Every slot of the state, exact but for the loss and the norm.
void keepState(OpRun& r, const std::string& when, const StepScalars& scalars, Tolerance loss = exact(),
               Tolerance norm = exact())
{
    const std::vector<float> s = stateOf(r, scalars);
    for (std::size_t i = 0; i < s.size(); ++i) {
        const bool isLoss = i == static_cast<std::size_t>(slot(StepState::Loss));
        const bool isNorm = i == static_cast<std::size_t>(slot(StepState::GradNorm));
        r.keepScalar(when + ": state " + kStateNames[i], s[i], isLoss ? loss : isNorm ? norm : exact());
    }
}

ParityCase stepSoftmaxCrossEntropy(std::int64_t batch, std::int64_t classes)
{
    return {"stepSoftmaxCrossEntropy_" + extents({batch, classes}), Op::SoftmaxCrossEntropy, kAllTypes,
            [batch, classes](OpRun& r, DType t) {
                Tensor logits = r.input({batch, classes}, t, uniform(-8, 8));
                Tensor labels = r.input({batch}, DType::F32, classIndices(classes));
                const Tolerance loss = reduction(classes + batch, DType::F32);
                // 1024 scales exactly; 3000 / batch rounds, and must round as the host's division does.
                for (float scale : {1024.0f, 3000.0f}) {
                    const std::string when = "loss scale " + std::to_string(static_cast<int>(scale));
                    StepScalars scalars = stepScalars(r, {{StepState::LossScale, scale}});
                    Tensor dlogits = r.output({batch, classes}, t);
                    r.backend().softmaxCrossEntropy(logits, labels, scalars, dlogits);
                    keepState(r, when, scalars, loss);
                    r.keep(when + ": dlogits", dlogits, reduction(classes, DType::F32));
                    // Known answer: the count the host-valued call returns.
                    const LossResult plain = r.backend().softmaxCrossEntropy(logits, labels, scale, nullptr);
                    EXPECT_EQ(stateAt(stateOf(r, scalars), StepState::Correct), static_cast<float>(plain.correct))
                        << r.backend().name();
                }
            }};
}

// An fp32 output for each gradient, and the pointer lists unscaleAndCheckFinite takes.
struct UnscaleTargets {
    UnscaleTargets(OpRun& r, const std::vector<Tensor>& grads)
    {
        for (std::size_t i = 0; i < grads.size(); ++i)
            unscaled.push_back(r.output({kSizes[i]}, DType::F32));
        for (std::size_t i = 0; i < grads.size(); ++i) {
            in.push_back(&grads[i]);
            out.push_back(&unscaled[i]);
        }
    }
    UnscaleTargets(const UnscaleTargets&) = delete;
    UnscaleTargets& operator=(const UnscaleTargets&) = delete;
    std::vector<Tensor> unscaled;
    std::vector<const Tensor*> in;
    std::vector<Tensor*> out;
};

// Gradients in `types` (one type, or several in turn) unscaled by 1 / state[LossScale], the
// verdict written to the state; `poison` puts a non-finite value into one tensor (and, for NaN,
// an inf into a later one, which must not be the one reported); `lossValue` is state[Loss] as
// the forward pass left it.
ParityCase stepUnscale(const std::string& name, std::vector<DType> types, Poison poison, float lossValue,
                       float lossScale, bool noGradients = false, bool held = false)
{
    const bool mixed = types.size() > 1;
    return {name, Op::MultiTensor, mixed ? std::vector<DType>{DType::F32} : kAllTypes, [=](OpRun& r, DType t) {
                std::vector<Draw> draws(kSizes.size(), uniform(-3000, 3000));
                int expectedIndex = -1;
                if (poison == Poison::InfInSecond) {
                    draws[1] = with(draws[1], INFINITY, 1000000, 3);
                    expectedIndex = 1;
                } else if (poison == Poison::NaNInThird) {
                    draws[2] = with(draws[2], NAN, 1000000, 5);
                    draws[3] = with(draws[3], -INFINITY, 1000000, 0);
                    expectedIndex = 2;
                }
                const std::vector<Tensor> grads =
                    noGradients ? std::vector<Tensor>{} : tensorList(r, mixed ? types : std::vector<DType>{t}, draws);
                UnscaleTargets targets(r, grads);
                const std::vector<Tensor>& unscaled = targets.unscaled;
                const std::vector<const Tensor*>& in = targets.in;
                const std::vector<Tensor*>& out = targets.out;
                StepScalars scalars = stepScalars(r, {{StepState::LossScale, lossScale},
                                                      {StepState::Loss, lossValue},
                                                      {StepState::Held, held ? 1.0f : 0.0f}});
                r.backend().unscaleAndCheckFinite(in, out, scalars);
                // Known answers as well as agreement, so that a wrong oracle cannot hide a wrong device.
                const std::vector<float> s = stateOf(r, scalars);
                const bool lossBad = !std::isfinite(lossValue);
                EXPECT_EQ(stateAt(s, StepState::FirstNonFinite),
                          lossBad ? kLossNotFinite : static_cast<float>(expectedIndex))
                    << r.backend().name();
                const bool skip = lossBad || expectedIndex >= 0 || held;
                EXPECT_EQ(stateAt(s, StepState::Skipped), skip ? 1.0f : 0.0f) << r.backend().name();
                if (skip) {
                    EXPECT_EQ(stateAt(s, StepState::GradAmax), INFINITY) << r.backend().name();
                }
                keepState(r, "after the check", scalars);
                for (std::size_t i = 0; i < unscaled.size(); ++i)
                    r.keep(sized("unscaled", kSizes[i]), unscaled[i], exact());
            }};
}

// The norm clipGradNorm recorded: NaN for a skipped step, else about 93 (the clip cases' draws).
void expectRecordedNorm(OpRun& r, const StepScalars& scalars, bool skipped)
{
    const float norm = stateAt(stateOf(r, scalars), StepState::GradNorm);
    if (skipped) {
        EXPECT_TRUE(std::isnan(norm)) << r.backend().name();
    } else {
        EXPECT_GT(norm, 50.0f) << r.backend().name();
        EXPECT_LT(norm, 150.0f) << r.backend().name();
    }
}

enum class Clip { Active, Inactive, Disabled, SkippedStep };

ParityCase clipGradNorm(const std::string& name, Clip clip)
{
    return {name, Op::MultiTensor, kAllTypes, [clip](OpRun& r, DType t) {
                // The norm of these is about 93.
                std::vector<Tensor> grads = tensorList(r, {t}, {uniform(-2, 2)});
                std::vector<Tensor*> list;
                for (Tensor& g : grads)
                    list.push_back(&g);
                const float maxNorm = clip == Clip::Inactive ? 1000.0f : clip == Clip::Disabled ? 0.0f : 10.0f;
                StepScalars scalars = stepScalars(r, {{StepState::Skipped, clip == Clip::SkippedStep ? 1.0f : 0.0f}});
                r.backend().clipGradNorm(list, scalars, maxNorm);
                expectRecordedNorm(r, scalars, clip == Clip::SkippedStep);
                // A float of a double sum: the two sums differ in their last bits at most, which
                // can move the float by one ulp; scaling by maxNorm / norm carries that over.
                keepState(r, "after clipping", scalars, exact(), elementwise(2));
                const Tolerance scaled = clip == Clip::Active ? elementwise(8) : exact();
                for (std::size_t i = 0; i < grads.size(); ++i)
                    r.keep(sized("gradient", kSizes[i]), grads[i], scaled);
            }};
}

// The trainer's single-process step: the unscaling pass measures the norm (fusedNorm) and the
// clip reads it. `poison` puts an inf in the second gradient: the step is skipped and the norm
// NaN, whatever the sum of squares became.
ParityCase fusedNormClip(const std::string& name, Poison poison)
{
    return {name, Op::MultiTensor, kAllTypes, [poison](OpRun& r, DType t) {
                // Scaled by 8: the unscaled norm is about 93, as in clipGradNorm's cases.
                std::vector<Draw> draws(kSizes.size(), uniform(-16, 16));
                if (poison == Poison::InfInSecond)
                    draws[1] = with(draws[1], INFINITY, 1000000, 3);
                const std::vector<Tensor> grads = tensorList(r, {t}, draws);
                UnscaleTargets targets(r, grads);
                const std::vector<Tensor>& unscaled = targets.unscaled;
                const std::vector<const Tensor*>& in = targets.in;
                const std::vector<Tensor*>& out = targets.out;
                StepScalars scalars = stepScalars(r, {{StepState::LossScale, 8.0f}, {StepState::Loss, 1.0f}});
                r.backend().unscaleAndCheckFinite(in, out, scalars, true);
                r.backend().clipGradNorm(out, scalars, 10.0f, true);
                expectRecordedNorm(r, scalars, poison == Poison::InfInSecond);
                keepState(r, "after clipping", scalars, exact(), elementwise(2));
                const Tolerance scaled = poison == Poison::InfInSecond ? exact() : elementwise(8);
                for (std::size_t i = 0; i < unscaled.size(); ++i)
                    r.keep(sized("clipped", kSizes[i]), unscaled[i], scaled);
            }};
}

ParityCase stepSgd(const std::string& variant, SgdSettings settings, bool pure, bool skipped)
{
    return {"stepSgd" + variant + (pure ? "PureMasters" : "Fp32Masters") + (skipped ? "Skipped" : ""), Op::MultiTensor,
            pure ? k16BitTypes : kAllTypes, [=](OpRun& r, DType t) {
                OptimizerTensors tensors(r, t, pure, settings.momentum != 0 ? 1 : 0);
                StepScalars scalars =
                    stepScalars(r, {{StepState::Skipped, skipped ? 1.0f : 0.0f}}, {{StepInput::LearningRate, 0.1f}});
                std::vector<float> before(static_cast<std::size_t>(tensors.master.back().numel()));
                r.backend().download(tensors.master.back(), before.data());
                r.backend().sgdStep(tensors.slots, settings, scalars);
                std::vector<float> after(before.size());
                r.backend().download(tensors.master.back(), after.data());
                EXPECT_EQ(before == after, skipped) << r.backend().name();
                tensors.keep(r, skipped ? exact() : normwise(8)); // skipped: untouched
                keepState(r, "after the step", scalars);
            }};
}

ParityCase stepAdam(const std::string& variant, AdamSettings settings, bool pure, bool skipped)
{
    return {"step" + variant + (pure ? "PureMasters" : "Fp32Masters") + (skipped ? "Skipped" : ""), Op::MultiTensor,
            pure ? k16BitTypes : kAllTypes, [=](OpRun& r, DType t) {
                OptimizerTensors tensors(r, t, pure, 2);
                // Step 3, the corrections as the host computes them.
                const float c1 = 1.0f - std::pow(settings.beta1, 3.0f), c2 = 1.0f - std::pow(settings.beta2, 3.0f);
                StepScalars scalars = stepScalars(r, {{StepState::Skipped, skipped ? 1.0f : 0.0f}},
                                                  {{StepInput::LearningRate, 0.01f},
                                                   {StepInput::AdamCorrection1, c1},
                                                   {StepInput::AdamCorrection2, c2}});
                std::vector<float> before(static_cast<std::size_t>(tensors.master.back().numel()));
                r.backend().download(tensors.master.back(), before.data());
                r.backend().adamStep(tensors.slots, settings, scalars);
                std::vector<float> after(before.size());
                r.backend().download(tensors.master.back(), after.data());
                EXPECT_EQ(before == after, skipped) << r.backend().name();
                tensors.keep(r, skipped ? exact() : normwise(16));
                keepState(r, "after the step", scalars);
            }};
}

// bf16 masters stored stochastically or with Kahan compensation (update_rounding.h): the same
// draws at (seed, step, slot, element) and the same compensation on both backends. A draw or a
// rounding flips only where the fp32 update differs in its last bit and lands on the boundary
// (about 2^-16 of the elements), one bf16 ulp of the weight: within the norm-wise allowance.
ParityCase stepMasterStore(MasterRounding rounding, bool adam, bool skipped)
{
    const std::string name = std::string("step") + (adam ? "Adam" : "Sgd") +
                             (rounding == MasterRounding::Stochastic ? "StochasticMasters" : "KahanMasters") +
                             (skipped ? "Skipped" : "");
    return {name, Op::MultiTensor, {DType::BF16}, [=](OpRun& r, DType t) {
                OptimizerTensors tensors(r, t, true, adam ? 2 : 1);
                std::vector<Tensor> compensation;
                for (auto n : kSizes)
                    compensation.push_back(r.input({n}, DType::BF16, uniform(-2e-3f, 2e-3f)));
                for (std::size_t i = 0; i < kSizes.size(); ++i) {
                    tensors.slots[i].compensation = rounding == MasterRounding::Kahan ? &compensation[i] : nullptr;
                    tensors.slots[i].index = static_cast<std::uint32_t>(i);
                }
                const MasterStore store{rounding, 1234};
                // Step (3 << 20) + 4567: both halves of the step input in use.
                StepScalars scalars = stepScalars(r, {{StepState::Skipped, skipped ? 1.0f : 0.0f}},
                                                  {{StepInput::LearningRate, 0.01f},
                                                   {StepInput::AdamCorrection1, 0.271f},
                                                   {StepInput::AdamCorrection2, 0.003f},
                                                   {StepInput::RoundingStepLow, 4567.0f},
                                                   {StepInput::RoundingStepHigh, 3.0f}});
                if (adam)
                    r.backend().adamStep(tensors.slots, AdamSettings{0.9f, 0.999f, 1e-8f, 0.01f, true, store}, scalars);
                else
                    r.backend().sgdStep(tensors.slots, SgdSettings{0.9f, 0.01f, false, store}, scalars);
                tensors.keep(r, skipped ? exact() : normwise(8));
                if (rounding == MasterRounding::Kahan)
                    for (std::size_t i = 0; i < kSizes.size(); ++i)
                        r.keep(sized("compensation", kSizes[i]), compensation[i], skipped ? exact() : normwise(8));
            }};
}

// A skipped step puts back the batch-norm statistics from their snapshot; a taken one does not.
ParityCase copyIfSkipped(bool skipped)
{
    return {std::string("copyIfSkipped") + (skipped ? "Skipped" : "Taken"), Op::MultiTensor, kAllTypes,
            [skipped](OpRun& r, DType t) {
                for (std::int64_t n : kSizes) {
                    const Tensor snapshot = r.input({n}, t, uniform(-2, 2));
                    Tensor buffer = r.input({n}, t, uniform(5, 9));
                    StepScalars scalars = stepScalars(r, {{StepState::Skipped, skipped ? 1.0f : 0.0f}});
                    r.backend().copyIfSkipped(snapshot, buffer, scalars);
                    r.keep(sized("buffer", n), buffer, exact());
                }
            }};
}

// Running ahead: a step is held when it was queued ahead and the step before it was skipped.
ParityCase beginStep()
{
    return {"beginStep", Op::MultiTensor, {DType::F32}, [](OpRun& r, DType) {
                for (float ahead : {0.0f, 1.0f}) {
                    for (float previousSkipped : {0.0f, 1.0f}) {
                        StepScalars scalars =
                            stepScalars(r, {{StepState::Skipped, previousSkipped}, {StepState::Held, NAN}},
                                        {{StepInput::HoldIfPreviousSkipped, ahead}});
                        r.backend().beginStep(scalars);
                        EXPECT_EQ(stateAt(stateOf(r, scalars), StepState::Held),
                                  ahead != 0 && previousSkipped != 0 ? 1.0f : 0.0f)
                            << r.backend().name();
                        keepState(r,
                                  "ahead " + std::to_string(ahead) + ", previous skipped " +
                                      std::to_string(previousSkipped),
                                  scalars);
                    }
                }
            }};
}

// The loss-scale rule over 3200 steps whose finite or non-finite gradient decides each one,
// driven the way a step drives it (beginStep, unscaleAndCheckFinite, updateLossScale):
// stretches of random overflows, a long finite stretch that grows the scale into its ceiling
// and a long overflowing one that backs it off to its floor, with growth interval 5 and
// hysteresis 2; one step in three is queued ahead, and is held when the one before it skipped.
ParityCase lossScaleSequence()
{
    return {"updateLossScaleSequence", Op::MultiTensor, {DType::F32}, [](OpRun& r, DType) {
                constexpr std::int64_t kSteps = 3200;
                ScaleRule rule;
                rule.dynamic = true;
                rule.growthFactor = 2, rule.backoffFactor = 0.5f, rule.growthInterval = 5, rule.hysteresis = 2;
                rule.minScale = 1, rule.maxScale = 1048576;
                const std::vector<float> draws = r.draw(kSteps, uniform(0, 1));
                const std::vector<float> aheadDraws = r.draw(kSteps, uniform(0, 1));
                const auto overflows = [&draws](std::int64_t step) {
                    const float p = step < 1000 ? 0.15f : step < 1500 ? 0.0f : step < 2000 ? 1.0f : 0.3f;
                    return draws[static_cast<std::size_t>(step)] < p;
                };
                Tensor grad = r.backend().empty({1}, DType::F32), unscaled = r.backend().empty({1}, DType::F32);
                const Tensor* in[] = {&grad};
                Tensor* out[] = {&unscaled};
                StepScalars scalars = stepScalars(r, {{StepState::LossScale, 32768},
                                                      {StepState::GoodSteps, 0},
                                                      {StepState::HysteresisLeft, 2},
                                                      {StepState::Loss, 0.5f}});
                int skips = 0;
                for (std::int64_t step = 0; step < kSteps; ++step) {
                    const bool overflow = overflows(step);
                    skips += overflow ? 1 : 0;
                    // Only HoldIfPreviousSkipped is read from the inputs here.
                    r.backend().fill(scalars.inputs, aheadDraws[static_cast<std::size_t>(step)] < 0.3f ? 1.0f : 0.0f);
                    r.backend().fill(grad, overflow ? INFINITY : 1.0f);
                    r.backend().beginStep(scalars);
                    r.backend().unscaleAndCheckFinite(in, out, scalars);
                    r.backend().updateLossScale(scalars, rule);
                    if ((step + 1) % 100 == 0)
                        keepState(r, "after step " + std::to_string(step + 1), scalars);
                    // Known answers: the finite stretch ends at the ceiling, the overflowing one
                    // at the floor, so both clamps ran.
                    if (step + 1 == 1500) {
                        EXPECT_EQ(stateAt(stateOf(r, scalars), StepState::LossScale), rule.maxScale)
                            << r.backend().name();
                    }
                    if (step + 1 == 2000) {
                        EXPECT_EQ(stateAt(stateOf(r, scalars), StepState::LossScale), rule.minScale)
                            << r.backend().name();
                    }
                }
                EXPECT_GT(skips, 600);
            }};
}

// A static rule, or a held step under a dynamic one, only records the scale used.
ParityCase lossScaleUnchanged(const std::string& name, bool dynamicHeld)
{
    return {name, Op::MultiTensor, {DType::F32}, [dynamicHeld](OpRun& r, DType) {
                ScaleRule rule;
                rule.dynamic = dynamicHeld;
                rule.growthInterval = 4;
                rule.hysteresis = 2;
                for (float skipped : {0.0f, 1.0f}) {
                    StepScalars scalars = stepScalars(r, {{StepState::LossScale, 1024},
                                                          {StepState::GoodSteps, 3},
                                                          {StepState::HysteresisLeft, 1},
                                                          {StepState::Skipped, skipped},
                                                          {StepState::Held, dynamicHeld ? 1.0f : 0.0f}});
                    r.backend().updateLossScale(scalars, rule);
                    const std::vector<float> s = stateOf(r, scalars);
                    EXPECT_EQ(stateAt(s, StepState::ScaleUsed), 1024.0f) << r.backend().name();
                    EXPECT_EQ(stateAt(s, StepState::LossScale), 1024.0f) << r.backend().name();
                    keepState(r, skipped != 0 ? "skipped" : "finite", scalars);
                }
            }};
}

// --- the table ---------------------------------------------------------------------------------------

std::vector<ParityCase> buildCases()
{
    std::vector<ParityCase> cases{uploadDownload(), fill(), cast()};
    for (Transpose ta : {Transpose::No, Transpose::Yes}) {
        for (Transpose tb : {Transpose::No, Transpose::Yes}) {
            cases.push_back(gemm(ta, tb, 1, 1, 1, 1.0f, 0.0f));
            cases.push_back(gemm(ta, tb, 7, 33, 8, 1.0f, 0.0f));
            cases.push_back(gemm(ta, tb, 64, 100, 33, 1.0f, 0.0f));
            cases.push_back(gemm(ta, tb, 8, 24, 40, 0.5f, 0.75f));
        }
    }
    // Linear's forward (x w^T + bias) and the other transposes.
    cases.push_back(gemmRowBias(Transpose::No, Transpose::Yes, 1, 1, 1));
    cases.push_back(gemmRowBias(Transpose::No, Transpose::Yes, 7, 33, 8));
    cases.push_back(gemmRowBias(Transpose::No, Transpose::Yes, 64, 100, 33));
    cases.push_back(gemmRowBias(Transpose::No, Transpose::No, 128, 10, 130));
    cases.push_back(gemmRowBias(Transpose::Yes, Transpose::No, 9, 257, 16));
    cases.push_back(rowBiasGrad());
    for (const ConvShape& s :
         {ConvShape{2, 3, 7, 9, 5, 3, 1, 1, true}, ConvShape{3, 4, 9, 7, 6, 3, 1, 0, false},
          ConvShape{2, 3, 9, 9, 4, 3, 2, 1, true}, ConvShape{2, 5, 7, 7, 3, 3, 2, 0, false},
          ConvShape{4, 8, 8, 8, 16, 3, 1, 1, true}, ConvShape{2, 6, 7, 7, 8, 1, 2, 0, false},
          ConvShape{2, 3, 7, 9, 5, 3, 1, 1, true, {0.375f, 1.0f / 3.0f}},
          ConvShape{3, 4, 9, 7, 6, 3, 1, 0, false, {8.0f, 0.1f}},
          // Depthwise (MobileNet's), grouped, and dilated.
          ConvShape{2, 8, 9, 9, 8, 3, 2, 1, false, {}, 8}, ConvShape{2, 6, 7, 9, 4, 3, 1, 1, true, {}, 2},
          ConvShape{2, 3, 11, 9, 5, 3, 1, 2, true, {}, 1, 2}})
        cases.push_back(conv(s));
    for (const auto& dims :
         std::vector<std::vector<std::int64_t>>{{7, 33},
                                                {64, 100},
                                                {3, 8, 7, 7},
                                                {2, 5, 9, 9},
                                                {1, 3, 5, 5},
                                                // Over 16 samples (several blocks per channel), planes over
                                                // 1024 values (several chunks) with leftovers.
                                                {37, 4, 33, 33},
                                                {20, 3, 16, 16}})
        cases.push_back(batchNorm(dims));
    cases.push_back(activation(Activation::Relu, "Relu"));
    cases.push_back(activation(Activation::Gelu, "Gelu"));
    cases.push_back(activation(Activation::Tanh, "Tanh"));
    cases.push_back(activation(Activation::Sigmoid, "Sigmoid"));
    cases.push_back(pointwise({PointwiseKind::Clip, 0.0f, 6.0f}, "ClipRelu6"));
    cases.push_back(pointwise({PointwiseKind::LeakyRelu, 0.1f, 0.0f}, "LeakyRelu"));
    cases.push_back(pointwise({PointwiseKind::HardSigmoid, 0.2f, 0.5f}, "HardSigmoid"));
    cases.push_back(pointwise({PointwiseKind::HardSwish, 1.0f / 6.0f, 0.5f}, "HardSwish"));
    for (const PoolShape& s : {PoolShape{true, 2, 3, 7, 9, 2, 2, 0}, PoolShape{true, 2, 3, 9, 7, 3, 2, 1},
                               PoolShape{true, 2, 2, 7, 7, 3, 1, 1}, PoolShape{true, 2, 3, 9, 7, 3, 2, 1, true},
                               PoolShape{false, 2, 3, 7, 9, 2, 2, 0}, PoolShape{false, 2, 3, 9, 7, 3, 2, 1},
                               PoolShape{false, 2, 2, 7, 7, 3, 1, 1}, PoolShape{false, 4, 8, 14, 14, 14, 14, 0},
                               PoolShape{false, 2, 3, 9, 7, 3, 2, 1, false, true}})
        cases.push_back(pool(s));
    for (float p : {0.5f, 0.1f, 0.0f})
        cases.push_back(dropout(p));
    cases.push_back(add());
    cases.push_back(tensorStats());
    for (auto [batch, classes] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {1, 10}, {7, 10}, {33, 7}, {64, 100}})
        cases.push_back(softmaxCrossEntropy(batch, classes));
    for (auto [batch, classes] : {std::pair<std::int64_t, std::int64_t>{1, 10}, {33, 7}, {64, 100}})
        cases.push_back(stepSoftmaxCrossEntropy(batch, classes));
    cases.push_back(stepUnscale("stepUnscaleFinite", {}, Poison::None, 0.5f, 1024.0f));
    cases.push_back(stepUnscale("stepUnscaleFiniteScale3000", {}, Poison::None, 0.5f, 3000.0f));
    cases.push_back(stepUnscale("stepUnscaleInfInSecondTensor", {}, Poison::InfInSecond, 0.5f, 1024.0f));
    cases.push_back(stepUnscale("stepUnscaleNaNInThirdTensor", {}, Poison::NaNInThird, 0.5f, 1024.0f));
    cases.push_back(stepUnscale("stepUnscaleMixedTypes", kAllTypes, Poison::InfInSecond, 0.5f, 1024.0f));
    cases.push_back(stepUnscale("stepUnscaleLossNaN", {}, Poison::None, NAN, 1024.0f));
    cases.push_back(stepUnscale("stepUnscaleLossInfAndInfGradient", {}, Poison::InfInSecond, INFINITY, 1024.0f));
    cases.push_back(stepUnscale("stepUnscaleNoGradients", {}, Poison::None, 0.5f, 1024.0f, true));
    cases.push_back(clipGradNorm("clipGradNormActive", Clip::Active));
    cases.push_back(clipGradNorm("clipGradNormInactive", Clip::Inactive));
    cases.push_back(clipGradNorm("clipGradNormDisabled", Clip::Disabled));
    cases.push_back(clipGradNorm("clipGradNormSkippedStep", Clip::SkippedStep));
    cases.push_back(fusedNormClip("fusedNormClip", Poison::None));
    cases.push_back(fusedNormClip("fusedNormClipSkippedStep", Poison::InfInSecond));
    for (bool pure : {false, true}) {
        for (bool skipped : {false, true}) {
            cases.push_back(stepSgd("Plain", SgdSettings{0, 0, false, {}}, pure, skipped));
            cases.push_back(stepSgd("MomentumDecay", SgdSettings{0.9f, 0.01f, false, {}}, pure, skipped));
            cases.push_back(stepSgd("Nesterov", SgdSettings{0.9f, 0.01f, true, {}}, pure, skipped));
            cases.push_back(stepAdam("Adam", AdamSettings{0.9f, 0.999f, 1e-8f, 0.01f, false, {}}, pure, skipped));
            cases.push_back(stepAdam("AdamW", AdamSettings{0.9f, 0.999f, 1e-8f, 0.01f, true, {}}, pure, skipped));
        }
    }
    for (MasterRounding rounding : {MasterRounding::Stochastic, MasterRounding::Kahan})
        for (bool adam : {false, true})
            for (bool skipped : {false, true})
                cases.push_back(stepMasterStore(rounding, adam, skipped));
    cases.push_back(stepUnscale("stepUnscaleHeld", {}, Poison::None, 0.5f, 1024.0f, false, true));
    cases.push_back(beginStep());
    cases.push_back(copyIfSkipped(true));
    cases.push_back(copyIfSkipped(false));
    cases.push_back(lossScaleSequence());
    cases.push_back(lossScaleUnchanged("updateLossScaleStatic", false));
    cases.push_back(lossScaleUnchanged("updateLossScaleHeld", true));
    return cases;
}

const std::vector<ParityCase>& parityCases()
{
    static const std::vector<ParityCase> cases = buildCases();
    return cases;
}

struct ParityParam {
    std::size_t caseIndex;
    DType dtype;
};

std::string paramName(const ParityParam& p)
{
    return parityCases()[p.caseIndex].name + "_" + std::string(dtypeName(p.dtype));
}

void PrintTo(const ParityParam& p, std::ostream* os) { *os << paramName(p); }

std::vector<ParityParam> parityParams()
{
    std::vector<ParityParam> params;
    for (std::size_t i = 0; i < parityCases().size(); ++i)
        for (DType t : parityCases()[i].dtypes)
            params.push_back({i, t});
    return params;
}

class CudaParity : public DeviceTest, public ::testing::WithParamInterface<ParityParam> {};

TEST_P(CudaParity, MatchesCpuBackend)
{
    const ParityCase& c = parityCases()[GetParam().caseIndex];
    const DType t = GetParam().dtype;
    expectMatchesOracle(c.op, t, kSeed, c.run, paramName(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaParity, ::testing::ValuesIn(parityParams()),
                         [](const ::testing::TestParamInfo<ParityParam>& info) { return paramName(info.param); });

} // namespace
