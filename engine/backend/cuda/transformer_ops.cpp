// The transformer ops of backend.h (normalisation over rows, embeddings, attention) are not on
// the CUDA backend yet. Each says so with an UnsupportedError rather than computing something
// unchecked, and CudaBackend::supports reports their op families as unsupported, so a run or a
// test learns it before the first step. Kernels, with parity tests against the CPU oracle,
// are the follow-up (issue 18).
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/util/check.h"

#include <string>

namespace mantissa::cuda {

namespace {

[[noreturn]] void notYet(const char* op)
{
    throw UnsupportedError(std::string("attention is not on the CUDA backend yet (") + op +
                           "; transformer layers need the CPU backend for now: set training.device to \"cpu\")");
}

} // namespace

bool transformerOpFamily(Op op) { return op == Op::Normalization || op == Op::Embedding || op == Op::Attention; }

void CudaBackend::rowNormForward(RowNormKind, const Tensor&, const Tensor&, const Tensor*, Tensor&, Tensor&, Tensor&,
                                 float, DType)
{
    notYet("rowNormForward");
}

void CudaBackend::rowNormBackward(RowNormKind, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                  const Tensor&, Tensor&, Tensor&, Tensor*)
{
    notYet("rowNormBackward");
}

void CudaBackend::embeddingForward(const Tensor&, const Tensor&, Tensor&) { notYet("embeddingForward"); }

void CudaBackend::embeddingBackward(const Tensor&, const Tensor&, Tensor&, bool) { notYet("embeddingBackward"); }

void CudaBackend::addBroadcast(const Tensor&, const Tensor&, Tensor&, std::int64_t) { notYet("addBroadcast"); }

void CudaBackend::addBroadcastBackward(const Tensor&, Tensor&, std::int64_t) { notYet("addBroadcastBackward"); }

void CudaBackend::gemmStridedBatched(Transpose, Transpose, std::int64_t, std::int64_t, std::int64_t, float,
                                     const Tensor&, std::int64_t, const Tensor&, std::int64_t, float, Tensor&,
                                     std::int64_t, std::int64_t)
{
    notYet("gemmStridedBatched");
}

void CudaBackend::swapAxes(const Tensor&, Tensor&, std::int64_t, std::int64_t, std::int64_t, std::int64_t)
{
    notYet("swapAxes");
}

void CudaBackend::softmaxForward(const Tensor&, Tensor&, std::int64_t, std::int64_t, bool, DType)
{
    notYet("softmaxForward");
}

void CudaBackend::softmaxBackward(const Tensor&, const Tensor&, Tensor&, std::int64_t) { notYet("softmaxBackward"); }

} // namespace mantissa::cuda
