// The transformer ops of backend.h on the CUDA backend (normalisation over rows, embeddings,
// the attention softmax and axis swap): shape checks, then the launchers of row_norm.cu,
// embedding.cu and attention.cu. gemmStridedBatched is with the other GEMMs, in
// cublas_gemm.cpp. Like every op here they only queue work: no allocation, no wait for the
// host, so a step that uses them can be captured as a graph.
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/kernels.h"
#include "engine/util/check.h"

namespace mantissa::cuda {

void CudaBackend::rowNormForward(RowNormKind kind, const Tensor& x, const Tensor& gain, const Tensor* bias, Tensor& y,
                                 Tensor& mean, Tensor& invStd, float epsilon, DType statistics)
{
    const std::int64_t width = gain.numel();
    MANTISSA_ASSERT(width > 0 && x.numel() % width == 0 && y.numel() == x.numel());
    const std::int64_t rows = x.numel() / width;
    MANTISSA_ASSERT(gain.dtype() == DType::F32 && (!bias || (bias->dtype() == DType::F32 && bias->numel() == width)));
    MANTISSA_ASSERT(mean.dtype() == DType::F32 && invStd.dtype() == DType::F32);
    MANTISSA_ASSERT(mean.numel() == rows && invStd.numel() == rows);
    launchRowNormForward(kind, x.data(), x.dtype(), gain.f32(), bias ? bias->f32() : nullptr, y.data(), y.dtype(),
                         mean.f32(), invStd.f32(), rows, width, epsilon, statistics, stream());
    checkLaunch("rowNormForward");
}

void CudaBackend::rowNormBackward(RowNormKind kind, const Tensor& x, const Tensor& dy, const Tensor& gain,
                                  const Tensor& mean, const Tensor& invStd, Tensor& dx, Tensor& dgain, Tensor* dbias)
{
    const std::int64_t width = gain.numel();
    MANTISSA_ASSERT(width > 0 && x.numel() % width == 0);
    MANTISSA_ASSERT(dy.numel() == x.numel() && dx.numel() == x.numel() && dgain.numel() == width);
    MANTISSA_ASSERT(dgain.dtype() == DType::F32 &&
                    (!dbias || (dbias->dtype() == DType::F32 && dbias->numel() == width)));
    launchRowNormBackward(kind, x.data(), x.dtype(), dy.data(), dy.dtype(), gain.f32(), mean.f32(), invStd.f32(),
                          dx.data(), dx.dtype(), dgain.f32(), dbias ? dbias->f32() : nullptr, x.numel() / width, width,
                          stream());
    checkLaunch("rowNormBackward");
}

void CudaBackend::embeddingForward(const Tensor& ids, const Tensor& table, Tensor& y)
{
    MANTISSA_ASSERT(ids.dtype() == DType::F32 && table.shape().rank() == 2);
    const std::int64_t vocabulary = table.shape()[0], width = table.shape()[1];
    MANTISSA_ASSERT(y.numel() == ids.numel() * width);
    launchEmbeddingForward(ids.f32(), table.data(), table.dtype(), y.data(), y.dtype(), ids.numel(), vocabulary, width,
                           stream());
    checkLaunch("embeddingForward");
}

void CudaBackend::embeddingBackward(const Tensor& ids, const Tensor& dy, Tensor& dtable, bool accumulate)
{
    MANTISSA_ASSERT(ids.dtype() == DType::F32 && dtable.shape().rank() == 2);
    const std::int64_t vocabulary = dtable.shape()[0], width = dtable.shape()[1];
    MANTISSA_ASSERT(dy.numel() == ids.numel() * width);
    launchEmbeddingBackward(ids.f32(), dy.data(), dy.dtype(), dtable.data(), dtable.dtype(), ids.numel(), vocabulary,
                            width, accumulate, stream());
    checkLaunch("embeddingBackward");
}

void CudaBackend::addBroadcast(const Tensor& x, const Tensor& table, Tensor& y, std::int64_t period)
{
    MANTISSA_ASSERT(x.numel() == y.numel() && period >= 1 && x.numel() % period == 0 && period <= table.numel());
    launchAddBroadcast(x.data(), x.dtype(), table.data(), table.dtype(), y.data(), y.dtype(), x.numel(), period,
                       stream());
    checkLaunch("addBroadcast");
}

void CudaBackend::addBroadcastBackward(const Tensor& dy, Tensor& dtable, std::int64_t period)
{
    MANTISSA_ASSERT(period >= 1 && dy.numel() % period == 0 && period <= dtable.numel());
    launchAddBroadcastBackward(dy.data(), dy.dtype(), dtable.data(), dtable.dtype(), dy.numel(), period, dtable.numel(),
                               stream());
    checkLaunch("addBroadcastBackward");
}

void CudaBackend::swapAxes(const Tensor& x, Tensor& y, std::int64_t outer, std::int64_t rows, std::int64_t cols,
                           std::int64_t inner)
{
    MANTISSA_ASSERT(x.numel() == outer * rows * cols * inner && y.numel() == x.numel());
    launchSwapAxes(x.data(), x.dtype(), y.data(), y.dtype(), outer, rows, cols, inner, stream());
    checkLaunch("swapAxes");
}

void CudaBackend::softmaxForward(const Tensor& scores, Tensor& probs, std::int64_t queries, std::int64_t keys,
                                 bool causal, DType arithmetic)
{
    MANTISSA_ASSERT(queries >= 1 && keys >= 1);
    MANTISSA_ASSERT(scores.numel() == probs.numel() && scores.numel() % (queries * keys) == 0);
    MANTISSA_ASSERT(!causal || queries <= keys);
    launchSoftmaxForward(scores.data(), scores.dtype(), probs.data(), probs.dtype(), scores.numel() / keys, queries,
                         keys, causal, arithmetic, stream());
    checkLaunch("softmaxForward");
}

void CudaBackend::softmaxBackward(const Tensor& probs, const Tensor& dprobs, Tensor& dscores, std::int64_t keys)
{
    MANTISSA_ASSERT(keys >= 1 && probs.numel() == dprobs.numel() && dscores.numel() == probs.numel() &&
                    probs.numel() % keys == 0);
    launchSoftmaxBackward(probs.data(), probs.dtype(), dprobs.data(), dprobs.dtype(), dscores.data(), dscores.dtype(),
                          probs.numel() / keys, keys, stream());
    checkLaunch("softmaxBackward");
}

} // namespace mantissa::cuda
