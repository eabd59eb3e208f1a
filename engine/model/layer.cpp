#include "engine/model/layer.h"

namespace mantissa {

void Layer::applyPrecision(const PrecisionPolicy& policy, const LayerDTypes& dtypes)
{
    setComputeType(dtypes.compute());
    m_gemmInputs.setRecipe(dtypes.gemmRecipe, policy.recipeOptions());
    for (const Sublayer& s : sublayers())
        s.layer->applyPrecision(policy, dtypes);
}

void Layer::createParameters(Backend& backend, DType masterType, std::uint64_t seed)
{
    for (const Sublayer& s : sublayers())
        s.layer->createParameters(backend, masterType, seed);
}

void Layer::setName(std::string name)
{
    m_name = std::move(name);
    for (const Sublayer& s : sublayers())
        s.layer->setName(s.role.empty() ? m_name : m_name + "." + s.role);
}

} // namespace mantissa
