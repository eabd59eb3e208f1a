#include "engine/model/layers/token_embedding.h"

#include "engine/model/init.h"

namespace mantissa {

namespace {
struct TokenEmbeddingContext final : LayerContext {
    Tensor ids;
};

// GPT-2's 0.02 rather than PyTorch's N(0, 1) default: a tied output head computes logits with
// this table, and unit-variance rows would start them at a scale of sqrt(width).
constexpr float kEmbeddingStd = 0.02f;
} // namespace

TokenEmbedding::TokenEmbedding(std::int64_t vocabulary, std::int64_t width, std::string init)
    : m_vocabulary(vocabulary), m_width(width), m_init(std::move(init))
{}

void TokenEmbedding::createParameters(Backend& backend, DType masterType, std::uint64_t seed)
{
    // Decayed like a weight: with a tied head it is one.
    createParameter(m_table, name() + ".table", {m_vocabulary, m_width}, backend, masterType, computeType(),
                    parseInitRule(m_init, {InitRule::Kind::Normal, kEmbeddingStd}), seed, true);
}

ForwardResult TokenEmbedding::forward(PassState& pass, const Tensor& x)
{
    Tensor y = pass.backend.empty(outputShape(x.shape()), computeType());
    pass.backend.embeddingForward(x, m_table.working, y);
    auto context = std::make_unique<TokenEmbeddingContext>();
    if (pass.training)
        context->ids = x;
    return {y, std::move(context)};
}

Tensor TokenEmbedding::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    auto& saved = static_cast<TokenEmbeddingContext&>(*context);
    pass.backend.embeddingBackward(saved.ids, dy, m_table.grad, m_shared);
    return {};
}

} // namespace mantissa
