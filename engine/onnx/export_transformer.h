#pragma once
// The transformer layers of a layer list written as ONNX opset 17 nodes that the import
// compiles (export_layer_list.h): token embedding as Gather, learned positions as an Add of
// their table, patch embedding as Conv then Reshape and Transpose, layer norm as
// LayerNormalization, multi-head attention as its projections (Gemm), the heads split by
// Reshape and Transpose, Q K^T by MatMul times the scale, the causal mask added as a constant
// of 0 and -inf, Softmax and P V by MatMul, and the MLP as Gemm, GELU (erf form) and Gemm. The
// pre-norm block joins them with its two residual Adds.
#include "engine/model/layers/attention.h"
#include "engine/model/layers/mlp.h"
#include "engine/model/layers/patch_embedding.h"
#include "engine/model/layers/positional_embedding.h"
#include "engine/model/layers/row_norm.h"
#include "engine/model/layers/token_embedding.h"
#include "engine/model/layers/transformer_block.h"
#include "engine/onnx/onnx_graph_writer.h"

#include <string>

namespace mantissa::onnx_import {

std::string writeTokenEmbedding(OnnxGraphWriter& w, TokenEmbedding& layer, const std::string& ids);
std::string writePositionalEmbedding(OnnxGraphWriter& w, PositionalEmbedding& layer, const std::string& input);
std::string writePatchEmbedding(OnnxGraphWriter& w, PatchEmbedding& layer, const std::string& input);
// Throws ConfigError for an RMS norm, which opset 17 has no op for.
std::string writeRowNorm(OnnxGraphWriter& w, RowNorm& layer, const std::string& input);
// On [N, T, width]; `tokens` is T.
std::string writeAttention(OnnxGraphWriter& w, Attention& layer, const std::string& input, std::int64_t tokens);
std::string writeMlp(OnnxGraphWriter& w, Mlp& layer, const std::string& input);
std::string writeTransformerBlock(OnnxGraphWriter& w, TransformerBlock& layer, const std::string& input,
                                  std::int64_t tokens);

} // namespace mantissa::onnx_import
