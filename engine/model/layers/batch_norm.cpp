#include "engine/model/layers/batch_norm.h"

#include "engine/model/init.h"
#include "engine/util/check.h"

namespace mantissa {

namespace {
struct BatchNormContext final : LayerContext {
    Tensor input, savedMean, savedInvStd; // the batch statistics this forward normalised with
    CrossRankSum* acrossRanks = nullptr;  // the ranks they were summed across: backward sums there too
};
} // namespace

BatchNorm::BatchNorm(const Shape& input, float momentum, float epsilon)
    : m_channels(input[0]), m_valuesPerSample(input.numel()), m_momentum(momentum), m_epsilon(epsilon)
{}

void BatchNorm::createParameters(Backend& backend, DType masterType, std::uint64_t seed)
{
    // Normalisation parameters are not decayed: shrinking gamma towards 0 fights the very
    // scale the layer exists to learn.
    createParameter(m_gamma, name() + ".gamma", {m_channels}, backend, masterType, DType::F32,
                    {InitRule::Kind::Constant, 1.0f}, seed, false);
    createParameter(m_beta, name() + ".beta", {m_channels}, backend, masterType, DType::F32,
                    {InitRule::Kind::Constant, 0.0f}, seed, false);
    m_runningMean = backend.empty({m_channels}, DType::F32);
    backend.fill(m_runningMean, 0.0f);
    m_runningVar = backend.empty({m_channels}, DType::F32);
    backend.fill(m_runningVar, 1.0f);
}

std::vector<std::pair<std::string, Tensor*>> BatchNorm::buffers()
{
    return {{name() + ".running_mean", &m_runningMean}, {name() + ".running_var", &m_runningVar}};
}

ForwardResult BatchNorm::forward(PassState& pass, const Tensor& x)
{
    Tensor y = pass.backend.empty(x.shape(), computeType());
    BatchNormState state{m_runningMean, m_runningVar, {}, {}};
    auto context = std::make_unique<BatchNormContext>();
    if (pass.training) {
        state.savedMean = pass.backend.empty({m_channels}, DType::F32);
        state.savedInvStd = pass.backend.empty({m_channels}, DType::F32);
        context->input = x;
        context->savedMean = state.savedMean;
        context->savedInvStd = state.savedInvStd;
        state.acrossRanks = pass.batchNormAcrossRanks;
        context->acrossRanks = state.acrossRanks;
    }
    pass.backend.batchNormForward(x, m_gamma.working, m_beta.working, y, state, pass.training, m_momentum, m_epsilon);
    return {y, std::move(context)};
}

Tensor BatchNorm::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    auto& saved = static_cast<BatchNormContext&>(*context);
    MANTISSA_ASSERT(saved.savedMean.defined()); // backward follows a training forward
    const BatchNormState state{m_runningMean, m_runningVar, saved.savedMean, saved.savedInvStd, saved.acrossRanks};
    // The backend computes dx with the parameter gradients in one pass, so it is formed even
    // for the first layer (where nothing reads it).
    Tensor dx = pass.backend.empty(dy.shape(), computeType());
    pass.backend.batchNormBackward(saved.input, dy, m_gamma.working, state, dx, m_gamma.grad, m_beta.grad);
    if (!pass.inputGradNeeded)
        return {};
    return dx;
}

} // namespace mantissa
