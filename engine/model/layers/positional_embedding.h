#pragma once
// Learned positional embedding: adds row t of a [length, width] table to token t of
// [N, T, width] (T <= length; the factory checks it). The table is a weight in the compute
// type; the addition runs in fp32 and rounds once.
#include "engine/model/layer.h"

namespace mantissa {

class PositionalEmbedding final : public Layer {
public:
    PositionalEmbedding(std::int64_t length, std::int64_t tokens, std::int64_t width, std::string init);

    LayerKind kind() const override { return LayerKind::PositionalEmbedding; }
    Shape outputShape(const Shape& input) const override { return input; }
    void createParameters(Backend& backend, DType masterType, std::uint64_t seed) override;
    std::vector<Parameter*> parameters() override { return {&m_table}; }
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;
    std::int64_t parameterCount() const override { return m_length * m_width; }
    std::int64_t flopsPerSample() const override { return m_tokens * m_width; }
    // The table's rows; the model's sequences use the first tokens() of them.
    std::int64_t length() const { return m_length; }
    std::int64_t tokens() const { return m_tokens; }

private:
    std::int64_t m_length, m_tokens, m_width;
    std::string m_init;
    Parameter m_table;
};

} // namespace mantissa
