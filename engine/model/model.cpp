#include "engine/model/model.h"

#include "engine/model/layer_factory.h"
#include "engine/model/layers/linear.h"
#include "engine/model/layers/token_embedding.h"
#include "engine/model/model_validation.h"
#include "engine/util/check.h"

namespace mantissa {

Model::Model(const ModelSpec& spec, PrecisionMode mode, Backend& backend, std::uint64_t seed)
    : m_input(spec.input), m_classes(spec.classes)
{
    const ModelReport report = validateModel(spec);
    if (!report.valid())
        throw ConfigError(report.error);
    const PrecisionPolicy policy(mode);
    Shape shape(spec.input);
    TokenEmbedding* embedding = nullptr; // the first one, which a tied head shares (validated)
    for (std::size_t i = 0; i < spec.layers.size(); ++i) {
        LayerPtr layer = createLayer(spec.layers[i], shape);
        shape = perSampleOutput(*layer, shape);
        layer->setName(std::to_string(i) + "." + std::string(enumKey(layer->kind())));
        if (auto* e = dynamic_cast<TokenEmbedding*>(layer.get()); e && !embedding)
            embedding = e;
        if (spec.layers[i].tied) {
            // The validator checked the extents, the dtype and that no activation wraps it.
            auto* head = dynamic_cast<Linear*>(layer.get());
            MANTISSA_ASSERT(head && embedding);
            head->tieWeight(embedding->table());
            embedding->setTableShared(true);
        }
        const LayerDTypes dtypes = policy.layer(spec.layers[i].precision);
        layer->applyPrecision(policy, dtypes);
        layer->createParameters(backend, dtypes.master, seed);
        m_layers.push_back(std::move(layer));
    }
    m_labelsPerSample = shape.numel() / m_classes;
    for (auto it = m_layers.rbegin(); it != m_layers.rend(); ++it) {
        auto params = (*it)->parameters();
        // Within a layer, backward writes the weight gradient before the bias gradient.
        m_backwardOrder.insert(m_backwardOrder.end(), params.begin(), params.end());
    }
}

ModelForward Model::forward(PassState& pass, const Tensor& x)
{
    ModelForward result;
    result.contexts.reserve(m_layers.size());
    Tensor activation = x;
    for (std::size_t i = 0; i < m_layers.size(); ++i) {
        Layer* layer = m_layers[i].get();
        if (activation.dtype() != layer->inputType()) {
            Tensor converted = pass.backend.empty(activation.shape(), layer->inputType());
            pass.backend.cast(activation, converted);
            activation = converted;
        }
        pass.layerIndex = i;
        ForwardResult out = layer->forward(pass, activation);
        activation = out.output;
        result.contexts.push_back(std::move(out.context));
        if (pass.tap)
            pass.tap->afterForward(i, activation);
    }
    result.logits = activation;
    return result;
}

void Model::backward(PassState& pass, const Tensor& dlogits, ModelForward& forward)
{
    Tensor gradient = dlogits;
    for (std::size_t i = m_layers.size(); i-- > 0;) {
        Layer& layer = *m_layers[i];
        if (gradient.dtype() != layer.computeType()) {
            Tensor converted = pass.backend.empty(gradient.shape(), layer.computeType());
            pass.backend.cast(gradient, converted);
            gradient = converted;
        }
        pass.inputGradNeeded = i > 0;
        gradient = layer.backward(pass, gradient, forward.contexts[i].get());
        forward.contexts[i].reset(); // free saved activations as early as possible
        if (pass.tap)
            pass.tap->afterBackward(i, gradient);
    }
    pass.inputGradNeeded = true;
}

std::vector<std::pair<std::string, Tensor*>> Model::buffers()
{
    std::vector<std::pair<std::string, Tensor*>> all;
    for (auto& layer : m_layers)
        for (auto& b : layer->buffers())
            all.push_back(b);
    return all;
}

std::vector<Layer*> Model::layers()
{
    std::vector<Layer*> out;
    for (auto& l : m_layers)
        out.push_back(l.get());
    return out;
}

} // namespace mantissa
