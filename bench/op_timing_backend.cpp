#include "bench/op_timing_backend.h"

#include "engine/numerics/operand_quantization.h"
#include "engine/util/enum_table.h"

#include <cstdio>

namespace mantissa {

namespace {

// "gemm+bias NT 2048x64x64 bf16,bf16->bf16": the transposes say the pass (NT a forward
// against a weight stored [out, in], NN a data gradient, TN a weight gradient).
std::string gemmRow(const char* op, Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
                    const Tensor& a, const Tensor& b, const Tensor& c, std::int64_t batch = 1)
{
    char text[160];
    std::snprintf(text, sizeof text, "%s %c%c %s%lldx%lldx%lld %s,%s->%s", op, ta == Transpose::Yes ? 'T' : 'N',
                  tb == Transpose::Yes ? 'T' : 'N', batch > 1 ? (std::to_string(batch) + " x ").c_str() : "",
                  static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
                  dtypeName(a.dtype()).data(), dtypeName(b.dtype()).data(), dtypeName(c.dtype()).data());
    return text;
}

// "add bf16" for an op over tensors of one type; "cast bf16->f32" where they differ.
std::string typed(const char* op, const Tensor& in, const Tensor& out)
{
    std::string row = std::string(op) + " " + std::string(dtypeName(in.dtype()));
    if (out.dtype() != in.dtype())
        row += "->" + std::string(dtypeName(out.dtype()));
    return row;
}

} // namespace

Tensor OpTimingBackend::empty(const Shape& shape, DType dtype)
{
    return timed("empty", [&] { return m_target.empty(shape, dtype); });
}
void OpTimingBackend::fill(Tensor& t, float value)
{
    timed(typed("fill", t, t), [&] { m_target.fill(t, value); });
}
void OpTimingBackend::upload(const float* host, Tensor& dst)
{
    timed("upload", [&] { m_target.upload(host, dst); });
}
void OpTimingBackend::download(const Tensor& src, float* host)
{
    timed("download", [&] { m_target.download(src, host); });
}
void OpTimingBackend::cast(const Tensor& src, Tensor& dst)
{
    timed(typed("cast", src, dst), [&] { m_target.cast(src, dst); });
}

void OpTimingBackend::gemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                           const Tensor& a, const Tensor& b, float beta, Tensor& c)
{
    timed(gemmRow("gemm", ta, tb, m, n, k, a, b, c), [&] { m_target.gemm(ta, tb, m, n, k, alpha, a, b, beta, c); });
}
void OpTimingBackend::gemmRowBias(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
                                  const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& c, OperandScales scales,
                                  bool relu)
{
    timed(gemmRow(relu ? "gemm+bias+relu" : "gemm+bias", ta, tb, m, n, k, a, b, c),
          [&] { m_target.gemmRowBias(ta, tb, m, n, k, a, b, bias, c, scales, relu); });
}
void OpTimingBackend::gemmBlockScaled(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
                                      const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                                      const OperandBlockScales& scales)
{
    timed(gemmRow("gemm block-scaled", ta, tb, m, n, k, a, b, c),
          [&] { m_target.gemmBlockScaled(ta, tb, m, n, k, a, b, bias, c, scales); });
}
void OpTimingBackend::rowBiasGrad(const Tensor& dy, Tensor& dbias)
{
    timed(typed("bias gradient", dy, dbias), [&] { m_target.rowBiasGrad(dy, dbias); });
}

void OpTimingBackend::conv2dForward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                                    const ConvGeometry& g, OperandScales scales, ConvKeep* keep, bool relu)
{
    timed(typed(relu ? "conv+relu forward" : "conv forward", x, y),
          [&] { m_target.conv2dForward(x, w, bias, y, g, scales, keep, relu); });
}
void OpTimingBackend::conv2dBackwardData(const Tensor& dy, const Tensor& w, Tensor& dx, const ConvGeometry& g,
                                         OperandScales scales)
{
    timed(typed("conv data gradient", dy, dx), [&] { m_target.conv2dBackwardData(dy, w, dx, g, scales); });
}
void OpTimingBackend::conv2dBackwardFilter(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* dbias,
                                           const ConvGeometry& g, OperandScales scales, const ConvKeep* kept)
{
    timed(typed("conv weight gradient", x, dw),
          [&] { m_target.conv2dBackwardFilter(x, dy, dw, dbias, g, scales, kept); });
}
void OpTimingBackend::conv2dBackward(const Tensor& x, const Tensor& dy, const Tensor& w, Tensor& dw, Tensor* dbias,
                                     Tensor& dx, const ConvGeometry& g, OperandScales filterScales,
                                     OperandScales dataScales, const ConvKeep* kept)
{
    timed(typed("conv both gradients", x, dx),
          [&] { m_target.conv2dBackward(x, dy, w, dw, dbias, dx, g, filterScales, dataScales, kept); });
}

void OpTimingBackend::batchNormForward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                                       BatchNormState& state, bool training, float momentum, float epsilon)
{
    timed(typed("batch norm forward", x, y),
          [&] { m_target.batchNormForward(x, gamma, beta, y, state, training, momentum, epsilon); });
}
void OpTimingBackend::batchNormBackward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                        const BatchNormState& state, Tensor& dx, Tensor& dgamma, Tensor& dbeta)
{
    timed(typed("batch norm backward", x, dx),
          [&] { m_target.batchNormBackward(x, dy, gamma, state, dx, dgamma, dbeta); });
}

void OpTimingBackend::activationForward(Activation kind, const Tensor& x, Tensor& y)
{
    timed(typed((std::string(enumKey(kind)) + " forward").c_str(), x, y),
          [&] { m_target.activationForward(kind, x, y); });
}
void OpTimingBackend::activationBackward(Activation kind, const Tensor& x, const Tensor& y, const Tensor& dy,
                                         Tensor& dx)
{
    timed(typed((std::string(enumKey(kind)) + " backward").c_str(), dy, dx),
          [&] { m_target.activationBackward(kind, x, y, dy, dx); });
}
void OpTimingBackend::pointwiseForward(const PointwiseFunction& f, const Tensor& x, Tensor& y)
{
    timed(typed("pointwise forward", x, y), [&] { m_target.pointwiseForward(f, x, y); });
}
void OpTimingBackend::pointwiseBackward(const PointwiseFunction& f, const Tensor& x, const Tensor& dy, Tensor& dx)
{
    timed(typed("pointwise backward", dy, dx), [&] { m_target.pointwiseBackward(f, x, dy, dx); });
}

void OpTimingBackend::maxPoolForward(const Tensor& x, Tensor& y, Tensor& argmax, const PoolGeometry& g)
{
    timed(typed("max pool forward", x, y), [&] { m_target.maxPoolForward(x, y, argmax, g); });
}
void OpTimingBackend::maxPoolBackward(const Tensor& dy, const Tensor& argmax, Tensor& dx, const PoolGeometry& g)
{
    timed(typed("max pool backward", dy, dx), [&] { m_target.maxPoolBackward(dy, argmax, dx, g); });
}
void OpTimingBackend::avgPoolForward(const Tensor& x, Tensor& y, const PoolGeometry& g)
{
    timed(typed("avg pool forward", x, y), [&] { m_target.avgPoolForward(x, y, g); });
}
void OpTimingBackend::avgPoolBackward(const Tensor& dy, Tensor& dx, const PoolGeometry& g)
{
    timed(typed("avg pool backward", dy, dx), [&] { m_target.avgPoolBackward(dy, dx, g); });
}

void OpTimingBackend::dropoutForward(const Tensor& x, Tensor& y, Tensor& mask, float p, std::uint64_t seed,
                                     std::uint64_t counter)
{
    timed(typed("dropout forward", x, y), [&] { m_target.dropoutForward(x, y, mask, p, seed, counter); });
}
void OpTimingBackend::dropoutBackward(const Tensor& dy, const Tensor& mask, Tensor& dx)
{
    timed(typed("dropout backward", dy, dx), [&] { m_target.dropoutBackward(dy, mask, dx); });
}

void OpTimingBackend::add(const Tensor& a, const Tensor& b, Tensor& out)
{
    timed(typed("add", a, out), [&] { m_target.add(a, b, out); });
}

void OpTimingBackend::rowNormForward(RowNormKind kind, const Tensor& x, const Tensor& gain, const Tensor* bias,
                                     Tensor& y, Tensor& mean, Tensor& invStd, float epsilon, DType statistics)
{
    timed(typed("row norm forward", x, y),
          [&] { m_target.rowNormForward(kind, x, gain, bias, y, mean, invStd, epsilon, statistics); });
}
void OpTimingBackend::rowNormBackward(RowNormKind kind, const Tensor& x, const Tensor& dy, const Tensor& gain,
                                      const Tensor& mean, const Tensor& invStd, Tensor& dx, Tensor& dgain,
                                      Tensor* dbias)
{
    timed(typed("row norm backward", dy, dx),
          [&] { m_target.rowNormBackward(kind, x, dy, gain, mean, invStd, dx, dgain, dbias); });
}

void OpTimingBackend::embeddingForward(const Tensor& ids, const Tensor& table, Tensor& y)
{
    timed(typed("embedding forward", table, y), [&] { m_target.embeddingForward(ids, table, y); });
}
void OpTimingBackend::embeddingBackward(const Tensor& ids, const Tensor& dy, Tensor& dtable, bool accumulate)
{
    timed(typed("embedding backward", dy, dtable), [&] { m_target.embeddingBackward(ids, dy, dtable, accumulate); });
}
void OpTimingBackend::addBroadcast(const Tensor& x, const Tensor& table, Tensor& y, std::int64_t period)
{
    timed(typed("add broadcast", x, y), [&] { m_target.addBroadcast(x, table, y, period); });
}
void OpTimingBackend::addBroadcastBackward(const Tensor& dy, Tensor& dtable, std::int64_t period)
{
    timed(typed("add broadcast backward", dy, dtable), [&] { m_target.addBroadcastBackward(dy, dtable, period); });
}

void OpTimingBackend::gemmStridedBatched(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
                                         float alpha, const Tensor& a, std::int64_t strideA, const Tensor& b,
                                         std::int64_t strideB, float beta, Tensor& c, std::int64_t strideC,
                                         std::int64_t batch)
{
    timed(gemmRow("batched gemm", ta, tb, m, n, k, a, b, c, batch), [&] {
        m_target.gemmStridedBatched(ta, tb, m, n, k, alpha, a, strideA, b, strideB, beta, c, strideC, batch);
    });
}
void OpTimingBackend::swapAxes(const Tensor& x, Tensor& y, std::int64_t outer, std::int64_t rows, std::int64_t cols,
                               std::int64_t inner)
{
    timed(typed("swap axes", x, y), [&] { m_target.swapAxes(x, y, outer, rows, cols, inner); });
}
void OpTimingBackend::softmaxForward(const Tensor& scores, Tensor& probs, std::int64_t queries, std::int64_t keys,
                                     bool causal, DType arithmetic)
{
    timed(typed("softmax forward", scores, probs),
          [&] { m_target.softmaxForward(scores, probs, queries, keys, causal, arithmetic); });
}
void OpTimingBackend::softmaxBackward(const Tensor& probs, const Tensor& dprobs, Tensor& dscores, std::int64_t keys)
{
    timed(typed("softmax backward", dprobs, dscores), [&] { m_target.softmaxBackward(probs, dprobs, dscores, keys); });
}

LossResult OpTimingBackend::softmaxCrossEntropy(const Tensor& logits, const Tensor& labels, float lossScale,
                                                Tensor* dlogits)
{
    return timed("softmax cross-entropy",
                 [&] { return m_target.softmaxCrossEntropy(logits, labels, lossScale, dlogits); });
}
LossResult OpTimingBackend::meanSquaredError(const Tensor& predictions, const Tensor& targets, float lossScale,
                                             Tensor* dpredictions)
{
    return timed("mean squared error",
                 [&] { return m_target.meanSquaredError(predictions, targets, lossScale, dpredictions); });
}
void OpTimingBackend::meanSquaredError(const Tensor& predictions, const Tensor& targets, StepScalars& scalars,
                                       Tensor& dpredictions)
{
    timed("mean squared error", [&] { m_target.meanSquaredError(predictions, targets, scalars, dpredictions); });
}
void OpTimingBackend::beginStep(StepScalars& scalars)
{
    timed("optimizer: begin step", [&] { m_target.beginStep(scalars); });
}
void OpTimingBackend::softmaxCrossEntropy(const Tensor& logits, const Tensor& labels, StepScalars& scalars,
                                          Tensor& dlogits)
{
    timed("softmax cross-entropy", [&] { m_target.softmaxCrossEntropy(logits, labels, scalars, dlogits); });
}
void OpTimingBackend::unscaleAndCheckFinite(std::span<const Tensor* const> grads, std::span<Tensor* const> fp32Grads,
                                            StepScalars& scalars, bool fusedNorm)
{
    timed("optimizer: unscale and check finite",
          [&] { m_target.unscaleAndCheckFinite(grads, fp32Grads, scalars, fusedNorm); });
}
void OpTimingBackend::clipGradNorm(std::span<Tensor* const> fp32Grads, StepScalars& scalars, float maxNorm,
                                   bool fusedNorm)
{
    timed("optimizer: clip gradient norm", [&] { m_target.clipGradNorm(fp32Grads, scalars, maxNorm, fusedNorm); });
}
void OpTimingBackend::sgdStep(std::span<const OptimizerSlot> slots, const SgdSettings& s, const StepScalars& scalars)
{
    timed("optimizer: sgd step", [&] { m_target.sgdStep(slots, s, scalars); });
}
void OpTimingBackend::adamStep(std::span<const OptimizerSlot> slots, const AdamSettings& s, const StepScalars& scalars)
{
    timed("optimizer: adam step", [&] { m_target.adamStep(slots, s, scalars); });
}
void OpTimingBackend::updateLossScale(StepScalars& scalars, const ScaleRule& rule)
{
    timed("optimizer: loss scale", [&] { m_target.updateLossScale(scalars, rule); });
}
void OpTimingBackend::copyIfSkipped(const Tensor& src, Tensor& dst, const StepScalars& scalars)
{
    timed("optimizer: copy if skipped", [&] { m_target.copyIfSkipped(src, dst, scalars); });
}

std::unique_ptr<HostRead> OpTimingBackend::readAsync(const Tensor& src)
{
    return timed("download", [&] { return m_target.readAsync(src); });
}
TensorStats OpTimingBackend::tensorStats(const Tensor& t, DType target, float histogramScale)
{
    return timed("tensor statistics", [&] { return m_target.tensorStats(t, target, histogramScale); });
}
QuantizedOperand OpTimingBackend::quantizeOperand(const Tensor& src, const OperandQuantization& q)
{
    return timed(typed("quantize operand", src, src), [&] { return m_target.quantizeOperand(src, q); });
}

std::optional<QuantizedBlocks> OpTimingBackend::quantizeOperandBlocks(const Tensor& src, const OperandQuantization& q,
                                                                      std::int64_t scaleCount)
{
    return timed(typed("quantize operand blocks", src, src),
                 [&] { return m_target.quantizeOperandBlocks(src, q, scaleCount); });
}

std::unique_ptr<StepGraph> OpTimingBackend::captureGraph(const std::function<void(Backend&)>&, std::string* why)
{
    if (why)
        *why = "the op profile times each op as it is called";
    return nullptr;
}

} // namespace mantissa
