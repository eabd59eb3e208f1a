#pragma once
// The pointwise functions with parameters that imported models use and the presets do not:
// clip (ReLU6 is clip to [0, 6]), leaky ReLU, hard sigmoid and hard swish, as ONNX defines
// them. Their values and derivatives are written once here, for the CPU's loops and the CUDA
// kernels alike (MANTISSA_HD); both compute in fp32 from the input x alone.
//
// ONNX defines no gradients, so the derivatives are PyTorch's, whose modules export to these
// ops: clip passes dy strictly inside (lo, hi) as hardtanh (ReLU6) does; leaky ReLU scales dy
// by alpha where x <= 0; hard sigmoid passes alpha dy strictly inside its ramp; hard swish
// has the derivative 2 alpha x + beta on its ramp, ends included, as hardswish_backward.
#include "engine/util/host_device.h"

#include <cstdint>

namespace mantissa {

enum class PointwiseKind : std::uint8_t { Clip, LeakyRelu, HardSigmoid, HardSwish };

struct PointwiseFunction {
    PointwiseKind kind = PointwiseKind::Clip;
    // Clip: the bounds [alpha, beta]. LeakyRelu: the slope alpha below 0. HardSigmoid:
    // max(0, min(1, alpha x + beta)). HardSwish: x HardSigmoid(x) with alpha 1/6 and beta 1/2.
    float alpha = 0, beta = 0;
};

MANTISSA_HD float pointwiseValue(const PointwiseFunction& f, float x)
{
    switch (f.kind) {
    case PointwiseKind::Clip: return x < f.alpha ? f.alpha : (x > f.beta ? f.beta : x); // a NaN stays NaN
    case PointwiseKind::LeakyRelu: return x > 0 ? x : f.alpha * x;
    case PointwiseKind::HardSigmoid: {
        const float t = f.alpha * x + f.beta;
        return t < 0 ? 0.0f : (t > 1 ? 1.0f : t);
    }
    case PointwiseKind::HardSwish: {
        const float t = f.alpha * x + f.beta;
        return x * (t < 0 ? 0.0f : (t > 1 ? 1.0f : t));
    }
    }
    return x;
}

// dy times the derivative at x.
MANTISSA_HD float pointwiseGradient(const PointwiseFunction& f, float x, float dy)
{
    switch (f.kind) {
    case PointwiseKind::Clip: return x > f.alpha && x < f.beta ? dy : 0.0f;
    case PointwiseKind::LeakyRelu: return x > 0 ? dy : f.alpha * dy;
    case PointwiseKind::HardSigmoid: {
        const float t = f.alpha * x + f.beta;
        return t > 0 && t < 1 ? f.alpha * dy : 0.0f;
    }
    case PointwiseKind::HardSwish: {
        const float t = f.alpha * x + f.beta;
        return t < 0 ? 0.0f : (t <= 1 ? dy * (2 * f.alpha * x + f.beta) : dy);
    }
    }
    return dy;
}

} // namespace mantissa
