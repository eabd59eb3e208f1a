#include "engine/advisor/precision_probe.h"

#include "engine/advisor/advisor_objective.h"
#include "engine/model/gemm_coverage.h"
#include "engine/model/task_loss.h"
#include "engine/numerics/block_quantizer.h"
#include "engine/numerics/conversions.h"
#include "engine/precision/precision_policy.h"
#include "engine/train/checkpoint_weights.h"
#include "engine/util/check.h"

#include <algorithm>
#include <cmath>

namespace mantissa {

namespace {

// The score's gradients come from up to this many micro-batches of at least this many samples.
constexpr std::int64_t kScoreMicroBatches = 16;
constexpr std::int64_t kScoreMicroBatchSamples = 8;

// The first `count` samples of `data`.
Dataset firstSamples(const Dataset& data, std::int64_t count)
{
    Dataset out;
    out.sampleShape = data.sampleShape;
    out.labelShape = data.labelShape;
    out.classes = data.classes;
    out.name = data.name;
    out.inputs.assign(data.inputs.begin(), data.inputs.begin() + count * data.sampleSize());
    out.labels.assign(data.labels.begin(), data.labels.begin() + count * data.labelSize());
    return out;
}

struct BatchTensors {
    Tensor x, y;
};

BatchTensors uploadBatch(Backend& backend, const Dataset& data, std::int64_t first, std::int64_t count)
{
    BatchTensors b;
    b.x = backend.empty(batchedShape(count, data.sampleShape), DType::F32);
    backend.upload(data.sample(first), b.x);
    b.y = backend.empty({count * data.labelSize()}, DType::F32);
    backend.upload(data.sampleLabels(first), b.y);
    return b;
}

// `values` as `format`'s weight quantisation leaves them, in place, rows of `rowLength`.
void roundWeights(std::vector<float>& values, std::size_t rowLength, LayerPrecision format,
                  const RecipeOptions& options)
{
    // The policy says what the format does to a layer's weights: a recipe quantises them, a
    // 16- or 32-bit format multiplies them in its compute type.
    const LayerDTypes dtypes = PrecisionPolicy(PrecisionMode::Fp32).layer(LayerFormat(format));
    if (dtypes.gemmRecipes.weight != GemmRecipe::None) {
        QuantFormat q = operandFormat(dtypes.gemmRecipes.weight, GemmOperand::Weight, options).format;
        q.partialBlocks = PartialBlock::Pad;
        quantizeDequantize(values, values, rowLength, q);
    } else if (dtypes.weight != DType::F32) {
        roundThrough(values.data(), values.size(), dtypes.weight);
    }
}

} // namespace

PrecisionProbe::PrecisionProbe(const RunConfig& config, Backend& backend, const DatasetSplits& data,
                               std::string checkpoint, const AdvisorProbeOptions& options)
    : m_config(config), m_backend(backend), m_checkpoint(std::move(checkpoint)), m_task(data.task),
      m_batchSize(options.batchSize > 0 ? options.batchSize : config.training.batchSize)
{
    if (options.heldOutBatches < 1)
        throw ConfigError("the held-out batches must be 1 or more, not " + std::to_string(options.heldOutBatches));
    const Dataset& source = data.validation.size() > 0 ? data.validation : data.test;
    if (source.size() == 0)
        throw ConfigError("the data has neither a validation nor a test split to measure the held-out loss on");
    const std::int64_t batches = std::min(options.heldOutBatches, (source.size() + m_batchSize - 1) / m_batchSize);
    const std::int64_t samples = std::min(source.size(), batches * m_batchSize);
    m_heldOut = firstSamples(source, samples);
    m_heldOutDescription = source.name + ": the first " + std::to_string(samples) + " samples (" +
                           std::to_string(batches) + (batches == 1 ? " batch" : " batches") + " of up to " +
                           std::to_string(m_batchSize) + ")";

    m_baseline = buildModel(m_config.model);
    for (const GemmSite& site : gemmSites(m_baseline->graph())) {
        const Layer& layer = *site.layer;
        const GemmRecipe recipe = layer.gemmRecipes().weight;
        const double bits = recipe != GemmRecipe::None ? recipeWeightBits(recipe, m_config.recipe)
                                                       : 8.0 * static_cast<double>(dtypeSize(layer.computeType()));
        m_layers.push_back(
            {layer.name(), layer.flopsPerSample(), layer.parameterCount(), bits, layer.tensorCoreExtents()});
    }
    m_baselineLoss = heldOutLoss(*m_baseline);
    m_shadow = std::make_unique<ShadowModel>(m_config.model, m_backend, m_config.training.seed);
    measureReference();
    // On a copy: the comparison's training pass moves batch-norm running statistics, and the
    // baseline's must stay the state's for the fp32 passes to come.
    m_baselineOutputError = outputRelativeError(*buildModel(m_config.model));
}

PrecisionProbe::~PrecisionProbe() = default;

std::unique_ptr<Model> PrecisionProbe::buildModel(const ModelSpec& spec)
{
    auto model = std::make_unique<Model>(spec, m_config.precision, m_backend, m_config.training.seed, m_config.recipe,
                                         m_config.update);
    if (!m_checkpoint.empty())
        loadCheckpointWeights(*model, m_backend, m_checkpoint);
    return model;
}

void PrecisionProbe::measureReference()
{
    const std::int64_t count = std::min(m_batchSize, m_heldOut.size());
    const BatchTensors b = uploadBatch(m_backend, m_heldOut, 0, count);
    m_reference = &m_shadow->measure(*m_baseline, b.x, b.y, m_task, m_config.training.seed, 0);
}

double PrecisionProbe::heldOutLoss(Model& model)
{
    PassState pass{m_backend, false, m_config.training.seed, 0};
    double sum = 0;
    for (std::int64_t first = 0; first < m_heldOut.size(); first += m_batchSize) {
        const std::int64_t count = std::min(m_batchSize, m_heldOut.size() - first);
        const BatchTensors b = uploadBatch(m_backend, m_heldOut, first, count);
        ModelForward forward = model.forward(pass, b.x);
        const LossResult r = taskLoss(m_backend, m_task, forward.logits, b.y, 1.0f, nullptr);
        sum += static_cast<double>(r.meanLoss) * static_cast<double>(count);
    }
    return sum / static_cast<double>(m_heldOut.size());
}

double PrecisionProbe::outputRelativeError(Model& model)
{
    // A training pass, as the fp32 reference's was: batch norm normalises with the batch's
    // statistics in both. It moves `model`'s running statistics, so it comes after the loss.
    const std::int64_t count = std::min(m_batchSize, m_heldOut.size());
    const BatchTensors b = uploadBatch(m_backend, m_heldOut, 0, count);
    ShadowComparison comparison(model, m_backend, *m_reference, 1.0f);
    PassState pass{m_backend, true, m_config.training.seed, 0};
    pass.nodeTap = &comparison;
    model.forward(pass, b.x);
    const ShadowRecord record = comparison.record(0);
    for (auto it = record.errors.rbegin(); it != record.errors.rend(); ++it)
        if (it->kind == ShadowTensor::Output)
            return it->energies.relativeRms();
    return NAN;
}

ModelSpec PrecisionProbe::specWith(const std::string& layer, LayerPrecision format) const
{
    ModelSpec spec = m_config.model;
    spec.precisionOverrides[layer] = LayerFormat(format);
    return spec;
}

std::string PrecisionProbe::misfit(const std::string& layer, LayerPrecision format)
{
    try {
        Model(specWith(layer, format), m_config.precision, m_backend, m_config.training.seed, m_config.recipe,
              m_config.update);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return {};
}

LayerProbeResult PrecisionProbe::probe(const std::string& layer, LayerPrecision format)
{
    LayerProbeResult result;
    result.layer = layer;
    result.format = format;
    std::unique_ptr<Model> model;
    try {
        model = buildModel(specWith(layer, format));
    } catch (const ConfigError& e) {
        result.misfit = e.what();
        return result;
    }
    result.loss = heldOutLoss(*model);
    result.lossIncrease = result.loss - m_baselineLoss;
    result.outputRelativeError = outputRelativeError(*model);
    return result;
}

void PrecisionProbe::measureGradientMoments()
{
    // The per-sample squared gradient is what the Fisher needs, but a pass per sample costs
    // too much; the spread of the gradients of micro-batches of c samples gives it without
    // bias: the variance of a micro-batch's mean gradient is the samples' divided by c. The
    // micro-batches are training passes (batch norm normalises with their statistics), so
    // they keep a few samples each.
    const std::int64_t samples = m_heldOut.size();
    const std::int64_t microBatches = std::clamp<std::int64_t>(samples / kScoreMicroBatchSamples,
                                                               std::min<std::int64_t>(2, samples), kScoreMicroBatches);
    const std::int64_t size = (samples + microBatches - 1) / microBatches;
    // Per parameter, sum_k c_k g_k and sum_k c_k g_k^2 over the micro-batches k of c_k samples.
    std::int64_t batches = 0;
    for (std::int64_t first = 0; first < samples; first += size, ++batches) {
        const std::int64_t count = std::min(size, samples - first);
        const BatchTensors b = uploadBatch(m_backend, m_heldOut, first, count);
        const ShadowReference& r = m_shadow->measure(*m_baseline, b.x, b.y, m_task, m_config.training.seed, 0);
        for (const auto& [name, g] : r.weightGradients) {
            GradientMoments& m = m_gradients[name];
            m.mean.resize(g.size(), 0.0);
            m.sampleSquares.resize(g.size(), 0.0);
            const auto c = static_cast<double>(count);
            for (std::size_t i = 0; i < g.size(); ++i) {
                m.mean[i] += c * g[i];
                m.sampleSquares[i] += c * static_cast<double>(g[i]) * g[i];
            }
        }
    }
    m_scoreMicroBatches = batches;
    // The samples' variance is sum_k c_k (g_k - g)^2 / (K - 1) = (sum_k c_k g_k^2 - N g^2) / (K - 1),
    // and E[g^2] per sample is g^2 plus that variance.
    const double n = static_cast<double>(samples);
    const double dof = std::max<double>(1.0, static_cast<double>(batches) - 1.0);
    for (auto& [name, m] : m_gradients)
        for (std::size_t i = 0; i < m.mean.size(); ++i) {
            m.mean[i] /= n;
            const double mean2 = m.mean[i] * m.mean[i];
            m.sampleSquares[i] = mean2 + std::max(0.0, m.sampleSquares[i] - n * mean2) / dof;
        }
    measureReference(); // the first batch's, which the output errors compare with
}

std::vector<double> PrecisionProbe::scores(LayerPrecision format)
{
    if (m_gradients.empty())
        measureGradientMoments();
    std::vector<double> out;
    const std::vector<GemmSite> sites = gemmSites(m_baseline->graph());
    for (const GemmSite& site : sites) {
        double secondOrder = 0;
        for (Parameter* p : site.layer->parameters()) {
            const Shape& shape = p->master.shape();
            const auto gradient = m_gradients.find(p->name);
            if (shape.rank() < 2 || gradient == m_gradients.end())
                continue;
            std::vector<float> w(static_cast<std::size_t>(shape.numel()));
            m_backend.download(p->master, w.data());
            std::vector<float> q = w;
            roundWeights(q, static_cast<std::size_t>(shape.numel() / shape[0]), format, m_config.recipe);
            for (std::size_t i = 0; i < w.size(); ++i) {
                const double d = static_cast<double>(q[i]) - w[i];
                secondOrder += gradient->second.sampleSquares[i] * d * d;
            }
        }
        out.push_back(0.5 * secondOrder);
    }
    return out;
}

} // namespace mantissa
