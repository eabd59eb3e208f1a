#include "engine/model/layers/residual.h"

#include "engine/util/check.h"

namespace mantissa {

namespace {
struct ResidualContext final : LayerContext {
    std::vector<std::unique_ptr<LayerContext>> body;
    std::unique_ptr<LayerContext> projection;
};

// x in `type`, converted when the neighbouring layer computes in another one.
Tensor inType(Backend& backend, const Tensor& x, DType type)
{
    if (x.dtype() == type)
        return x;
    Tensor converted = backend.empty(x.shape(), type);
    backend.cast(x, converted);
    return converted;
}
} // namespace

Residual::Residual(std::vector<LayerPtr> body, std::vector<LayerPrecision> overrides, LayerPtr projection, Shape output)
    : m_body(std::move(body)), m_overrides(std::move(overrides)), m_projection(std::move(projection)),
      m_output(std::move(output))
{
    MANTISSA_ASSERT(!m_body.empty() && m_body.size() == m_overrides.size());
}

Shape Residual::outputShape(const Shape& input) const
{
    std::vector<std::int64_t> dims{input[0]};
    dims.insert(dims.end(), m_output.dims().begin(), m_output.dims().end());
    return Shape(dims);
}

std::vector<Sublayer> Residual::sublayers()
{
    std::vector<Sublayer> all;
    for (std::size_t i = 0; i < m_body.size(); ++i)
        all.push_back({m_body[i].get(), std::to_string(i) + "." + std::string(enumKey(m_body[i]->kind()))});
    if (m_projection)
        all.push_back({m_projection.get(), "shortcut"});
    return all;
}

void Residual::applyPrecision(const PrecisionPolicy& policy, const LayerDTypes& dtypes)
{
    setComputeType(dtypes.compute());
    m_dtypes = dtypes;
    m_bodyDTypes.clear();
    for (std::size_t i = 0; i < m_body.size(); ++i) {
        m_bodyDTypes.push_back(policy.layer(m_overrides[i], dtypes));
        m_body[i]->applyPrecision(policy, m_bodyDTypes.back());
    }
    if (m_projection)
        m_projection->applyPrecision(policy, dtypes);
}

void Residual::createParameters(Backend& backend, DType masterType, std::uint64_t seed)
{
    // Each body layer keeps its masters where the policy says, which in a pure low-precision
    // run is the layer's own (possibly overridden) weight dtype.
    MANTISSA_ASSERT(m_bodyDTypes.size() == m_body.size() && "applyPrecision comes before createParameters");
    MANTISSA_ASSERT(masterType == m_dtypes.master);
    for (std::size_t i = 0; i < m_body.size(); ++i)
        m_body[i]->createParameters(backend, m_bodyDTypes[i].master, seed);
    if (m_projection)
        m_projection->createParameters(backend, masterType, seed);
}

std::vector<Parameter*> Residual::parameters()
{
    std::vector<Parameter*> all;
    if (m_projection)
        all = m_projection->parameters();
    for (auto it = m_body.rbegin(); it != m_body.rend(); ++it) {
        const auto params = (*it)->parameters();
        all.insert(all.end(), params.begin(), params.end());
    }
    return all;
}

std::vector<std::pair<std::string, Tensor*>> Residual::buffers()
{
    std::vector<std::pair<std::string, Tensor*>> all;
    for (auto& layer : m_body)
        for (auto& b : layer->buffers())
            all.push_back(b);
    return all;
}

ForwardResult Residual::forward(PassState& pass, const Tensor& x)
{
    auto context = std::make_unique<ResidualContext>();
    Tensor h = x;
    for (auto& layer : m_body) {
        ForwardResult out = layer->forward(pass, inType(pass.backend, h, layer->computeType()));
        h = out.output;
        context->body.push_back(std::move(out.context));
    }
    Tensor shortcut = x;
    if (m_projection) {
        ForwardResult out = m_projection->forward(pass, x);
        shortcut = out.output;
        context->projection = std::move(out.context);
    }
    // add() widens each operand, so a body ending in another dtype needs no cast.
    Tensor y = pass.backend.empty(h.shape(), computeType());
    pass.backend.add(h, shortcut, y);
    return {y, std::move(context)};
}

Tensor Residual::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    auto& saved = static_cast<ResidualContext&>(*context);
    const bool inputGradNeeded = pass.inputGradNeeded;
    Tensor dShortcut = dy;
    if (m_projection)
        dShortcut = m_projection->backward(pass, dy, saved.projection.get());
    Tensor gradient = dy;
    for (std::size_t i = m_body.size(); i-- > 0;) {
        Layer& layer = *m_body[i];
        // Inside the block every layer but the first feeds another; the first one's dx is
        // needed only when the block's is.
        pass.inputGradNeeded = i > 0 || inputGradNeeded;
        gradient = layer.backward(pass, inType(pass.backend, gradient, layer.computeType()), saved.body[i].get());
        saved.body[i].reset();
    }
    pass.inputGradNeeded = inputGradNeeded;
    if (!inputGradNeeded)
        return {};
    Tensor dx = pass.backend.empty(gradient.shape(), computeType());
    pass.backend.add(gradient, dShortcut, dx);
    return dx;
}

std::int64_t Residual::parameterCount() const
{
    std::int64_t count = m_projection ? m_projection->parameterCount() : 0;
    for (const auto& layer : m_body)
        count += layer->parameterCount();
    return count;
}

std::int64_t Residual::flopsPerSample() const
{
    std::int64_t flops = m_output.numel(); // the addition
    if (m_projection)
        flops += m_projection->flopsPerSample();
    for (const auto& layer : m_body)
        flops += layer->flopsPerSample();
    return flops;
}

std::vector<const Layer*> Residual::parts() const
{
    std::vector<const Layer*> parts;
    for (const LayerPtr& layer : m_body)
        parts.push_back(layer.get());
    if (m_projection)
        parts.push_back(m_projection.get());
    return parts;
}

} // namespace mantissa
