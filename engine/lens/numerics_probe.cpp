#include "engine/lens/numerics_probe.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace mantissa {

NumericsProbe::NumericsProbe(Model& model, Backend& backend, const ProbeSettings& settings)
    : m_graph(model.graph()), m_layers(model.graph().groups()), m_backend(backend), m_settings(settings),
      m_gradientScale(settings.scaledGradients || settings.lossScale == 0 ? 1.0f : 1.0f / settings.lossScale)
{}

DType NumericsProbe::targetOf(std::size_t layer) const
{
    // A layer kept in fp32 by an override is measured against the run's type: what it
    // would lose if it were not kept.
    const DType compute = m_layers[layer].computeType;
    return compute == DType::F32 ? m_settings.runTarget : compute;
}

void NumericsProbe::add(std::size_t layer, TensorKind kind, std::string tensor, const Tensor& t, float histogramScale)
{
    TensorNumerics n;
    n.layerIndex = static_cast<int>(layer);
    n.layer = m_layers[layer].name;
    n.kind = kind;
    n.tensor = std::move(tensor);
    n.dtype = t.dtype();
    n.target = targetOf(layer);
    n.stats = m_backend.tensorStats(t, n.target, histogramScale);
    m_measured.push_back(std::move(n));
}

void NumericsProbe::afterForward(std::size_t index, const Tensor& output)
{
    add(index, TensorKind::Activation, m_layers[index].name + ".output", output, 1.0f);
}

void NumericsProbe::insideForward(std::size_t index, const std::string& tensor, const Tensor& t)
{
    // Measured against the layer's target like its output, so fp32 attention scores of a
    // mixed-fp16 run show how far they are from fp16's 65504 before they get there.
    add(index, TensorKind::Activation, tensor, t, 1.0f);
}

void NumericsProbe::afterBackward(std::size_t index, const Tensor& inputGradient)
{
    // Backward order within a layer: its parameter gradients come from the same dy as dx.
    for (Parameter* p : m_graph.groupParameters(index))
        add(index, TensorKind::WeightGrad, p->name, p->grad, m_gradientScale);
    if (inputGradient.defined())
        add(index, TensorKind::ActivationGrad, m_layers[index].name + ".input_grad", inputGradient, m_gradientScale);
}

int NumericsProbe::topLevelIndexOf(const std::string& layer) const
{
    // A nested layer is named after the block holding it: "3.transformer.attention.q".
    for (std::size_t i = 0; i < m_layers.size(); ++i) {
        const std::string& top = m_layers[i].name;
        if (layer == top ||
            (layer.size() > top.size() && layer.compare(0, top.size(), top) == 0 && layer[top.size()] == '.'))
            return static_cast<int>(i);
    }
    return -1;
}

void NumericsProbe::gemmInput(const std::string& layer, GemmPass pass, GemmOperand operand, const OperandFormat& format,
                              const QuantStats& stats)
{
    // The same GEMM run twice in a pass (a layer applied twice) adds up: one row per GEMM input.
    for (GemmInputNumerics& g : m_gemmInputs)
        if (g.layer == layer && g.pass == pass && g.operand == operand) {
            g.stats.merge(stats);
            return;
        }
    GemmInputNumerics g;
    g.layerIndex = topLevelIndexOf(layer);
    g.layer = layer;
    g.pass = pass;
    g.operand = operand;
    g.format = operandFormatLabel(format);
    g.stats = stats;
    m_gemmInputs.push_back(std::move(g));
}

void NumericsProbe::measureLossGradient(const Tensor& dlogits)
{
    const std::size_t last = m_layers.size() - 1;
    add(last, TensorKind::ActivationGrad, m_layers[last].name + ".output_grad", dlogits, m_gradientScale);
}

void NumericsProbe::measureWeights()
{
    for (std::size_t i = 0; i < m_layers.size(); ++i)
        for (Parameter* p : m_graph.groupParameters(i))
            add(i, TensorKind::Weight, p->name, p->master, 1.0f);
}

NumericsRecord NumericsProbe::record(std::int64_t step) const
{
    NumericsRecord r;
    r.step = step;
    r.lossScale = m_settings.lossScale;
    r.scaledGradients = m_settings.scaledGradients;
    r.tensors = m_measured;
    std::stable_sort(r.tensors.begin(), r.tensors.end(), [](const TensorNumerics& a, const TensorNumerics& b) {
        return a.layerIndex != b.layerIndex ? a.layerIndex < b.layerIndex : a.kind < b.kind;
    });
    // Layers in forward order (the order their forward GEMMs ran, nested ones included); within
    // one, forward, dgrad, wgrad, each with its inputs.
    std::map<std::string, std::size_t> firstSeen;
    for (const GemmInputNumerics& g : m_gemmInputs)
        firstSeen.emplace(g.layer, firstSeen.size());
    r.gemmInputs = m_gemmInputs;
    std::sort(r.gemmInputs.begin(), r.gemmInputs.end(), [&](const GemmInputNumerics& a, const GemmInputNumerics& b) {
        return std::tuple(a.layerIndex, firstSeen.at(a.layer), a.pass, a.operand) <
               std::tuple(b.layerIndex, firstSeen.at(b.layer), b.pass, b.operand);
    });
    return r;
}

std::optional<OverflowLocation> NumericsProbe::locateOverflow(bool forwardFailed) const
{
    for (const TensorNumerics& n : m_measured) {
        const bool wanted = forwardFailed ? n.kind == TensorKind::Activation
                                          : n.kind == TensorKind::ActivationGrad || n.kind == TensorKind::WeightGrad;
        if (!wanted || n.stats.nonFinite == 0)
            continue;
        OverflowLocation where;
        where.layerIndex = n.layerIndex;
        where.layer = n.layer;
        where.kind = n.kind;
        where.tensor = n.tensor;
        where.nonFiniteCount = n.stats.nonFinite;
        where.nanCount = n.stats.nan;
        where.count = n.stats.count;
        where.largestFinite = n.stats.amax;
        return where;
    }
    return std::nullopt;
}

GradientCapture::GradientCapture(Backend& backend, const std::vector<Parameter*>& parameters) : m_backend(backend)
{
    for (Parameter* p : parameters) {
        if (p->grad.dtype() == DType::F32)
            continue;
        Tensor wide = backend.empty(p->grad.shape(), DType::F32);
        m_swapped.emplace_back(p, p->grad);
        p->grad = wide;
    }
}

void GradientCapture::release()
{
    for (auto& [p, real] : m_swapped) {
        m_backend.cast(p->grad, real);
        p->grad = real;
    }
    m_swapped.clear();
}

} // namespace mantissa
