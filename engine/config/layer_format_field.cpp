// How a layer's format and model.precision_overrides are read and written (field_value_types.h).
#include "engine/config/field_value_types.h"

namespace mantissa::field_types {

std::string Traits<LayerFormat>::readJson(LayerFormat& v, const nlohmann::json& json)
{
    if (json.is_string())
        return parse(v, json.get<std::string>());
    if (!json.is_object())
        return wrongType(json);
    LayerFormat parsed;
    for (const auto& [key, value] : json.items()) {
        const std::optional<GemmOperand> role = parseLayerFormatRole(key);
        if (!role)
            return "has no role \"" + key + "\"; the roles are inputs, weights, gradients";
        if (!value.is_string())
            return "(" + key + ") " + wrongType(value);
        const std::optional<LayerPrecision> format = parseEnum<LayerPrecision>(value.get<std::string>());
        if (!format)
            return "(" + key + ") is \"" + value.get<std::string>() + "\"; expected " + enumKeyList<LayerPrecision>();
        parsed[*role] = *format;
    }
    if (std::string problem = layerFormatProblem(parsed); !problem.empty())
        return problem;
    v = parsed;
    return {};
}

nlohmann::json Traits<LayerFormat>::writeJson(const LayerFormat& v)
{
    if (v.uniform())
        return std::string(enumKey(v.inputs));
    nlohmann::json roles = nlohmann::json::object();
    for (const GemmOperand role : {GemmOperand::Activation, GemmOperand::Weight, GemmOperand::Gradient})
        if (v[role] != LayerPrecision::Auto)
            roles[std::string(layerFormatRoleKey(role))] = std::string(enumKey(v[role]));
    return roles;
}

std::string Traits<PrecisionOverrides>::text(const PrecisionOverrides& v)
{
    std::string out;
    for (const auto& [name, format] : v)
        out += (out.empty() ? "" : "; ") + name + ": " + layerFormatText(format);
    return out;
}

std::string Traits<PrecisionOverrides>::parse(PrecisionOverrides& v, std::string_view text)
{
    PrecisionOverrides parsed;
    std::size_t begin = 0;
    while (begin < text.size()) {
        const std::size_t end = std::min(text.find(';', begin), text.size());
        std::string_view entry = text.substr(begin, end - begin);
        begin = end + 1;
        while (!entry.empty() && entry.front() == ' ')
            entry.remove_prefix(1);
        if (entry.empty())
            continue;
        const std::size_t colon = entry.find(": ");
        if (colon == std::string_view::npos || colon == 0)
            return "has \"" + std::string(entry) + "\" where \"name: format\" belongs (2.linear: mxfp8)";
        const std::string name(entry.substr(0, colon));
        LayerFormat format;
        if (std::string error = parseLayerFormat(entry.substr(colon + 2), format); !error.empty())
            return "(" + name + ") " + error;
        parsed[name] = format;
    }
    v = std::move(parsed);
    return {};
}

std::string Traits<PrecisionOverrides>::readJson(PrecisionOverrides& v, const nlohmann::json& json)
{
    if (!json.is_object())
        return wrongType(json);
    PrecisionOverrides parsed;
    for (const auto& [name, value] : json.items()) {
        if (name.empty())
            return "has an entry with an empty name";
        LayerFormat format;
        if (std::string error = Traits<LayerFormat>::readJson(format, value); !error.empty())
            return "[\"" + name + "\"] " + error;
        parsed[name] = format;
    }
    v = std::move(parsed);
    return {};
}

nlohmann::json Traits<PrecisionOverrides>::writeJson(const PrecisionOverrides& v)
{
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [name, format] : v)
        out[name] = Traits<LayerFormat>::writeJson(format);
    return out;
}

} // namespace mantissa::field_types
