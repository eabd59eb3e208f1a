#pragma once
// SGD's update in mixed fp16, one pass over sixteen lanes at a time on CPUs with AVX-512: the
// loss-scaled fp16 gradient widened and unscaled, weight decay, momentum (Nesterov or not),
// the fp32 master and momentum updated and the fp16 working copy rounded from the new master,
// all while the lanes are in registers. sgdUpdate's blocked loop does the same work in four
// passes over each block (widen, unscale, update, narrow), which measured 0.26 ms against this
// loop's 0.14 ms for mlp's 1.86 M parameters on 2 Zen 5 cores (fp32's own update: 0.15 ms).
// The arithmetic is sgdUpdate's, operation for operation: unscale as its own multiplication,
// then d = fma(decay, w, g), b = fma(momentum, b, d), d = Nesterov ? fma(momentum, b, d) : b,
// w = fma(-lr, d, w); so the bits are the same (sgd_half_update_test).
#include <cstddef>
#include <cstdint>

namespace mantissa::cpu {

struct SgdHalfLanes {
    const std::uint16_t* scaledGrad; // fp16, multiplied by the loss scale
    float invScale;
    float* master;
    float* momentumBuffer;  // nullptr without momentum
    std::uint16_t* working; // fp16 working copy, or nullptr where none is refreshed here
    float decay, momentum, lr;
    bool nesterov;
};

// Updates the longest prefix of whole 16-value vectors of [0, n) and returns its length (0
// where the CPU lacks AVX-512 or conversionsUseAvx512() is off); the caller updates the rest.
std::size_t sgdHalfPrefix(const SgdHalfLanes& lanes, std::size_t n);

} // namespace mantissa::cpu
