#include "engine/backend/backend.h"

#include "engine/numerics/operand_quantization.h"
#include "engine/util/check.h"

#include <cmath>
#include <vector>

namespace mantissa {

AdamCorrections adamCorrections(const AdamSettings& s, std::int64_t step)
{
    return {1.0f - std::pow(s.beta1, static_cast<float>(step)), 1.0f - std::pow(s.beta2, static_cast<float>(step))};
}

void Backend::conv2dBackward(const Tensor& x, const Tensor& dy, const Tensor& w, Tensor& dw, Tensor* dbias, Tensor& dx,
                             const ConvGeometry& g, OperandScales filterScales, OperandScales dataScales,
                             const ConvKeep* kept)
{
    conv2dBackwardFilter(x, dy, dw, dbias, g, filterScales, kept);
    conv2dBackwardData(dy, w, dx, g, dataScales);
}

Tensor Backend::widenedForGemms(const Tensor& t)
{
    const DType read = gemmReadType(t.dtype());
    if (read == t.dtype())
        return t;
    Tensor wide = empty(t.shape(), read);
    cast(t, wide);
    return wide;
}

void Backend::gemmBlockScaled(Transpose, Transpose, std::int64_t, std::int64_t, std::int64_t, const Tensor&,
                              const Tensor&, const Tensor*, Tensor&, const OperandBlockScales&)
{
    throw UnsupportedError("the " + name() + " backend has no block-scaled GEMM (fp8-block); run it on the CPU");
}

namespace {

class CompletedRead final : public HostRead {
public:
    explicit CompletedRead(std::vector<float> values) : m_values(std::move(values)) {}
    const float* wait() override { return m_values.data(); }

private:
    std::vector<float> m_values;
};

} // namespace

std::unique_ptr<HostRead> Backend::readAsync(const Tensor& src)
{
    std::vector<float> values(static_cast<std::size_t>(src.numel()));
    download(src, values.data());
    return std::make_unique<CompletedRead>(std::move(values));
}

QuantizedOperand Backend::quantizeOperand(const Tensor&, const OperandQuantization&)
{
    throw UnsupportedError(name() + " has no kernels that quantise GEMM operands (the sub-16-bit recipes); "
                                    "run them on the CPU (training.device cpu)");
}

std::optional<QuantizedBlocks> Backend::quantizeOperandBlocks(const Tensor&, const OperandQuantization&, std::int64_t)
{
    return std::nullopt;
}

} // namespace mantissa
