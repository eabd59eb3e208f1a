// Ops whose CPU implementations are being written in their own files (conv.cpp,
// batch_norm.cpp, pooling.cpp, dropout.cpp). Until then they refuse clearly.
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/util/check.h"

namespace mantissa {

namespace {
[[noreturn]] void pending(const char* op)
{
    throw UnsupportedError(std::string("the CPU backend does not implement ") + op + " yet");
}
} // namespace

void CpuBackend::conv2dForward(const Tensor&, const Tensor&, const Tensor*, Tensor&, const ConvGeometry&) { pending("conv2d"); }
void CpuBackend::conv2dBackwardData(const Tensor&, const Tensor&, Tensor&, const ConvGeometry&) { pending("conv2d"); }
void CpuBackend::conv2dBackwardFilter(const Tensor&, const Tensor&, Tensor&, Tensor*, const ConvGeometry&) { pending("conv2d"); }
void CpuBackend::batchNormForward(const Tensor&, const Tensor&, const Tensor&, Tensor&, BatchNormState&, bool, float, float) { pending("batchnorm"); }
void CpuBackend::batchNormBackward(const Tensor&, const Tensor&, const Tensor&, const BatchNormState&, Tensor&, Tensor&, Tensor&) { pending("batchnorm"); }
void CpuBackend::maxPoolForward(const Tensor&, Tensor&, Tensor&, const PoolGeometry&) { pending("maxpool"); }
void CpuBackend::maxPoolBackward(const Tensor&, const Tensor&, Tensor&, const PoolGeometry&) { pending("maxpool"); }
void CpuBackend::avgPoolForward(const Tensor&, Tensor&, const PoolGeometry&) { pending("avgpool"); }
void CpuBackend::avgPoolBackward(const Tensor&, Tensor&, const PoolGeometry&) { pending("avgpool"); }
void CpuBackend::dropoutForward(const Tensor&, Tensor&, Tensor&, float, std::uint64_t, std::uint64_t) { pending("dropout"); }
void CpuBackend::dropoutBackward(const Tensor&, const Tensor&, Tensor&) { pending("dropout"); }

} // namespace mantissa
