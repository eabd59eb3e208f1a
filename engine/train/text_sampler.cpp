#include "engine/train/text_sampler.h"

#include "engine/config/layer_kind.h"
#include "engine/train/checkpoint_weights.h"
#include "engine/util/check.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace mantissa {

namespace {

constexpr std::int64_t kByteValues = 256;

bool attentionIsCausal(const std::vector<LayerSpec>& layers)
{
    for (const LayerSpec& layer : layers) {
        if ((layer.type == LayerKind::Attention || layer.type == LayerKind::Transformer) && !layer.causal)
            return false;
        if (!attentionIsCausal(layer.body))
            return false;
    }
    return true;
}

// The next byte from one position's logits.
int pickByte(const std::vector<float>& logits, float temperature, std::mt19937_64& random)
{
    if (temperature == 0.0f)
        return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    const double top = *std::max_element(logits.begin(), logits.end());
    std::vector<double> weights(logits.size());
    double total = 0;
    for (std::size_t i = 0; i < logits.size(); ++i)
        total += weights[i] = std::exp((logits[i] - top) / temperature);
    // 53 random bits, so the draw is the same whatever the standard library's distributions do.
    const double target = static_cast<double>(random() >> 11) * 0x1.0p-53 * total;
    double cumulative = 0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
        cumulative += weights[i];
        if (target < cumulative)
            return static_cast<int>(i);
    }
    return static_cast<int>(weights.size() - 1); // rounding left the draw just past the end
}

} // namespace

std::string whyNotByteLanguageModel(const ModelSpec& spec)
{
    if (spec.layers.empty())
        return "it has no layers";
    const LayerSpec& first = spec.layers.front();
    if (first.type != LayerKind::TokenEmbedding)
        return "its first layer is " + std::string(enumKey(first.type)) + ", not a token_embedding";
    if (first.vocabulary != kByteValues || spec.classes != kByteValues)
        return "its vocabulary is " + std::to_string(first.vocabulary) + " tokens and its output " +
               std::to_string(spec.classes) + " classes, not the 256 byte values";
    if (spec.input.size() != 1)
        return "its input is not a sequence of token ids";
    if (!attentionIsCausal(spec.layers))
        return "its attention is not causal, so it does not predict each next byte from the bytes before it";
    return {};
}

TextSampler::TextSampler(const RunConfig& config, Backend& backend, const std::string& checkpointPath)
    : m_backend(backend)
{
    if (const std::string why = whyNotByteLanguageModel(config.model); !why.empty())
        throw ConfigError("not a byte-level language model: " + why);
    m_model = std::make_unique<Model>(config.model, config.precision, backend, config.training.seed);
    if (m_model->labelsPerSample() != config.model.input.front())
        throw ConfigError("not a byte-level language model: it makes one prediction per sequence, not one per byte");
    m_context = config.model.input.front();
    loadCheckpointWeights(*m_model, backend, checkpointPath);
}

TextSampler::~TextSampler() = default;

std::string TextSampler::generate(const std::string& prompt, const SamplingSettings& settings)
{
    if (prompt.empty())
        throw ConfigError("the prompt is empty; the model needs at least one byte to continue from");
    if (settings.tokens < 0)
        throw ConfigError("the number of bytes to generate must not be negative (got " +
                          std::to_string(settings.tokens) + ")");
    if (!(settings.temperature >= 0.0f) || !std::isfinite(settings.temperature))
        throw ConfigError("the temperature must be 0 (greedy) or positive");
    std::mt19937_64 random(settings.seed);
    std::string text = prompt, generated;
    std::vector<float> ids(static_cast<std::size_t>(m_context));
    std::vector<float> logits(static_cast<std::size_t>(m_context * kByteValues));
    Tensor x = m_backend.empty({1, m_context}, DType::F32);
    PassState pass{m_backend, false, settings.seed, 0};
    for (std::int64_t i = 0; i < settings.tokens; ++i) {
        // The last `context` bytes from position 0; the positions after them hold 0, which a
        // causal model's prediction at the last real byte never sees.
        const std::size_t length = std::min(text.size(), static_cast<std::size_t>(m_context));
        const std::size_t start = text.size() - length;
        std::fill(ids.begin(), ids.end(), 0.0f);
        for (std::size_t j = 0; j < length; ++j)
            ids[j] = static_cast<float>(static_cast<unsigned char>(text[start + j]));
        m_backend.upload(ids.data(), x);
        ModelForward forward = m_model->forward(pass, x);
        m_backend.download(forward.logits, logits.data());
        const auto row = logits.begin() + static_cast<std::ptrdiff_t>((length - 1) * kByteValues);
        const std::vector<float> last(row, row + kByteValues);
        if (!std::all_of(last.begin(), last.end(), [](float v) { return std::isfinite(v); }))
            throw DataError("the model's prediction for byte " + std::to_string(i + 1) +
                            " is not finite (inf or NaN logits): the weights or this precision overflow");
        const char next = static_cast<char>(pickByte(last, settings.temperature, random));
        text.push_back(next);
        generated.push_back(next);
    }
    return generated;
}

} // namespace mantissa
