#include "engine/model/layers/residual.h"

#include "engine/model/graph/add_op.h"
#include "engine/model/graph/cast_op.h"
#include "engine/util/check.h"

namespace mantissa {

Residual::Residual(std::vector<LayerPtr> body, std::vector<LayerFormat> overrides, LayerPtr projection, Shape input,
                   Shape output)
    : m_body(std::move(body)), m_overrides(std::move(overrides)), m_projection(std::move(projection)),
      m_input(std::move(input)), m_output(std::move(output))
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
    m_graph.reset();
    m_bodyDTypes.clear();
    for (std::size_t i = 0; i < m_body.size(); ++i) {
        m_bodyDTypes.push_back(policy.layerNamed(m_body[i]->name(), policy.layer(m_overrides[i], dtypes)));
        m_body[i]->applyPrecision(policy, m_bodyDTypes.back());
    }
    if (m_projection)
        m_projection->applyPrecision(policy, policy.layerNamed(m_projection->name(), dtypes));
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

std::size_t Residual::appendTo(Graph& graph, std::size_t input)
{
    // The block's layers and its skip path read x in the block's type, as its addition writes y.
    const ValueId x = graph.addNode1(std::make_unique<CastOp>(name() + ".input", computeType()), {input});
    ValueId h = x;
    for (LayerPtr& layer : m_body)
        h = layer->appendTo(graph, h);
    const ValueId shortcut = m_projection ? m_projection->appendTo(graph, x) : x;
    return graph.addNode1(std::make_unique<AddOp>(name(), computeType()), {h, shortcut});
}

ForwardResult Residual::forward(PassState& pass, const Tensor& x) { return m_graph.forward(*this, m_input, pass, x); }

Tensor Residual::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    return m_graph.backward(pass, dy, context);
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
