#include "engine/backend/cpu/onednn_conv.h"

#include "engine/backend/cpu/channel_blocks.h"
#include "engine/backend/cpu/output_scale.h"
#include "engine/backend/cpu/relu_words.h"
#include "engine/numerics/conversions.h"
#include "engine/numerics/conversions_avx512.h"
#include "engine/tensor/tensor.h"
#include "engine/util/check.h"

#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace mantissa::cpu {

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

// Whether a direction runs on oneDNN's blocked layouts (format any: nChw16c and the like, with
// reorders to and from our NCHW tensors around the primitive) or straight on NCHW (oneDNN's
// GEMM-based kernels). Measured per op at batch 128 on an AMD EPYC (Zen 5, 2 threads, CPU time
// of the whole op including the reorders and the rounding, in ms; im2col is the OpenBLAS sgemm
// code this replaced), as the machine is and with ONEDNN_MAX_CPU_ISA=AVX2:
//   fp32 32->32 28x28 3x3   forward   im2col 20.8  plain 15.7  blocked  9.5  (AVX2: 18.5 15.9 10.1)
//                           bwd data         22.6        19.0          9.7  (       23.5 19.0  9.9)
//                           bwd weights      19.1        25.9         10.9  (       19.4 21.5 11.5)
//   bf16 32->32 28x28 3x3   forward   im2col 21.7  plain 13.9  blocked  5.8
//                           bwd data         25.5        15.5          5.7
//                           bwd weights      21.1        20.8          8.0
//   fp32 64->64 14x14 3x3   fwd/data/weights: im2col 15.0/18.2/15.6, plain 12.3/14.5/12.5, blocked 8.3/8.5/9.5
//   bf16 64->64 14x14 3x3   fwd/data/weights: im2col 15.6/18.9/15.8, plain  9.8/10.8/ 9.4, blocked 4.7/4.7/5.5
//   fp32  1->32 28x28 3x3   fwd/data/weights: im2col 1.25/1.71/2.68, plain 0.59/0.67/2.72, blocked 0.80/5.38/1.32
//   fp32  3->32 28x28 3x3   fwd/data/weights:                     plain 1.59/1.85/8.95, blocked 1.30/5.28/2.65
//   fp32  8->32 28x28 3x3   fwd/data/weights:                     plain 3.84/4.85/7.91, blocked 2.76/5.39/3.40
//   bf16  8->32 28x28 3x3   fwd/data/weights:                     plain 3.70/4.02/6.55, blocked 2.20/2.91/1.78
//   fp32 32->64 28x28 1x1 stride 2: im2col 1.34/1.55/1.67, plain 1.06/1.12/1.15, blocked 1.77/1.81/2.70
//   fp32 16->16 28x28 1x1 stride 1 (AVX2): plain 0.29/0.29/8.8, blocked 0.94/0.94/1.02
// The blocked kernels win wherever there are channels to block, by 1.5x to 2.7x, although
// reordering a 128x32x28x28 fp32 tensor costs about 0.8 ms each way. A 1x1 kernel is a GEMM on
// NCHW as it stands, and there the reorders cost more than blocking saves (but the GEMM-based
// backward weights of a 1x1 stride-1 or a few-channel convolution is erratic, up to 245 ms on
// AVX2, so only the strided 1x1 one stays plain). With one input channel (or, for backward
// data, fewer than 8) there is nothing to block on the input side.
enum class Direction { Forward, BackwardData, BackwardWeights };

bool blockedLayouts(const ConvGeometry& g, Direction direction)
{
    const bool pointwise = g.kH == 1 && g.kW == 1;
    switch (direction) {
    case Direction::Forward: return !pointwise && g.inChannels > 1;
    case Direction::BackwardData: return !pointwise && g.inChannels >= 8;
    case Direction::BackwardWeights: return !(pointwise && (g.strideH > 1 || g.strideW > 1));
    }
    return true;
}

// One operand of a primitive: the plain layout our tensor has (NCHW, OIHW) and the layout the
// primitive's kernel runs on. Where they differ, a reorder built once with the primitive moves
// the values across (user to inner for an input, inner to user for an output).
// An activation moved between NCHW and nChw16c by channel_blocks.h, which does it at about
// twice the rate of oneDNN's reorder where the CPU has AVX-512 (a fifth of a bf16 resnet
// step went to those reorders).
struct ChannelBlocksMove {
    std::int64_t n = 0, channels = 0, pixels = 0;
    std::size_t elementBytes = 0;
};

std::optional<ChannelBlocksMove> channelBlocksMove(const dnnl::memory::desc& user, const dnnl::memory::desc& inner)
{
    const dims d = user.dims();
    const dt type = user.data_type();
    if (d.size() != 4 || (type != dt::bf16 && type != dt::f32) || !channelBlocksApply(d[1]) || !avx512::hasAvx512())
        return std::nullopt;
    if (user != dnnl::memory::desc(d, type, tag::nchw) || inner != dnnl::memory::desc(d, type, tag::nChw16c))
        return std::nullopt;
    return ChannelBlocksMove{d[0], d[1], d[2] * d[3], type == dt::bf16 ? 2u : 4u};
}

struct Operand {
    dnnl::memory::desc user, inner;
    std::optional<dnnl::reorder> reorder;
    std::optional<ChannelBlocksMove> ownMove; // instead of `reorder`, where it applies
    bool input = true;

    Operand(const dnnl::memory::desc& userDesc, const dnnl::memory::desc& innerDesc, bool isInput, dnnl::engine& eng)
        : user(userDesc), inner(innerDesc), input(isInput)
    {
        if (user == inner)
            return;
        ownMove = channelBlocksMove(user, inner);
        if (ownMove)
            return;
        reorder.emplace(input ? dnnl::reorder::primitive_desc(eng, user, eng, inner)
                              : dnnl::reorder::primitive_desc(eng, inner, eng, user));
    }
    bool moves() const { return reorder || ownMove; }

    // user -> inner for an input, inner -> user for an output.
    void move(dnnl::stream& stream, dnnl::memory& from, dnnl::memory& to) const
    {
        if (!ownMove) {
            reorder->execute(stream, from, to);
            return;
        }
        const ChannelBlocksMove& m = *ownMove;
        if (input)
            toChannelBlocks(from.get_data_handle(), to.get_data_handle(), m.n, m.channels, m.pixels, m.elementBytes);
        else
            fromChannelBlocks(from.get_data_handle(), to.get_data_handle(), m.n, m.channels, m.pixels, m.elementBytes);
    }
};

// One execution of a primitive: binds the caller's buffers, reorders inputs into scratch in the
// primitive's layout, and after the primitive reorders its outputs back into the caller's.
// Scratch comes from the host block pool, so that steady-state training allocates nothing.
class Execution {
public:
    explicit Execution(OneDnnRuntime& runtime) : m_runtime(runtime) {}

    // `data` as the primitive reads it; with `keep`, the reordered copy's storage is handed out
    // too (null where the primitive reads `data` in place).
    dnnl::memory input(const Operand& op, const void* data, std::shared_ptr<Storage>* keep = nullptr)
    {
        // oneDNN reads through this handle and never writes the input.
        dnnl::memory user(op.user, m_runtime.engine(), const_cast<void*>(data));
        if (!op.moves())
            return user;
        dnnl::memory inner = scratch(op.inner);
        if (keep)
            *keep = m_scratch.back();
        op.move(m_runtime.stream(), user, inner);
        return inner;
    }

    // The source operand of a filter gradient: `kept` where it holds this x in the layout the
    // primitive reads, else x moved there as input() does.
    dnnl::memory keptOrInput(const Operand& op, const void* x, const KeptConvInput* kept)
    {
        if (kept && kept->source == x && op.moves() && kept->layout == op.inner)
            return dnnl::memory(op.inner, m_runtime.engine(), kept->storage->data);
        return input(op, x);
    }

    dnnl::memory output(const Operand& op, void* data)
    {
        dnnl::memory user(op.user, m_runtime.engine(), data);
        if (!op.moves())
            return user;
        dnnl::memory inner = scratch(op.inner);
        m_pendingOutputs.emplace_back(&op, inner, user);
        return inner;
    }

    void run(dnnl::primitive& primitive, const std::unordered_map<int, dnnl::memory>& args)
    {
        primitive.execute(m_runtime.stream(), args);
        // The own moves run on the host at once: the primitive must have finished first.
        m_runtime.stream().wait();
        for (auto& [op, inner, user] : m_pendingOutputs)
            op->move(m_runtime.stream(), inner, user);
        m_pendingOutputs.clear();
        m_runtime.stream().wait();
    }

private:
    dnnl::memory scratch(const dnnl::memory::desc& desc)
    {
        m_scratch.push_back(allocateHostStorage(desc.get_size()));
        return dnnl::memory(desc, m_runtime.engine(), m_scratch.back()->data);
    }

    OneDnnRuntime& m_runtime;
    std::vector<std::shared_ptr<Storage>> m_scratch;
    std::vector<std::tuple<const Operand*, dnnl::memory, dnnl::memory>> m_pendingOutputs;
};

// The descriptors every direction shares, in the plain layouts of our tensors.
struct Descs {
    dt in;
    dnnl::memory::desc src, weights, dst, bias; // src, weights, dst in the input type; bias f32
    dnnl::memory::desc srcF32, weightsF32, dstF32;
    dnnl::memory::desc dstResult, srcResult; // forward's y and backward data's dx: fp32 or bf16 (bf16Output)
    dims strides, dilates, padL, padR;
};

Descs descsFor(const ConvShape& s)
{
    const ConvGeometry& g = s.geometry;
    Descs d;
    d.in = s.bf16Inputs ? dt::bf16 : dt::f32;
    const dims src{g.n, g.inChannels, g.inH, g.inW};
    // Grouped weights are oneDNN's [groups, out / groups, in / groups, kH, kW], which is our
    // [out, in / groups, kH, kW] in the same order.
    const bool grouped = g.groups > 1;
    const dims weights = grouped ? dims{g.groups, g.outChannels / g.groups, g.channelsPerGroup(), g.kH, g.kW}
                                 : dims{g.outChannels, g.inChannels, g.kH, g.kW};
    const tag weightsTag = grouped ? tag::goihw : tag::oihw;
    const dims dst{g.n, g.outChannels, g.outH, g.outW};
    d.src = {src, d.in, tag::nchw};
    d.weights = {weights, d.in, weightsTag};
    d.dst = {dst, d.in, tag::nchw};
    d.srcF32 = {src, dt::f32, tag::nchw};
    d.weightsF32 = {weights, dt::f32, weightsTag};
    d.dstF32 = {dst, dt::f32, tag::nchw};
    d.bias = {{g.outChannels}, dt::f32, tag::x};
    d.dstResult = s.bf16Output ? d.dst : d.dstF32;
    d.srcResult = s.bf16Output ? d.src : d.srcF32;
    d.strides = {g.strideH, g.strideW};
    // oneDNN counts the pixels skipped between taps: 0 for adjacent ones.
    d.dilates = {g.dilationH - 1, g.dilationW - 1};
    d.padL = {g.padH, g.padW};
    // The right padding that makes oneDNN's output extent ours: slidingOutput rounds down, so
    // it may be below padL, even negative (by less than the stride, which oneDNN accepts).
    const std::int64_t spanH = g.dilationH * (g.kH - 1) + 1, spanW = g.dilationW * (g.kW - 1) + 1;
    d.padR = {(g.outH - 1) * g.strideH + spanH - g.inH - g.padH, (g.outW - 1) * g.strideW + spanW - g.inW - g.padW};
    return d;
}

// The layout the primitive may choose: any (oneDNN's blocked layouts) or the plain one given.
dnnl::memory::desc chosenLayout(const dnnl::memory::desc& plain, bool blocked)
{
    return blocked ? dnnl::memory::desc(plain.dims(), plain.data_type(), tag::any) : plain;
}

std::string describe(const ConvShape& s, const char* op)
{
    const ConvGeometry& g = s.geometry;
    return std::string(s.bf16Inputs ? "bf16" : "fp32") + " convolution " + op + " for x [" + std::to_string(g.n) +
           ", " + std::to_string(g.inChannels) + ", " + std::to_string(g.inH) + ", " + std::to_string(g.inW) +
           "], w [" + std::to_string(g.outChannels) + ", " + std::to_string(g.channelsPerGroup()) + ", " +
           std::to_string(g.kH) + ", " + std::to_string(g.kW) + "], stride " + std::to_string(g.strideH) + "x" +
           std::to_string(g.strideW) + ", padding " + std::to_string(g.padH) + "x" + std::to_string(g.padW) +
           (g.dilationH == 1 && g.dilationW == 1
                ? ""
                : ", dilation " + std::to_string(g.dilationH) + "x" + std::to_string(g.dilationW)) +
           (g.groups == 1 ? "" : ", " + std::to_string(g.groups) + " groups");
}

// The fp32 shape the emulated path runs for a native one, writing fp32.
ConvShape widened(const ConvShape& s)
{
    ConvShape wide = s;
    wide.bf16Inputs = false;
    wide.bf16Output = false;
    return wide;
}

std::vector<float> widen(const void* bf16, std::int64_t count)
{
    std::vector<float> wide(static_cast<std::size_t>(count));
    widenToFloat(bf16, DType::BF16, wide.data(), wide.size());
    return wide;
}

std::int64_t xCount(const ConvGeometry& g) { return g.n * g.inChannels * g.inH * g.inW; }
std::int64_t wCount(const ConvGeometry& g) { return g.weightCount(); }
std::int64_t yCount(const ConvGeometry& g) { return g.n * g.outChannels * g.outH * g.outW; }

std::string family(const ConvShape& s, const char* op)
{
    return std::string(s.bf16Inputs ? "bf16" : "fp32") + " conv " + op;
}

// The forward primitive descriptor; the backward ones take one as their hint, with their own
// layout choice.
dnnl::convolution_forward::primitive_desc forwardDesc(const ConvShape& s, const Descs& d, bool blocked,
                                                      dnnl::engine& eng)
{
    const auto chosen = [blocked](const dnnl::memory::desc& plain) { return chosenLayout(plain, blocked); };
    const auto desc =
        s.bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                                 chosen(d.src), chosen(d.weights), d.bias, chosen(d.dstResult),
                                                 d.strides, d.dilates, d.padL, d.padR)
               : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                                 chosen(d.src), chosen(d.weights), chosen(d.dstResult), d.strides,
                                                 d.dilates, d.padL, d.padR);
    dnnl::primitive_attr attr;
    if (s.relu) {
        dnnl::post_ops ops;
        appendRelu(ops);
        attr.set_post_ops(ops);
    }
    return {desc, attr, eng};
}

} // namespace

struct OneDnnConv::Forward {
    dnnl::convolution_forward primitive;
    Operand src, weights, dst;
    dnnl::memory::desc bias;
    bool reluAfter = false; // the shape's ReLU runs after the kernel (appliesReluExactly)
};

struct OneDnnConv::BackwardData {
    dnnl::convolution_backward_data primitive;
    Operand diffDst, weights, diffSrc;
};

struct OneDnnConv::BackwardWeights {
    dnnl::convolution_backward_weights primitive;
    Operand src, diffDst, diffWeights;
    dnnl::memory::desc diffBias;
};

std::size_t OneDnnConv::KeyHash::operator()(const Key& key) const
{
    std::size_t h = 0;
    for (std::int64_t v : key)
        h ^= std::hash<std::int64_t>{}(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

namespace {

std::array<std::int64_t, 20> keyOf(const ConvShape& s)
{
    const ConvGeometry& g = s.geometry;
    return {g.n,         g.inChannels, g.inH,        g.inW,  g.outChannels, g.kH,   g.kW,
            g.strideH,   g.strideW,    g.padH,       g.padW, g.outH,        g.outW, g.groups,
            g.dilationH, g.dilationW,  s.bf16Inputs, s.bias, s.bf16Output,  s.relu};
}

} // namespace

OneDnnConv::OneDnnConv(OneDnnRuntime& runtime) : m_runtime(runtime) {}

OneDnnConv::~OneDnnConv() = default;

void OneDnnConv::refused(const ConvShape& s, const char* op, const dnnl::error& e)
{
    if (s.bf16Inputs && m_runtime.fallsBack()) {
        m_runtime.noteFallback(describe(s, op), e.what());
        return;
    }
    throw UnsupportedError("oneDNN " + oneDnnVersion() + " cannot create a " + describe(s, op) + " (" + e.what() + ")" +
                           (s.bf16Inputs ? "; training.cpu_kernels auto runs such a shape emulated, and emulated "
                                           "avoids native bf16 kernels"
                                         : ""));
}

OneDnnConv::Forward* OneDnnConv::forwardFor(const ConvShape& s)
{
    const Key key = keyOf(s);
    if (auto found = m_forward.find(key); found != m_forward.end())
        return found->second.get();
    dnnl::engine& eng = m_runtime.engine();
    const Descs d = descsFor(s);
    try {
        m_runtime.checkRefusal(family(s, "forward"));
        const bool blocked = blockedLayouts(s.geometry, Direction::Forward);
        auto pd = forwardDesc(s, d, blocked, eng);
        const bool reluAfter = s.relu && !appliesReluExactly(pd.impl_info_str());
        if (reluAfter) {
            ConvShape plain = s;
            plain.relu = false;
            pd = forwardDesc(plain, d, blocked, eng);
        }
        m_runtime.noteImplementation(family(s, "forward"), pd.impl_info_str());
        auto entry =
            std::make_unique<Forward>(Forward{dnnl::convolution_forward(pd), Operand(d.src, pd.src_desc(), true, eng),
                                              Operand(d.weights, pd.weights_desc(), true, eng),
                                              Operand(d.dstResult, pd.dst_desc(), false, eng), d.bias, reluAfter});
        return m_forward.emplace(key, std::move(entry)).first->second.get();
    } catch (const dnnl::error& e) {
        refused(s, "forward", e);
        m_forward.emplace(key, nullptr);
        return nullptr;
    }
}

OneDnnConv::BackwardData* OneDnnConv::backwardDataFor(const ConvShape& s)
{
    const Key key = keyOf(s);
    if (auto found = m_backwardData.find(key); found != m_backwardData.end())
        return found->second.get();
    dnnl::engine& eng = m_runtime.engine();
    const Descs d = descsFor(s);
    const bool blocked = blockedLayouts(s.geometry, Direction::BackwardData);
    const auto chosen = [blocked](const dnnl::memory::desc& plain) { return chosenLayout(plain, blocked); };
    try {
        m_runtime.checkRefusal(family(s, "backward data"));
        const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, chosen(d.srcResult),
                                                         chosen(d.weights), chosen(d.dst), d.strides, d.dilates, d.padL,
                                                         d.padR);
        const dnnl::convolution_backward_data::primitive_desc pd(desc, eng, forwardDesc(s, d, blocked, eng));
        m_runtime.noteImplementation(family(s, "backward data"), pd.impl_info_str());
        auto entry = std::make_unique<BackwardData>(BackwardData{
            dnnl::convolution_backward_data(pd), Operand(d.dst, pd.diff_dst_desc(), true, eng),
            Operand(d.weights, pd.weights_desc(), true, eng), Operand(d.srcResult, pd.diff_src_desc(), false, eng)});
        return m_backwardData.emplace(key, std::move(entry)).first->second.get();
    } catch (const dnnl::error& e) {
        refused(s, "backward data", e);
        m_backwardData.emplace(key, nullptr);
        return nullptr;
    }
}

OneDnnConv::BackwardWeights* OneDnnConv::backwardWeightsFor(const ConvShape& s)
{
    const Key key = keyOf(s);
    if (auto found = m_backwardWeights.find(key); found != m_backwardWeights.end())
        return found->second.get();
    dnnl::engine& eng = m_runtime.engine();
    const Descs d = descsFor(s);
    const bool blocked = blockedLayouts(s.geometry, Direction::BackwardWeights);
    const auto chosen = [blocked](const dnnl::memory::desc& plain) { return chosenLayout(plain, blocked); };
    try {
        m_runtime.checkRefusal(family(s, "backward weights"));
        const auto desc =
            s.bias ? dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, chosen(d.src),
                                                              chosen(d.weightsF32), d.bias, chosen(d.dst), d.strides,
                                                              d.dilates, d.padL, d.padR)
                   : dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, chosen(d.src),
                                                              chosen(d.weightsF32), chosen(d.dst), d.strides, d.dilates,
                                                              d.padL, d.padR);
        const dnnl::convolution_backward_weights::primitive_desc pd(desc, eng, forwardDesc(s, d, blocked, eng));
        m_runtime.noteImplementation(family(s, "backward weights"), pd.impl_info_str());
        auto entry = std::make_unique<BackwardWeights>(
            BackwardWeights{dnnl::convolution_backward_weights(pd), Operand(d.src, pd.src_desc(), true, eng),
                            Operand(d.dst, pd.diff_dst_desc(), true, eng),
                            Operand(d.weightsF32, pd.diff_weights_desc(), false, eng), d.bias});
        return m_backwardWeights.emplace(key, std::move(entry)).first->second.get();
    } catch (const dnnl::error& e) {
        refused(s, "backward weights", e);
        m_backwardWeights.emplace(key, nullptr);
        return nullptr;
    }
}

void OneDnnConv::forward(const ConvShape& s, const void* x, const void* w, const float* bias, void* y,
                         std::shared_ptr<const KeptConvInput>* keep)
{
    MANTISSA_ASSERT(s.bias == (bias != nullptr));
    Forward* found = forwardFor(s);
    if (!found) {
        const ConvGeometry& g = s.geometry;
        const std::vector<float> wideX = widen(x, xCount(g)), wideW = widen(w, wCount(g));
        if (!s.bf16Output) {
            forward(widened(s), wideX.data(), wideW.data(), bias, y);
            return;
        }
        std::vector<float> wideY(static_cast<std::size_t>(yCount(g)));
        forward(widened(s), wideX.data(), wideW.data(), bias, wideY.data());
        narrowFromFloat(wideY.data(), y, wideY.size(), DType::BF16);
        return;
    }
    Forward& f = *found;
    Execution run(m_runtime);
    std::shared_ptr<Storage> moved;
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, run.input(f.src, x, keep ? &moved : nullptr)},
                                               {DNNL_ARG_WEIGHTS, run.input(f.weights, w)}};
    if (keep && moved)
        *keep = std::make_shared<const KeptConvInput>(KeptConvInput{x, f.src.inner, std::move(moved)});
    args.emplace(DNNL_ARG_DST, run.output(f.dst, y));
    if (bias)
        args.emplace(DNNL_ARG_BIAS, dnnl::memory(f.bias, m_runtime.engine(), const_cast<float*>(bias)));
    run.run(f.primitive, args);
    if (f.reluAfter) {
        const auto count = static_cast<std::size_t>(yCount(s.geometry));
        if (s.bf16Output)
            reluForwardWords(static_cast<const std::uint16_t*>(y), static_cast<std::uint16_t*>(y), count, DType::BF16);
        else
            reluInPlace(static_cast<float*>(y), count);
    }
}

void OneDnnConv::backwardData(const ConvShape& s, const void* dy, const void* w, void* dx)
{
    BackwardData* found = backwardDataFor(s);
    if (!found) {
        const ConvGeometry& g = s.geometry;
        const std::vector<float> wideDy = widen(dy, yCount(g)), wideW = widen(w, wCount(g));
        if (!s.bf16Output) {
            backwardData(widened(s), wideDy.data(), wideW.data(), dx);
            return;
        }
        std::vector<float> wideDx(static_cast<std::size_t>(xCount(g)));
        backwardData(widened(s), wideDy.data(), wideW.data(), wideDx.data());
        narrowFromFloat(wideDx.data(), dx, wideDx.size(), DType::BF16);
        return;
    }
    BackwardData& b = *found;
    Execution run(m_runtime);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_DIFF_DST, run.input(b.diffDst, dy)},
                                               {DNNL_ARG_WEIGHTS, run.input(b.weights, w)}};
    args.emplace(DNNL_ARG_DIFF_SRC, run.output(b.diffSrc, dx));
    run.run(b.primitive, args);
}

void OneDnnConv::backwardWeights(const ConvShape& s, const void* x, const void* dy, float* dw, float* dbias,
                                 const KeptConvInput* kept)
{
    MANTISSA_ASSERT(s.bias == (dbias != nullptr));
    BackwardWeights* found = backwardWeightsFor(s);
    if (!found) {
        const ConvGeometry& g = s.geometry;
        const std::vector<float> wideX = widen(x, xCount(g)), wideDy = widen(dy, yCount(g));
        backwardWeights(widened(s), wideX.data(), wideDy.data(), dw, dbias);
        return;
    }
    BackwardWeights& b = *found;
    Execution run(m_runtime);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, run.keptOrInput(b.src, x, kept)},
                                               {DNNL_ARG_DIFF_DST, run.input(b.diffDst, dy)}};
    args.emplace(DNNL_ARG_DIFF_WEIGHTS, run.output(b.diffWeights, dw));
    if (dbias)
        args.emplace(DNNL_ARG_DIFF_BIAS, dnnl::memory(b.diffBias, m_runtime.engine(), dbias));
    run.run(b.primitive, args);
}

void OneDnnConv::backward(const ConvShape& filter, const ConvShape& data, const void* x, const void* dy, const void* w,
                          float* dw, float* dbias, void* dx, const KeptConvInput* kept)
{
    MANTISSA_ASSERT(filter.bias == (dbias != nullptr) && filter.bf16Inputs == data.bf16Inputs);
    BackwardWeights* weightsKernel = backwardWeightsFor(filter);
    BackwardData* dataKernel = backwardDataFor(data);
    if (!weightsKernel || !dataKernel) { // a refused one runs emulated: each on its own
        backwardWeights(filter, x, dy, dw, dbias, kept);
        backwardData(data, dy, w, dx);
        return;
    }
    BackwardWeights& bw = *weightsKernel;
    BackwardData& bd = *dataKernel;
    Execution run(m_runtime);
    // dy in the weights kernel's layout serves the data kernel too where that wants the same.
    const dnnl::memory dyForWeights = run.input(bw.diffDst, dy);
    std::unordered_map<int, dnnl::memory> weightArgs{{DNNL_ARG_SRC, run.keptOrInput(bw.src, x, kept)},
                                                     {DNNL_ARG_DIFF_DST, dyForWeights}};
    weightArgs.emplace(DNNL_ARG_DIFF_WEIGHTS, run.output(bw.diffWeights, dw));
    if (dbias)
        weightArgs.emplace(DNNL_ARG_DIFF_BIAS, dnnl::memory(bw.diffBias, m_runtime.engine(), dbias));
    run.run(bw.primitive, weightArgs);

    const dnnl::memory dyForData = bd.diffDst.inner == bw.diffDst.inner ? dyForWeights : run.input(bd.diffDst, dy);
    std::unordered_map<int, dnnl::memory> dataArgs{{DNNL_ARG_DIFF_DST, dyForData},
                                                   {DNNL_ARG_WEIGHTS, run.input(bd.weights, w)}};
    dataArgs.emplace(DNNL_ARG_DIFF_SRC, run.output(bd.diffSrc, dx));
    run.run(bd.primitive, dataArgs);
}

} // namespace mantissa::cpu
