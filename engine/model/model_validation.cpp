#include "engine/model/model_validation.h"

#include "engine/model/layer_factory.h"
#include "engine/util/check.h"

namespace mantissa {

namespace {
std::string prefix(int index, LayerKind type)
{
    return "layer " + std::to_string(index) + " (" + std::string(enumKey(type)) + "): ";
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
    if (spec.input.empty() || spec.input.size() > 3)
        fail(-1, "model.input: expected [features] or [channels, height, width], got " + Shape(spec.input).toString());
    if (spec.layers.empty())
        fail(-1, "model.layers: the model has no layers");
    if (!report.valid())
        return report;

    Shape shape(spec.input);
    for (std::size_t i = 0; i < spec.layers.size(); ++i) {
        const LayerSpec& layerSpec = spec.layers[i];
        LayerReport layer;
        layer.index = static_cast<int>(i);
        layer.type = layerSpec.type;
        layer.inputShape = shape;
        if (report.valid()) {
            try {
                LayerPtr built = createLayer(layerSpec, shape);
                shape = perSampleOutput(*built, shape);
                layer.outputShape = shape;
                layer.parameters = built->parameterCount();
                layer.flopsPerSample = built->flopsPerSample();
                layer.tensorCoreExtents = built->tensorCoreExtents();
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
    if (report.valid() && (shape.rank() != 1 || shape[0] != spec.classes)) {
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
