#pragma once
// The 16x16 random Hadamard transform of NVIDIA's NVFP4 training recipe ("Pretraining Large
// Language Models with NVFP4", arXiv 2509.25149; Transformer Engine's NVFP4 recipe), applied to
// both inputs of the weight-gradient GEMM along its reduction dimension K before quantisation.
//
// Each group of 16 consecutive values v along K becomes u = (1/4) H D v, where H is the 16x16
// Sylvester Hadamard matrix (H[i][j] = (-1)^popcount(i & j), H H^T = 16 I) and D a diagonal of
// random signs. (1/4) H D is orthogonal, so rotating both operands with the same matrix leaves
// their product unchanged in exact arithmetic: (A Q^T)(Q B) = A B with Q = (1/4) H D. What it
// changes is the quantisation: an outlier is spread over its 16-value group, so the block scale
// is set by a smoother distribution. The signs come from a seeded generator: one sign vector
// per seed (Transformer Engine uses one fixed vector for all layers and steps), so a run
// repeats bit for bit. A last group shorter than 16 (K not a multiple of 16) is left as it is:
// the identity on it cancels just as exactly.
#include <cstddef>
#include <cstdint>
#include <span>

namespace mantissa {

inline constexpr std::size_t kHadamardSize = 16;

// The random sign diagonal D for `seed`: bit j set means D[j][j] = -1.
std::uint16_t hadamardSigns(std::uint64_t seed);

// Rotates `values` in place, in groups of 16 consecutive values, by (1/4) H D (the 1/4 is
// exact in floating point; the sums round as fp32 additions, four butterfly stages).
void hadamardTransformRow(std::span<float> values, std::uint16_t signs);

// The same rotation where K runs down columns: `rows` holds 16 consecutive K positions, each a
// row of `columns` values `stride` apart, and every column is one group. Each value takes the
// same fp32 operations in the same order as in hadamardTransformRow, so the bits are the same;
// the operations run along the rows, which vectorises and needs no transpose.
void hadamardTransformColumns(float* rows, std::size_t stride, std::size_t columns, std::uint16_t signs);

// The matrix (1/4) H D itself, row-major, for tests and the documentation.
void hadamardMatrix(std::uint16_t signs, std::span<float, kHadamardSize * kHadamardSize> out);

} // namespace mantissa
