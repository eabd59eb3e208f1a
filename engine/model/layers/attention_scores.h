#pragma once
// Attention's precision rule: the dtypes its scores, probabilities and their gradients are held
// in. The engine's attention layer (attention.h) follows it, and so does an imported graph whose
// attention runs as separate ops (a batched MatMul, a Softmax, a batched MatMul; engine/onnx), so
// that an exported preset imported back computes the preset's bits in every mode.
//
// `softmax` fp32 (the default) keeps S in fp32 straight from the scores GEMM's fp32 accumulator
// and computes the softmax in fp32, as fused attention kernels do; `compute` stores S in the
// compute dtype and computes the softmax in it, as a plain 16-bit implementation does (scores
// beyond 65504 become inf and their rows NaN in fp16). Either way P is rounded to the compute
// dtype, which the P V GEMM takes its inputs in; dP = dO V^T comes out of its GEMM as S does, and
// the softmax's backward rounds dS once to the compute dtype, which the GEMMs of Q's and K's
// gradients read.
#include "engine/config/layer_kind.h"
#include "engine/numerics/dtype.h"

namespace mantissa {

struct AttentionScoreTypes {
    DType scores;                // S, and the softmax's arithmetic
    DType probabilities;         // P = softmax(S) (and P after dropout)
    DType probabilitiesGradient; // dP, and dropout's backward on it
    DType scoresGradient;        // dS
};

constexpr AttentionScoreTypes attentionScoreTypes(InternalPrecision softmax, DType compute)
{
    const DType scores = softmax == InternalPrecision::Fp32 ? DType::F32 : compute;
    return {scores, compute, scores, compute};
}

} // namespace mantissa
