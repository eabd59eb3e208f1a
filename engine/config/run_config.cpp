// JSON <-> RunConfig. Parsing is strict: an unknown field is an error naming it, because a
// misspelt "momentun" that silently trains with the default is worse than a refusal.
#include "engine/config/run_config.h"

#include "engine/config/field_value_types.h"
#include "engine/util/check.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace mantissa {

using nlohmann::json;

namespace {

// Whether some field's path lies under `prefix` ("precision.recipe"): an object the parser walks
// into rather than a misspelt field.
bool isSection(std::string_view prefix)
{
    for (const RunField& field : runConfigFields())
        if (field.path.size() > prefix.size() && field.path.starts_with(prefix) && field.path[prefix.size()] == '.')
            return true;
    return false;
}

std::string joined(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

[[noreturn]] void fail(const std::string& origin, const std::string& where, const std::string& what)
{
    throw ConfigError(origin + ": " + where + " " + what);
}

LayerSpec parseLayer(const json& j, const std::string& path, const std::string& origin)
{
    if (!j.is_object())
        fail(origin, path, "expected an object");
    LayerSpec layer;
    const auto type = j.find("type");
    if (type == j.end() || type->is_null())
        fail(origin, path, "has no \"type\"");
    if (!type->is_string())
        fail(origin, path + ".type", std::string("has the wrong type (") + type->type_name() + ")");
    const std::string kind = type->get<std::string>();
    if (!parseEnum<LayerKind>(kind))
        throw ConfigError(origin + ": " + unknownEnumMessage<LayerKind>(path + ".type", kind));
    layer.type = *parseEnum<LayerKind>(kind);
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string where = path + "." + it.key();
        if (it.key() == "type" || it->is_null())
            continue;
        if (it.key() == "layers") {
            if (!it->is_array())
                fail(origin, where, "must be an array of layers");
            for (std::size_t i = 0; i < it->size(); ++i)
                layer.body.push_back(parseLayer((*it)[i], where + "[" + std::to_string(i) + "]", origin));
        } else if (const LayerSpecField* field = findLayerSpecField(it.key())) {
            readJsonField(*field, layer, *it, origin + ": " + where);
        } else {
            fail(origin, where, "is not a known field");
        }
    }
    return layer;
}

json layerToJson(const LayerSpec& layer)
{
    json j;
    j["type"] = enumKey(layer.type);
    for (const LayerSpecField& field : layerSpecFields())
        if (field.isWritten(layer))
            j[std::string(field.path)] = jsonOfField(field, layer);
    if (layer.type == LayerKind::Residual) {
        j["layers"] = json::array();
        for (const LayerSpec& inner : layer.body)
            j["layers"].push_back(layerToJson(inner));
    }
    return j;
}

// Reads the object at `path` ("" for the root): each key is a field of the table, an object of
// fields, or model.layers; anything else is a misspelling, refused with its path.
void parseObject(const json& object, const std::string& path, RunConfig& config, const std::string& origin)
{
    if (!object.is_object())
        fail(origin, path, "expected an object");
    for (auto it = object.begin(); it != object.end(); ++it) {
        const std::string where = joined(path, it.key());
        if (it->is_null())
            continue;
        if (where == "model.layers") {
            if (!it->is_array())
                fail(origin, where, "must be an array");
            for (std::size_t i = 0; i < it->size(); ++i)
                config.model.layers.push_back(parseLayer((*it)[i], where + "[" + std::to_string(i) + "]", origin));
        } else if (const RunField* field = findRunConfigField(where)) {
            readJsonField(*field, config, *it, origin + ": " + where);
        } else if (isSection(where)) {
            parseObject(*it, where, config, origin);
        } else {
            fail(origin, where, "is not a known field");
        }
    }
}

void validateLayers(const std::vector<LayerSpec>& layers, const std::string& path, const std::string& origin)
{
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const std::string where = path + "[" + std::to_string(i) + "]";
        for (const LayerSpecField& field : layerSpecFields())
            if (const std::string problem = field.problem(layers[i]); !problem.empty())
                throw ConfigError(origin + ": " + where + "." + std::string(field.path) + " " + problem);
        validateLayers(layers[i].body, where + ".layers", origin);
    }
}

} // namespace

RunConfig parseRunConfig(const std::string& text, const std::string& origin)
{
    json root;
    try {
        root = json::parse(text);
    } catch (const json::parse_error& e) {
        throw ConfigError(origin + ": not valid JSON: " + e.what());
    }
    RunConfig config;
    // The one required field is named before any other fault: a file without a model is not a
    // run config at all.
    if (root.is_object() && (!root.contains("model") || root["model"].is_null()))
        fail(origin, "model", "is missing");
    parseObject(root, "", config, origin);
    validateRunConfig(config, origin);
    return config;
}

void validateRunConfig(const RunConfig& c, const std::string& origin)
{
    for (const RunField& field : runConfigFields())
        if (const std::string problem = field.problem(c); !problem.empty())
            throw ConfigError(origin + ": " + std::string(field.path) + " " + problem);
    validateLayers(c.model.layers, "model.layers", origin);
    // The rules that tie fields together; each field's own range is its row's.
    if (c.training.epochs <= 0 && c.training.maxSteps <= 0)
        throw ConfigError(origin + ": training.epochs must be positive unless training.max_steps is set (got " +
                          std::to_string(c.training.epochs) + ")");
}

RunConfig loadRunConfigFile(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
        throw ConfigError(path + ": cannot open the config file (does it exist and is it readable?)");
    std::stringstream buffer;
    buffer << in.rdbuf();
    return parseRunConfig(buffer.str(), path);
}

std::string runConfigToJson(const RunConfig& c, int indent)
{
    json j;
    for (const RunField& field : runConfigFields()) {
        if (!field.isWritten(c))
            continue;
        // "precision.loss_scale.type" -> j["precision"]["loss_scale"]["type"]
        json* target = &j;
        std::string_view path = field.path;
        for (std::size_t dot = path.find('.'); dot != std::string_view::npos; dot = path.find('.')) {
            target = &(*target)[std::string(path.substr(0, dot))];
            path.remove_prefix(dot + 1);
        }
        (*target)[std::string(path)] = jsonOfField(field, c);
    }
    j["model"]["layers"] = json::array();
    for (const LayerSpec& layer : c.model.layers)
        j["model"]["layers"].push_back(layerToJson(layer));
    return j.dump(indent);
}

namespace {

bool quantises(const LayerFormat& format)
{
    for (const GemmOperand role : {GemmOperand::Activation, GemmOperand::Weight, GemmOperand::Gradient}) {
        const LayerPrecision p = format[role];
        if (p != LayerPrecision::Auto && p != LayerPrecision::Fp32 && p != LayerPrecision::Fp16 &&
            p != LayerPrecision::Bf16)
            return true;
    }
    return false;
}

bool layersQuantise(const std::vector<LayerSpec>& layers)
{
    return std::any_of(layers.begin(), layers.end(),
                       [](const LayerSpec& l) { return quantises(l.precision) || layersQuantise(l.body); });
}

} // namespace

bool runQuantisesGemms(const RunConfig& config)
{
    if (PrecisionPolicy(config.precision).recipe() != GemmRecipe::None || layersQuantise(config.model.layers))
        return true;
    return std::any_of(config.model.precisionOverrides.begin(), config.model.precisionOverrides.end(),
                       [](const auto& entry) { return quantises(entry.second); });
}

} // namespace mantissa
