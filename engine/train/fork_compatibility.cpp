#include "engine/train/fork_compatibility.h"

#include "engine/config/config_field.h"
#include "engine/model/model_validation.h"

namespace mantissa {

namespace {

std::optional<std::string> differingField(const RunConfig& parent, const RunConfig& fork, std::string_view path)
{
    const RunField& field = runConfigField(path);
    const std::string before = field.text(parent), after = field.text(fork);
    if (before == after)
        return std::nullopt;
    return std::string(path) + " is \"" + after + "\" in the fork but \"" + before + "\" in the parent";
}

// Counted from 0, as the model editor's rows and the engine's other messages count them.
std::string layerName(const LayerReport& layer)
{
    return "layer " + std::to_string(layer.index) + " (" + std::string(enumKey(layer.type)) + ")";
}

// The per-layer shapes validateModel infers: what the weights' shapes follow from.
std::optional<std::string> differingLayers(const ModelSpec& parent, const ModelSpec& fork)
{
    const ModelReport before = validateModel(parent), after = validateModel(fork);
    if (before.layers.size() != after.layers.size())
        return "the fork has " + std::to_string(after.layers.size()) + " layers but the parent " +
               std::to_string(before.layers.size());
    for (std::size_t i = 0; i < before.layers.size(); ++i) {
        const LayerReport &b = before.layers[i], &a = after.layers[i];
        if (a.type != b.type)
            return "layer " + std::to_string(i) + " is " + std::string(enumKey(a.type)) + " in the fork but " +
                   std::string(enumKey(b.type)) + " in the parent";
        if (a.parameters != b.parameters)
            return layerName(a) + " has " + std::to_string(a.parameters) + " parameters in the fork but " +
                   std::to_string(b.parameters) + " in the parent";
        if (a.outputShape != b.outputShape)
            return layerName(a) + " outputs " + a.outputShape.toString() + " per sample in the fork but " +
                   b.outputShape.toString() + " in the parent";
    }
    return std::nullopt;
}

} // namespace

std::optional<std::string> forkShapeChange(const RunConfig& parent, const RunConfig& fork)
{
    std::optional<std::string> change;
    for (std::string_view path : {"model.onnx", "model.input", "model.classes"})
        if (!change)
            change = differingField(parent, fork, path);
    // An imported model's shapes are its file's: the same file (and input) is the same model.
    if (!change && fork.model.onnx.empty())
        change = differingLayers(parent.model, fork.model);
    if (!change)
        return std::nullopt;
    return "a fork keeps its parent's model shape (the saved weights must fit): " + *change;
}

} // namespace mantissa
