#include "engine/model/layer.h"

namespace mantissa {

void Layer::applyPrecision(const PrecisionPolicy& policy, const LayerDTypes& dtypes)
{
    setComputeType(dtypes.compute());
    m_formatStated = dtypes.stated;
    m_gemmInputs.setRecipes(dtypes.gemmRecipes, policy.recipeOptions());
    // Parts compiled into graph nodes of their own may compute in another type (the graph casts
    // between nodes); layers run inside this one's node share its compute type.
    const std::optional<DType> holder = partsAreGraphNodes() ? std::nullopt : std::optional(dtypes.compute());
    for (const Sublayer& s : sublayers())
        s.layer->applyPrecision(policy, policy.layerNamed(s.layer->name(), dtypes, holder));
}

std::string Layer::formatLabel() const
{
    LayerDTypes dtypes;
    dtypes.weight = dtypes.activation = dtypes.gradient = computeType();
    dtypes.gemmRecipes = gemmRecipes();
    return layerFormatLabel(dtypes);
}

void Layer::createParameters(Backend& backend, DType masterType, std::uint64_t seed)
{
    for (const Sublayer& s : sublayers())
        s.layer->createParameters(backend, masterType, seed);
}

namespace {

void collectExtents(const Layer& holder, const std::string& holderName,
                    std::vector<std::pair<std::string, std::int64_t>>& out)
{
    // sublayers() only lists the holder's members; nothing here changes them.
    for (const Sublayer& s : const_cast<Layer&>(holder).sublayers()) {
        if (!s.layer->sublayers().empty()) {
            collectExtents(*s.layer, holderName, out);
            continue;
        }
        const std::string prefix = s.layer->name() == holderName ? "" : s.layer->name() + ": ";
        for (const auto& [what, extent] : s.layer->tensorCoreExtents())
            out.emplace_back(prefix + what, extent);
    }
}

} // namespace

std::vector<std::pair<std::string, std::int64_t>> Layer::tensorCoreExtents() const
{
    std::vector<std::pair<std::string, std::int64_t>> all;
    collectExtents(*this, m_name, all);
    return all;
}

void Layer::setName(std::string name)
{
    m_name = std::move(name);
    for (const Sublayer& s : sublayers())
        s.layer->setName(s.role.empty() ? m_name : m_name + "." + s.role);
}

} // namespace mantissa
