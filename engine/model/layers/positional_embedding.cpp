#include "engine/model/layers/positional_embedding.h"

#include "engine/model/init.h"
#include "engine/util/check.h"

namespace mantissa {

PositionalEmbedding::PositionalEmbedding(std::int64_t length, std::int64_t tokens, std::int64_t width, std::string init)
    : m_length(length), m_tokens(tokens), m_width(width), m_init(std::move(init))
{
    MANTISSA_ASSERT(tokens <= length);
}

void PositionalEmbedding::createParameters(Backend& backend, DType masterType, std::uint64_t seed)
{
    // Not decayed: positions are a table of offsets, as biases are.
    createParameter(m_table, name() + ".table", {m_length, m_width}, backend, masterType, computeType(),
                    parseInitRule(m_init, {InitRule::Kind::Normal, 0.02f}), seed, false);
}

ForwardResult PositionalEmbedding::forward(PassState& pass, const Tensor& x)
{
    // A sequence of T tokens uses the table's first T rows; T may be shorter than the model's
    // (a prompt while sampling), never longer (the factory checks the model's).
    const std::int64_t tokens = x.shape()[1];
    MANTISSA_ASSERT(tokens <= m_length && x.shape()[2] == m_width);
    Tensor y = pass.backend.empty(x.shape(), computeType());
    pass.backend.addBroadcast(x, m_table.working, y, tokens * m_width);
    return {y, nullptr};
}

Tensor PositionalEmbedding::backward(PassState& pass, const Tensor& dy, LayerContext*)
{
    pass.backend.addBroadcastBackward(dy, m_table.grad, dy.shape()[1] * m_width);
    return pass.inputGradNeeded ? dy : Tensor();
}

} // namespace mantissa
