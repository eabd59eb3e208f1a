#include "engine/onnx/export_transformer.h"

#include "engine/model/layers/activation_layer.h"
#include "engine/onnx/export_layer_writers.h"
#include "engine/util/check.h"

#include <cmath>
#include <limits>

namespace mantissa::onnx_import {

namespace {

using W = OnnxGraphWriter;

std::string reshape(W& w, const std::string& input, const std::string& name, const std::vector<std::int64_t>& dims)
{
    return w.addNode("Reshape", name, {input, w.intConstant(name + ".shape", dims)}).output(0);
}

std::string transpose(W& w, const std::string& input, const std::string& name, const std::vector<std::int64_t>& perm)
{
    onnx::NodeProto& node = w.addNode("Transpose", name, {input});
    W::intsAttribute(node, "perm", perm);
    return node.output(0);
}

} // namespace

std::string writeTokenEmbedding(W& w, TokenEmbedding& layer, const std::string& ids)
{
    return w.addNode("Gather", layer.name(), {w.initializer(*layer.table()), ids}).output(0);
}

std::string writePositionalEmbedding(W& w, PositionalEmbedding& layer, const std::string& input)
{
    // The import reads a positional table through an Add only whole: a table longer than the
    // sequence would need a Slice of a parameter, which it does not compile.
    if (layer.length() != layer.tokens())
        throw ConfigError("export: layer " + layer.name() + " (positional_embedding) holds " +
                          std::to_string(layer.length()) + " positions for sequences of " +
                          std::to_string(layer.tokens()) +
                          "; only a table as long as the sequence (\"length\": 0) has an ONNX form here");
    return w.addNode("Add", layer.name(), {input, w.initializer(*layer.parameters().at(0))}).output(0);
}

std::string writePatchEmbedding(W& w, PatchEmbedding& layer, const std::string& input)
{
    // Conv gives [N, width, H/p, W/p]; its pixels in row-major order are the tokens.
    const Shape tokens = layer.outputShape({1, 0, 0, 0}); // [1, T, width]
    const std::string projected = writeConv(w, layer.projection(), input, layer.name());
    const std::string flat = reshape(w, projected, layer.name() + ".flatten", {-1, tokens[2], tokens[1]});
    return transpose(w, flat, layer.name() + ".tokens", {0, 2, 1});
}

std::string writeRowNorm(W& w, RowNorm& layer, const std::string& input)
{
    if (layer.kind() != LayerKind::LayerNorm)
        throw ConfigError("export: layer " + layer.name() + " is an RMS norm, which has no ONNX op before opset 23");
    std::vector<std::string> inputs{input};
    for (Parameter* p : layer.parameters()) // gain, then bias
        inputs.push_back(w.initializer(*p));
    onnx::NodeProto& node = w.addNode("LayerNormalization", layer.name(), inputs);
    W::intAttribute(node, "axis", -1);
    W::floatAttribute(node, "epsilon", layer.epsilon());
    return node.output(0);
}

std::string writeAttention(W& w, Attention& layer, const std::string& input, std::int64_t tokens)
{
    const std::string& name = layer.name();
    const std::int64_t width = layer.width(), heads = layer.heads(), headDim = width / heads;
    const std::string rows = reshape(w, input, name + ".rows", {-1, width});
    // [N T, width] -> [N, T, H, dh] -> [N, H, T, dh]; K goes on to [N, H, dh, T] for Q K^T.
    auto split = [&](Linear& projection, const std::vector<std::int64_t>& perm) {
        const std::string projected = writeLinearRows(w, projection, rows);
        const std::string perHead = reshape(w, projected, projection.name() + ".heads", {-1, tokens, heads, headDim});
        return transpose(w, perHead, projection.name() + ".split", perm);
    };
    const std::string q = split(layer.query(), {0, 2, 1, 3});
    const std::string kT = split(layer.key(), {0, 2, 3, 1});
    const std::string v = split(layer.value(), {0, 2, 1, 3});
    // The layer scales in its GEMM's epilogue, alpha times the fp32 sum rounded once: the same
    // one rounding as a Mul of the sum by the same fp32 scale.
    const float scale = 1.0f / std::sqrt(static_cast<float>(headDim));
    const std::string product = w.addNode("MatMul", name + ".scores", {q, kT}).output(0);
    std::string scores =
        w.addNode("Mul", name + ".scaled", {product, w.floatConstant(name + ".scale", {}, {scale})}).output(0);
    if (layer.causal()) {
        // -inf above the diagonal, as the layer's softmax hides the keys after each query: oneDNN's
        // softmax gives them exactly 0 either way.
        std::vector<float> mask(static_cast<std::size_t>(tokens * tokens), 0.0f);
        for (std::int64_t i = 0; i < tokens; ++i)
            for (std::int64_t j = i + 1; j < tokens; ++j)
                mask[static_cast<std::size_t>(i * tokens + j)] = -std::numeric_limits<float>::infinity();
        scores = w.addNode("Add", name + ".mask", {scores, w.floatConstant(name + ".causal", {tokens, tokens}, mask)})
                     .output(0);
    }
    onnx::NodeProto& softmax = w.addNode("Softmax", name + ".softmax", {scores});
    W::intAttribute(softmax, "axis", -1);
    std::string probs = softmax.output(0);
    if (layer.dropout() > 0.0f)
        probs = w.addNode("Dropout", name + ".dropout",
                          {probs, w.scalarInitializer(name + ".dropout.ratio", layer.dropout())})
                    .output(0);
    const std::string context = w.addNode("MatMul", name + ".context", {probs, v}).output(0);
    const std::string merged = transpose(w, context, name + ".merge", {0, 2, 1, 3});
    const std::string mergedRows = reshape(w, merged, name + ".merge.rows", {-1, width});
    const std::string out = writeLinearRows(w, layer.output(), mergedRows);
    return reshape(w, out, name, {-1, tokens, width});
}

std::string writeMlp(W& w, Mlp& layer, const std::string& input)
{
    auto& up = static_cast<Linear&>(layer.up().inner());
    Linear& down = layer.down();
    const bool sequence = up.tokens() > 1;
    const std::string rows = sequence ? reshape(w, input, layer.name() + ".rows", {-1, up.inFeatures()}) : input;
    const std::string hidden = writeLinearRows(w, up, rows);
    const std::string activated = writeGelu(w, hidden, layer.up().name() + ".activation");
    const std::string out = writeLinearRows(w, down, activated);
    return sequence ? reshape(w, out, layer.name(), {-1, down.tokens(), down.outFeatures()}) : out;
}

std::string writeTransformerBlock(W& w, TransformerBlock& layer, const std::string& input, std::int64_t tokens)
{
    // h = x + attention(norm1(x)), y = h + mlp(norm2(h)), the additions in the block's order.
    const std::string attended = writeAttention(w, layer.attention(), writeRowNorm(w, layer.norm1(), input), tokens);
    const std::string h = w.addNode("Add", layer.name() + ".attention_residual", {input, attended}).output(0);
    const std::string transformed = writeMlp(w, layer.mlp(), writeRowNorm(w, layer.norm2(), h));
    return w.addNode("Add", layer.name(), {h, transformed}).output(0);
}

} // namespace mantissa::onnx_import
