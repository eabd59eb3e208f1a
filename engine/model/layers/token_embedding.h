#pragma once
// Token embedding: token ids [N, T] (fp32 holding whole numbers) to vectors [N, T, width]
// by table lookup. The ids stay fp32 whatever the compute type (Layer::inputType): bf16 holds
// whole numbers only up to 256. The table is a weight in the compute type; a tied output head
// (Linear::tieWeight) computes with the same table and writes its gradient first.
#include "engine/model/layer.h"

namespace mantissa {

class TokenEmbedding final : public Layer {
public:
    TokenEmbedding(std::int64_t vocabulary, std::int64_t width, std::string init);

    LayerKind kind() const override { return LayerKind::TokenEmbedding; }
    Shape outputShape(const Shape& input) const override { return {input[0], input[1], m_width}; }
    DType inputType() const override { return DType::F32; }
    void createParameters(Backend& backend, DType masterType, std::uint64_t seed) override;
    std::vector<Parameter*> parameters() override { return {&m_table}; }
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    // Writes the table's gradient and returns no dx: token ids have no gradient.
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;
    std::int64_t parameterCount() const override { return m_vocabulary * m_width; }
    std::int64_t flopsPerSample() const override { return 0; } // a lookup
    std::vector<std::pair<std::string, std::int64_t>> tensorCoreExtents() const override
    {
        return {{"width", m_width}};
    }

    std::int64_t vocabulary() const { return m_vocabulary; }
    std::int64_t width() const { return m_width; }
    // The table, for an output head tied to it; the head's gradient arrives first, so this
    // layer's backward adds to it (set by the model when it ties them).
    Parameter* table() { return &m_table; }
    void setTableShared(bool shared) { m_shared = shared; }

private:
    std::int64_t m_vocabulary, m_width;
    std::string m_init;
    bool m_shared = false;
    Parameter m_table;
};

} // namespace mantissa
