#pragma once
// Patch embedding for vision transformers: an image [N, C, H, W] cut into p x p patches, each
// projected to `width` features, giving tokens [N, (H/p)(W/p), width] in row-major patch
// order. The projection is a convolution with kernel = stride = p (a linear map of each
// patch's C*p*p values, as ViT's is), so it runs on the backend's convolution path and its
// precision rules; the axis swap then turns channels into the feature axis.
#include "engine/model/layers/conv2d.h"

namespace mantissa {

class PatchEmbedding final : public Layer {
public:
    // `input` is the validated per-sample {channels, height, width}, both extents multiples of `patch`.
    PatchEmbedding(const Shape& input, std::int64_t width, std::int64_t patch, bool bias, std::string init);

    LayerKind kind() const override { return LayerKind::PatchEmbedding; }
    Shape outputShape(const Shape& input) const override { return {input[0], m_tokens, m_width}; }
    // The projection's weights carry the embedding's own name ("1.patch_embedding.weight").
    std::vector<Sublayer> sublayers() override { return {{&m_projection, ""}}; }
    std::vector<Parameter*> parameters() override { return m_projection.parameters(); }
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;
    std::int64_t parameterCount() const override { return m_projection.parameterCount(); }
    std::int64_t flopsPerSample() const override { return m_projection.flopsPerSample(); }
    Conv2d& projection() { return m_projection; }

private:
    std::int64_t m_width, m_tokens;
    Conv2d m_projection;
};

} // namespace mantissa
