#include "engine/model/model_validation.h"

#include "engine/model/layer_factory.h"
#include "engine/util/check.h"

namespace mantissa {

namespace {
std::string prefix(int index, LayerKind type)
{
    return "layer " + std::to_string(index) + " (" + std::string(enumKey(type)) + "): ";
}

// A linear with "tied": true computes with the table of the first token embedding before it,
// so it must map that table's width to its vocabulary, with nothing after the product.
void checkTiedHead(const LayerSpec& spec, const Shape& in, const LayerSpec* embedding)
{
    if (spec.type != LayerKind::Linear || !spec.tied)
        return;
    if (!embedding)
        throw ConfigError("is tied but no token_embedding comes before it; \"tied\" shares that layer's table");
    if (spec.activation)
        throw ConfigError("is tied to the token embedding and so takes no activation; the logits are the product");
    if (spec.units != embedding->vocabulary || in.dims().back() != embedding->units)
        throw ConfigError("is tied to a token embedding of " + std::to_string(embedding->vocabulary) + " x " +
                          std::to_string(embedding->units) + " but maps " + std::to_string(in.dims().back()) +
                          " features to " + std::to_string(spec.units) + "; set units to the vocabulary, " +
                          std::to_string(embedding->vocabulary));
    if (spec.precision != embedding->precision)
        throw ConfigError("is tied to the token embedding, so both must compute in one dtype; give them the same "
                          "\"precision\"");
}
} // namespace

ModelReport validateModel(const ModelSpec& spec)
{
    ModelReport report;
    auto fail = [&report](int index, const std::string& message) {
        if (report.errorLayer < 0 && report.error.empty()) {
            report.errorLayer = index;
            report.error = message;
        }
    };
    for (auto d : spec.input) {
        if (d <= 0) {
            fail(-1, "model.input: every extent must be positive, got " + Shape(spec.input).toString());
            return report;
        }
    }
    // A model file (model.onnx) has no layer list to infer: the file is checked where it is
    // compiled (model_file.h), with the ONNX library this function does without.
    if (!spec.onnx.empty()) {
        if (!spec.layers.empty())
            fail(-1, "model.onnx names " + spec.onnx + " and model.layers lists " + std::to_string(spec.layers.size()) +
                         " layers; a model is one or the other");
        return report;
    }
    if (spec.input.empty() || spec.input.size() > 3)
        fail(-1, "model.input: expected [features] or [channels, height, width], got " + Shape(spec.input).toString());
    if (spec.layers.empty())
        fail(-1, "model.layers: the model has no layers");
    if (!report.valid())
        return report;

    Shape shape(spec.input);
    const LayerSpec* embedding = nullptr; // the first token embedding, which a tied head shares
    for (std::size_t i = 0; i < spec.layers.size(); ++i) {
        const LayerSpec& layerSpec = spec.layers[i];
        LayerReport layer;
        layer.index = static_cast<int>(i);
        layer.type = layerSpec.type;
        layer.inputShape = shape;
        if (report.valid()) {
            try {
                checkTiedHead(layerSpec, shape, embedding);
                LayerPtr built = createLayer(layerSpec, shape);
                // Named as the model names it, so that a block's extents carry its GEMMs' names.
                built->setName(std::to_string(i) + "." + std::string(enumKey(built->kind())));
                if (layerSpec.type == LayerKind::TokenEmbedding && !embedding)
                    embedding = &layerSpec;
                shape = perSampleOutput(*built, shape);
                layer.outputShape = shape;
                layer.parameters = built->parameterCount();
                layer.flopsPerSample = built->flopsPerSample();
                layer.tensorCoreExtents = built->tensorCoreExtents();
                for (const Layer* part : built->parts())
                    layer.parts.push_back({part->kind(), part->parameterCount(), part->flopsPerSample(), part->name()});
                report.totalParameters += layer.parameters;
                report.totalFlopsPerSample += layer.flopsPerSample;
                report.activationValuesPerSample += shape.numel();
            } catch (const ConfigError& e) {
                layer.error = e.what();
                fail(layer.index, prefix(layer.index, layer.type) + e.what());
            }
        } else {
            layer.inputShape = Shape();
        }
        report.layers.push_back(std::move(layer));
    }
    // A classifier ends in [classes]; a sequence model in [tokens, classes], one prediction
    // per token (token-level cross-entropy, engine/model/sequence_loss.h).
    const bool endsInClasses = (shape.rank() == 1 || shape.rank() == 2) && shape.dims().back() == spec.classes;
    if (report.valid() && !endsInClasses) {
        const int last = static_cast<int>(spec.layers.size()) - 1;
        const std::string message = "produces " + shape.toString() + " but the model has " +
                                    std::to_string(spec.classes) + " classes; the last layer should be a linear with " +
                                    std::to_string(spec.classes) + " units";
        report.layers.back().error = message;
        fail(last, prefix(last, spec.layers.back().type) + message);
    }
    return report;
}

} // namespace mantissa
