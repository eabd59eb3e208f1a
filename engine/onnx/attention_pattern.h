#pragma once
// Attention's scores as opset 17 writes them (PyTorch's export, and Mantissa's own):
//   S = MatMul(Q, K^T) [* c] [+ M],  P = Softmax(S, last axis)
// with Q and K computed, c a scalar constant (1 / sqrt(head width); an exporter that scales Q
// before the product leaves it out) and M, where present, a constant causal mask: 0 on and below
// the diagonal of its last two axes, -inf above. The compilation runs the Mul as the product's
// alpha (the fp32 sum scaled in the GEMM's epilogue, one rounding, as the engine's attention
// scales it) and the mask as the softmax's causal rows (the hidden keys exactly 0, as an added
// -inf makes them), instead of two elementwise ops over every score; and it holds S, P and their
// gradients in the dtypes the engine's attention holds them in (attention_scores.h). A MatMul,
// Mul or Add whose result another node also reads is left as it is.
#include "engine/model/layers/attention_scores.h"
#include "engine/onnx/onnx_graph.h"

#include <cstddef>
#include <map>
#include <set>
#include <string>

namespace mantissa::onnx_import {

struct ScoresSoftmax {
    std::string scores; // the MatMul's output, which the softmax reads instead
    bool causal = false;
};

struct AttentionPatterns {
    std::map<std::size_t, float> alphaOf;           // MatMul node index -> c
    std::map<std::size_t, ScoresSoftmax> softmaxOf; // Softmax node index -> what it reads
    std::set<std::size_t> absorbed;                 // the Mul and the Add
};

AttentionPatterns findAttentionPatterns(const OnnxGraph& onnx);

// The dtypes an imported attention holds S, P and their gradients in, for its compute type: the
// engine's attention's under its default softmax precision (fp32), since a file has no setting
// for it.
AttentionScoreTypes importedAttentionTypes(DType compute);

} // namespace mantissa::onnx_import
