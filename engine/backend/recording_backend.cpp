#include "engine/backend/recording_backend.h"

#include "engine/numerics/operand_quantization.h"
#include "engine/util/check.h"

#include <optional>

namespace mantissa {

namespace {

// The span arguments point at tensors and slots the caller may rebuild between steps; the
// tape keeps copies of the handles, which share their buffers, as a graph keeps pointers.
std::vector<Tensor> copies(std::span<const Tensor* const> tensors)
{
    std::vector<Tensor> out;
    out.reserve(tensors.size());
    for (const Tensor* t : tensors)
        out.push_back(*t);
    return out;
}

// A null pointer (unscaleAndCheckFinite's "measure, do not write") becomes an undefined
// tensor, and pointers() makes it null again.
std::vector<Tensor> copies(std::span<Tensor* const> tensors)
{
    std::vector<Tensor> out;
    out.reserve(tensors.size());
    for (Tensor* t : tensors)
        out.push_back(t ? *t : Tensor());
    return out;
}

template <typename T>
std::vector<T*> pointers(std::vector<T>& tensors)
{
    std::vector<T*> out;
    out.reserve(tensors.size());
    for (T& t : tensors)
        out.push_back(t.defined() ? &t : nullptr);
    return out;
}

std::vector<const Tensor*> constPointers(std::vector<Tensor>& tensors)
{
    std::vector<const Tensor*> out;
    out.reserve(tensors.size());
    for (const Tensor& t : tensors)
        out.push_back(&t);
    return out;
}

// An optimizer slot with its tensors owned, and the OptimizerSlot view of them.
struct OwnedSlot {
    Tensor master, grad, state1, state2, working, scaledGrad, compensation;
    bool hasState1 = false, hasState2 = false, hasWorking = false, decay = true;
    std::uint32_t index = 0;

    explicit OwnedSlot(const OptimizerSlot& s)
        : master(*s.master), grad(*s.grad), hasState1(s.state1), hasState2(s.state2), hasWorking(s.working),
          decay(s.decay), index(s.index)
    {
        if (s.compensation)
            compensation = *s.compensation;
        if (s.scaledGrad)
            scaledGrad = *s.scaledGrad;
        if (s.state1)
            state1 = *s.state1;
        if (s.state2)
            state2 = *s.state2;
        if (s.working)
            working = *s.working;
    }
};

struct OwnedSlots {
    std::vector<OwnedSlot> owned;
    explicit OwnedSlots(std::span<const OptimizerSlot> slots) : owned(slots.begin(), slots.end()) {}

    std::vector<OptimizerSlot> view()
    {
        std::vector<OptimizerSlot> out;
        out.reserve(owned.size());
        for (OwnedSlot& o : owned)
            out.push_back({&o.master, &o.grad, o.hasState1 ? &o.state1 : nullptr, o.hasState2 ? &o.state2 : nullptr,
                           o.hasWorking ? &o.working : nullptr, o.decay,
                           o.scaledGrad.defined() ? &o.scaledGrad : nullptr,
                           o.compensation.defined() ? &o.compensation : nullptr, o.index});
        return out;
    }
};

} // namespace

void RecordingBackend::replay() const
{
    for (const auto& call : m_tape)
        call(m_target);
}

void RecordingBackend::refuse(const char* what)
{
    throw UnsupportedError(std::string(what) +
                           " moves data between the host and the device, so it cannot be part of a recorded step");
}

void RecordingBackend::fill(Tensor& t, float value)
{
    record([t, value](Backend& b) mutable { b.fill(t, value); });
}

void RecordingBackend::upload(const float*, Tensor&) { refuse("upload"); }
void RecordingBackend::download(const Tensor&, float*) { refuse("download"); }
TensorStats RecordingBackend::tensorStats(const Tensor&, DType, float)
{
    refuse("tensorStats (its result goes to the host)");
}

QuantizedOperand RecordingBackend::quantizeOperand(const Tensor&, const OperandQuantization&)
{
    refuse("quantizeOperand (a per-tensor scale goes to the host)");
}

void RecordingBackend::cast(const Tensor& src, Tensor& dst)
{
    record([src, dst](Backend& b) mutable { b.cast(src, dst); });
}

void RecordingBackend::gemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                            const Tensor& a, const Tensor& b, float beta, Tensor& c)
{
    record([=, c = c](Backend& be) mutable { be.gemm(ta, tb, m, n, k, alpha, a, b, beta, c); });
}

void RecordingBackend::gemmRowBias(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
                                   const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& c,
                                   OperandScales scales, bool relu)
{
    record([=, c = c](Backend& be) mutable { be.gemmRowBias(ta, tb, m, n, k, a, b, bias, c, scales, relu); });
}

void RecordingBackend::gemmBlockScaled(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
                                       const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                                       const OperandBlockScales& scales)
{
    const std::optional<Tensor> heldBias = bias ? std::optional<Tensor>(*bias) : std::nullopt;
    record([=, c = c](Backend& be) mutable {
        be.gemmBlockScaled(ta, tb, m, n, k, a, b, heldBias ? &*heldBias : nullptr, c, scales);
    });
}

void RecordingBackend::rowBiasGrad(const Tensor& dy, Tensor& dbias)
{
    record([dy, dbias](Backend& b) mutable { b.rowBiasGrad(dy, dbias); });
}

// A recorded step replays later, when nothing of this call's forward is at hand: keeps nothing
// (ConvKeep), and the backward works from the input alone.
void RecordingBackend::conv2dForward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                                     const ConvGeometry& g, OperandScales scales, ConvKeep*, bool relu)
{
    std::optional<Tensor> b = bias ? std::optional<Tensor>(*bias) : std::nullopt;
    record([x, w, b, y, g, scales, relu](Backend& be) mutable {
        be.conv2dForward(x, w, b ? &*b : nullptr, y, g, scales, nullptr, relu);
    });
}

void RecordingBackend::conv2dBackwardData(const Tensor& dy, const Tensor& w, Tensor& dx, const ConvGeometry& g,
                                          OperandScales scales)
{
    record([dy, w, dx, g, scales](Backend& b) mutable { b.conv2dBackwardData(dy, w, dx, g, scales); });
}

void RecordingBackend::conv2dBackwardFilter(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* dbias,
                                            const ConvGeometry& g, OperandScales scales, const ConvKeep*)
{
    std::optional<Tensor> db = dbias ? std::optional<Tensor>(*dbias) : std::nullopt;
    record([x, dy, dw, db, g, scales](Backend& b) mutable {
        b.conv2dBackwardFilter(x, dy, dw, db ? &*db : nullptr, g, scales);
    });
}

void RecordingBackend::batchNormForward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                                        BatchNormState& state, bool training, float momentum, float epsilon)
{
    record([=, y = y, state = state](Backend& b) mutable {
        b.batchNormForward(x, gamma, beta, y, state, training, momentum, epsilon);
    });
}

void RecordingBackend::batchNormBackward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                         const BatchNormState& state, Tensor& dx, Tensor& dgamma, Tensor& dbeta)
{
    record([=, dx = dx, dgamma = dgamma, dbeta = dbeta](Backend& b) mutable {
        b.batchNormBackward(x, dy, gamma, state, dx, dgamma, dbeta);
    });
}

void RecordingBackend::activationForward(Activation kind, const Tensor& x, Tensor& y)
{
    record([kind, x, y](Backend& b) mutable { b.activationForward(kind, x, y); });
}

void RecordingBackend::activationBackward(Activation kind, const Tensor& x, const Tensor& y, const Tensor& dy,
                                          Tensor& dx)
{
    record([kind, x, y, dy, dx](Backend& b) mutable { b.activationBackward(kind, x, y, dy, dx); });
}

void RecordingBackend::pointwiseForward(const PointwiseFunction& f, const Tensor& x, Tensor& y)
{
    record([f, x, y](Backend& b) mutable { b.pointwiseForward(f, x, y); });
}

void RecordingBackend::pointwiseBackward(const PointwiseFunction& f, const Tensor& x, const Tensor& dy, Tensor& dx)
{
    record([f, x, dy, dx](Backend& b) mutable { b.pointwiseBackward(f, x, dy, dx); });
}

void RecordingBackend::maxPoolForward(const Tensor& x, Tensor& y, Tensor& argmax, const PoolGeometry& g)
{
    record([x, y, argmax, g](Backend& b) mutable { b.maxPoolForward(x, y, argmax, g); });
}

void RecordingBackend::maxPoolBackward(const Tensor& dy, const Tensor& argmax, Tensor& dx, const PoolGeometry& g)
{
    record([dy, argmax, dx, g](Backend& b) mutable { b.maxPoolBackward(dy, argmax, dx, g); });
}

void RecordingBackend::avgPoolForward(const Tensor& x, Tensor& y, const PoolGeometry& g)
{
    record([x, y, g](Backend& b) mutable { b.avgPoolForward(x, y, g); });
}

void RecordingBackend::avgPoolBackward(const Tensor& dy, Tensor& dx, const PoolGeometry& g)
{
    record([dy, dx, g](Backend& b) mutable { b.avgPoolBackward(dy, dx, g); });
}

void RecordingBackend::dropoutForward(const Tensor& x, Tensor& y, Tensor& mask, float p, std::uint64_t seed,
                                      std::uint64_t counter)
{
    record([=, y = y, mask = mask](Backend& b) mutable { b.dropoutForward(x, y, mask, p, seed, counter); });
}

void RecordingBackend::dropoutBackward(const Tensor& dy, const Tensor& mask, Tensor& dx)
{
    record([dy, mask, dx](Backend& b) mutable { b.dropoutBackward(dy, mask, dx); });
}

void RecordingBackend::add(const Tensor& a, const Tensor& b, Tensor& out)
{
    record([a, b, out](Backend& be) mutable { be.add(a, b, out); });
}

void RecordingBackend::rowNormForward(RowNormKind kind, const Tensor& x, const Tensor& gain, const Tensor* bias,
                                      Tensor& y, Tensor& mean, Tensor& invStd, float epsilon, DType statistics)
{
    std::optional<Tensor> b = bias ? std::optional<Tensor>(*bias) : std::nullopt;
    record([=, y = y, mean = mean, invStd = invStd](Backend& be) mutable {
        be.rowNormForward(kind, x, gain, b ? &*b : nullptr, y, mean, invStd, epsilon, statistics);
    });
}

void RecordingBackend::rowNormBackward(RowNormKind kind, const Tensor& x, const Tensor& dy, const Tensor& gain,
                                       const Tensor& mean, const Tensor& invStd, Tensor& dx, Tensor& dgain,
                                       Tensor* dbias)
{
    std::optional<Tensor> db = dbias ? std::optional<Tensor>(*dbias) : std::nullopt;
    record([=, dx = dx, dgain = dgain](Backend& be) mutable {
        be.rowNormBackward(kind, x, dy, gain, mean, invStd, dx, dgain, db ? &*db : nullptr);
    });
}

void RecordingBackend::embeddingForward(const Tensor& ids, const Tensor& table, Tensor& y)
{
    record([ids, table, y](Backend& be) mutable { be.embeddingForward(ids, table, y); });
}

void RecordingBackend::embeddingBackward(const Tensor& ids, const Tensor& dy, Tensor& dtable, bool accumulate)
{
    record([=, dtable = dtable](Backend& be) mutable { be.embeddingBackward(ids, dy, dtable, accumulate); });
}

void RecordingBackend::addBroadcast(const Tensor& x, const Tensor& table, Tensor& y, std::int64_t period)
{
    record([=, y = y](Backend& be) mutable { be.addBroadcast(x, table, y, period); });
}

void RecordingBackend::addBroadcastBackward(const Tensor& dy, Tensor& dtable, std::int64_t period)
{
    record([=, dtable = dtable](Backend& be) mutable { be.addBroadcastBackward(dy, dtable, period); });
}

void RecordingBackend::gemmStridedBatched(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
                                          float alpha, const Tensor& a, std::int64_t strideA, const Tensor& b,
                                          std::int64_t strideB, float beta, Tensor& c, std::int64_t strideC,
                                          std::int64_t batch)
{
    record([=, c = c](Backend& be) mutable {
        be.gemmStridedBatched(ta, tb, m, n, k, alpha, a, strideA, b, strideB, beta, c, strideC, batch);
    });
}

void RecordingBackend::swapAxes(const Tensor& x, Tensor& y, std::int64_t outer, std::int64_t rows, std::int64_t cols,
                                std::int64_t inner)
{
    record([=, y = y](Backend& be) mutable { be.swapAxes(x, y, outer, rows, cols, inner); });
}

void RecordingBackend::softmaxForward(const Tensor& scores, Tensor& probs, std::int64_t queries, std::int64_t keys,
                                      bool causal, DType arithmetic)
{
    record([=, probs = probs](Backend& be) mutable {
        be.softmaxForward(scores, probs, queries, keys, causal, arithmetic);
    });
}

void RecordingBackend::softmaxBackward(const Tensor& probs, const Tensor& dprobs, Tensor& dscores, std::int64_t keys)
{
    record([=, dscores = dscores](Backend& be) mutable { be.softmaxBackward(probs, dprobs, dscores, keys); });
}

LossResult RecordingBackend::softmaxCrossEntropy(const Tensor&, const Tensor&, float, Tensor*)
{
    refuse("the host-valued softmaxCrossEntropy (use the StepScalars form)");
}

LossResult RecordingBackend::meanSquaredError(const Tensor&, const Tensor&, float, Tensor*)
{
    refuse("the host-valued meanSquaredError (use the StepScalars form)");
}

void RecordingBackend::meanSquaredError(const Tensor& predictions, const Tensor& targets, StepScalars& scalars,
                                        Tensor& dpredictions)
{
    record([predictions, targets, scalars, dpredictions](Backend& b) mutable {
        b.meanSquaredError(predictions, targets, scalars, dpredictions);
    });
}

void RecordingBackend::beginStep(StepScalars& scalars)
{
    record([scalars](Backend& b) mutable { b.beginStep(scalars); });
}

void RecordingBackend::softmaxCrossEntropy(const Tensor& logits, const Tensor& labels, StepScalars& scalars,
                                           Tensor& dlogits)
{
    record([logits, labels, scalars, dlogits](Backend& b) mutable {
        b.softmaxCrossEntropy(logits, labels, scalars, dlogits);
    });
}

void RecordingBackend::unscaleAndCheckFinite(std::span<const Tensor* const> grads, std::span<Tensor* const> fp32Grads,
                                             StepScalars& scalars, bool fusedNorm)
{
    record([in = copies(grads), out = copies(fp32Grads), scalars, fusedNorm](Backend& b) mutable {
        b.unscaleAndCheckFinite(constPointers(in), pointers(out), scalars, fusedNorm);
    });
}

void RecordingBackend::clipGradNorm(std::span<Tensor* const> fp32Grads, StepScalars& scalars, float maxNorm,
                                    bool fusedNorm)
{
    record([ts = copies(fp32Grads), scalars, maxNorm, fusedNorm](Backend& b) mutable {
        b.clipGradNorm(pointers(ts), scalars, maxNorm, fusedNorm);
    });
}

void RecordingBackend::sgdStep(std::span<const OptimizerSlot> slots, const SgdSettings& s, const StepScalars& scalars)
{
    record([owned = OwnedSlots(slots), s, scalars](Backend& b) mutable { b.sgdStep(owned.view(), s, scalars); });
}

void RecordingBackend::adamStep(std::span<const OptimizerSlot> slots, const AdamSettings& s, const StepScalars& scalars)
{
    record([owned = OwnedSlots(slots), s, scalars](Backend& b) mutable { b.adamStep(owned.view(), s, scalars); });
}

void RecordingBackend::updateLossScale(StepScalars& scalars, const ScaleRule& rule)
{
    record([scalars, rule](Backend& b) mutable { b.updateLossScale(scalars, rule); });
}

void RecordingBackend::copyIfSkipped(const Tensor& src, Tensor& dst, const StepScalars& scalars)
{
    record([src, dst, scalars](Backend& b) mutable { b.copyIfSkipped(src, dst, scalars); });
}

std::unique_ptr<StepGraph> RecordingBackend::captureGraph(const std::function<void(Backend&)>&, std::string* why)
{
    if (why)
        *why = "a recorded step cannot itself record a step";
    return nullptr;
}

} // namespace mantissa
