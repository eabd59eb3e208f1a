#include "engine/lens/shadow_model.h"

#include "engine/model/graph/cast_op.h"
#include "engine/model/task_loss.h"
#include "engine/util/check.h"

#include <functional>
#include <set>

namespace mantissa {

namespace {

// The spec with every layer computing in the run's mode: in an fp32 model, fp32.
ModelSpec withoutOverrides(ModelSpec spec)
{
    const std::function<void(std::vector<LayerSpec>&)> clear = [&](std::vector<LayerSpec>& layers) {
        for (LayerSpec& layer : layers) {
            layer.precision = LayerPrecision::Auto;
            clear(layer.body);
        }
    };
    clear(spec.layers);
    return spec;
}

// `t` into `host`, whose memory the same tensor of the previous shadowed step leaves sized.
void downloadInto(Backend& backend, const Tensor& t, std::vector<float>& host)
{
    host.resize(static_cast<std::size_t>(t.shape().numel()));
    backend.download(t, host.data());
}

// Records the fp32 pass's tensors by node key.
class ReferenceCapture final : public NodeTap {
public:
    ReferenceCapture(const Graph& graph, Backend& backend, ShadowReference& reference)
        : m_backend(backend), m_reference(reference), m_keys(shadowNodeKeys(graph))
    {}
    void afterNodeForward(std::size_t node, const Tensor& output) override
    {
        if (!m_keys[node].empty())
            downloadInto(m_backend, output, m_reference.outputs[m_keys[node]]);
    }
    void afterNodeBackward(std::size_t node, const Tensor& inputGradient) override
    {
        if (!m_keys[node].empty() && inputGradient.defined())
            downloadInto(m_backend, inputGradient, m_reference.inputGradients[m_keys[node]]);
    }

private:
    Backend& m_backend;
    ShadowReference& m_reference;
    std::vector<std::string> m_keys;
};

} // namespace

std::vector<std::string> shadowNodeKeys(const Graph& graph)
{
    std::vector<std::string> keys;
    std::map<std::string, int> seen;
    for (const GraphNode& node : graph.nodes()) {
        if (dynamic_cast<const CastOp*>(node.op.get())) {
            keys.emplace_back();
            continue;
        }
        const std::string name = node.op->name();
        const int n = ++seen[name];
        keys.push_back(n == 1 ? name : name + "#" + std::to_string(n));
    }
    return keys;
}

ShadowModel::ShadowModel(const ModelSpec& spec, Backend& backend, std::uint64_t seed)
    : m_backend(backend), m_model(withoutOverrides(spec), PrecisionMode::Fp32, backend, seed)
{}

ShadowReference& ShadowModel::measure(Model& run, const Tensor& x, const Tensor& y, DataTask task, std::uint64_t seed,
                                      std::uint64_t step)
{
    // The run's master weights (16-bit ones in a pure 16-bit run, widened) and buffers.
    const std::vector<Parameter*>& mine = m_model.parametersInBackwardOrder();
    const std::vector<Parameter*>& theirs = run.parametersInBackwardOrder();
    MANTISSA_ASSERT(mine.size() == theirs.size());
    for (std::size_t i = 0; i < mine.size(); ++i) {
        MANTISSA_ASSERT(mine[i]->name == theirs[i]->name);
        m_backend.cast(theirs[i]->master, mine[i]->master);
    }
    auto myBuffers = m_model.buffers();
    auto theirBuffers = run.buffers();
    MANTISSA_ASSERT(myBuffers.size() == theirBuffers.size());
    for (std::size_t i = 0; i < myBuffers.size(); ++i)
        m_backend.cast(*theirBuffers[i].second, *myBuffers[i].second);

    ReferenceCapture capture(m_model.graph(), m_backend, m_reference);
    PassState pass{m_backend, true, seed, step};
    pass.nodeTap = &capture;
    ModelForward forward = m_model.forward(pass, x);
    Tensor dlogits = m_backend.empty(forward.logits.shape(), forward.logits.dtype());
    taskLoss(m_backend, task, forward.logits, y, 1.0f, &dlogits);
    m_model.backward(pass, dlogits, forward);
    for (Parameter* p : mine)
        downloadInto(m_backend, p->grad, m_reference.weightGradients[p->name]);
    return m_reference;
}

ShadowComparison::ShadowComparison(const Model& run, Backend& backend, ShadowReference& reference, float lossScale)
    : m_graph(run.graph()), m_backend(backend), m_reference(reference), m_lossScale(lossScale),
      m_keys(shadowNodeKeys(run.graph())), m_byNode(run.graph().nodes().size())
{}

void ShadowComparison::compare(std::size_t node, ShadowTensor kind, const std::string& tensor, const Tensor& t,
                               const std::map<std::string, std::vector<float>>& reference, const std::string& key,
                               double unscale)
{
    const auto found = reference.find(key);
    if (found == reference.end())
        return;
    std::vector<float>& host = m_reference.compared;
    downloadInto(m_backend, t, host);
    MANTISSA_ASSERT(host.size() == found->second.size());
    ShadowError e;
    e.layer = m_keys[node];
    e.kind = kind;
    e.tensor = tensor;
    e.energies = measureError(host, found->second, unscale);
    m_byNode[node].push_back(std::move(e));
}

void ShadowComparison::afterNodeForward(std::size_t node, const Tensor& output)
{
    if (!m_keys[node].empty())
        compare(node, ShadowTensor::Output, m_keys[node], output, m_reference.outputs, m_keys[node], 1.0);
}

void ShadowComparison::afterNodeBackward(std::size_t node, const Tensor& inputGradient)
{
    if (!m_keys[node].empty() && inputGradient.defined())
        compare(node, ShadowTensor::InputGrad, m_keys[node], inputGradient, m_reference.inputGradients, m_keys[node],
                1.0 / m_lossScale);
}

void ShadowComparison::compareWeightGradients()
{
    // A parameter two nodes read (a tied embedding table) has one gradient: one row, at its first node.
    std::set<const Parameter*> seen;
    const std::vector<GraphNode>& nodes = m_graph.nodes();
    for (std::size_t k = 0; k < nodes.size(); ++k)
        for (Parameter* p : nodes[k].op->parameters())
            if (seen.insert(p).second)
                compare(k, ShadowTensor::WeightGrad, p->name, p->grad, m_reference.weightGradients, p->name,
                        1.0 / m_lossScale);
}

ShadowRecord ShadowComparison::record(std::int64_t step) const
{
    ShadowRecord r;
    r.step = step;
    r.lossScale = m_lossScale;
    for (const std::vector<ShadowError>& node : m_byNode)
        r.errors.insert(r.errors.end(), node.begin(), node.end());
    return r;
}

} // namespace mantissa
