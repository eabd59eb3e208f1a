#include "engine/numerics/operand_quantization.h"

#include "engine/numerics/block_quantizer.h"
#include "engine/util/check.h"

#include <algorithm>

namespace mantissa {

namespace {

qa::ElementSpec elementSpec(MiniFloat id)
{
    const MiniFloatFormat& f = miniFloatFormat(id);
    qa::ElementSpec spec;
    spec.mantissaBits = f.mantissaBits;
    spec.exponentBits = f.exponentBits;
    spec.bias = f.bias;
    spec.maxMagnitude = f.maxFiniteMagnitudeCode();
    spec.signMask = f.signMask();
    spec.specials = f.specials == MiniFloatSpecials::IeeeInfNan   ? qa::ElementSpec::IeeeInfNan
                    : f.specials == MiniFloatSpecials::AllOnesNan ? qa::ElementSpec::AllOnesNan
                                                                  : qa::ElementSpec::None;
    return spec;
}

qa::Scheme schemeOf(ScalingScheme s)
{
    switch (s) {
    case ScalingScheme::Fp32Blocks: return qa::Scheme::Fp32Blocks;
    case ScalingScheme::Mx: return qa::Scheme::Mx;
    case ScalingScheme::Nvfp4: return qa::Scheme::Nvfp4;
    default: return qa::Scheme::PerTensor;
    }
}

qa::MxRule ruleOf(MxScaleRule r)
{
    switch (r) {
    case MxScaleRule::Ceil: return qa::MxRule::Ceil;
    case MxScaleRule::RCeil: return qa::MxRule::RCeil;
    default: return qa::MxRule::Floor;
    }
}

bool perTensor(const OperandQuantization& q) { return q.format.scheme == ScalingScheme::PerTensor && !q.tiled; }

} // namespace

bool needsTensorAmax(const OperandQuantization& q)
{
    return q.format.scheme == ScalingScheme::Nvfp4 || (perTensor(q) && !q.fixedScale);
}

qa::OperandPlan operandPlan(const OperandQuantization& q, float tensorAmax)
{
    const QuantFormat& f = q.format;
    validateQuantFormat(f);
    if (f.scheme == ScalingScheme::None || f.element == MiniFloat::E8M0)
        throw ConfigError("quantising a GEMM operand needs a scaled format with a signed element (" +
                          describeQuantFormat(f) + ")");
    if (f.isBlocked()) // the CPU quantiser's refusal of partial blocks, with its message
        checkBlockLayout(static_cast<std::size_t>(q.view.rows() * q.view.cols()),
                         static_cast<std::size_t>(q.view.cols()), f);
    MANTISSA_ASSERT(!q.elements || perTensor(q));
    const MiniFloatFormat& element = miniFloatFormat(f.element);
    qa::OperandPlan p;
    p.scheme = schemeOf(f.scheme);
    p.element = elementSpec(f.element);
    p.e4m3 = elementSpec(MiniFloat::E4M3);
    p.elementMax = element.maxFinite();
    p.elementMaxExponent = element.maxExponent();
    p.mxRule = ruleOf(f.scaleRule);
    p.powerOfTwoScales = f.powerOfTwoScales;
    // Delayed scaling rounds to nearest even whatever the format says (gemm_inputs.cpp's
    // quantizeWithScale), as Transformer Engine's cast with a given scale does.
    p.stochastic = f.encoding.rounding == Rounding::Stochastic && !q.fixedScale;
    p.stream = stochasticStream(f.encoding.seed);
    p.firstCounter = q.firstCounter;
    p.elementsOnly = q.elements;
    if (perTensor(q))
        p.tensorPlan = q.fixedScale ? qa::Plan{*q.fixedScale, 1.0f / *q.fixedScale, false}
                                    : qa::fp32Plan(tensorAmax, p.elementMax, p.powerOfTwoScales);
    if (f.scheme == ScalingScheme::Nvfp4) {
        p.tensorAmax = tensorAmax;
        p.tensorEncodeScale = qa::nvfp4TensorEncodeScale(tensorAmax);
    }
    return p;
}

OperandQuantizationResult quantizeOperandOnHost(const OperandQuantization& q, std::span<const float> in,
                                                std::span<float> out)
{
    MANTISSA_ASSERT(in.size() == out.size() && static_cast<std::int64_t>(in.size()) == q.view.rows() * q.view.cols());
    // Spread over the OpenMP team like a kernel's threads: every value's result depends only on
    // its block's plan and its own place (the stochastic counter), not on the order.
    const auto n = static_cast<std::int64_t>(in.size());
    const bool parallel = n >= (1 << 15);
    float amax = 0.0f;
#pragma omp parallel for schedule(static) reduction(max : amax) if (parallel)
    for (std::int64_t i = 0; i < n; ++i)
        if (qa::isFinite(in[static_cast<std::size_t>(i)]))
            amax = std::max(amax, qa::magnitude(in[static_cast<std::size_t>(i)]));
    const qa::OperandPlan p = operandPlan(q, amax);
    OperandQuantizationResult result;
    if (perTensor(q)) { // every value with the tensor's plan; the counter is its place in the buffer
#pragma omp parallel for schedule(static) if (parallel)
        for (std::int64_t i = 0; i < n; ++i) {
            const auto at = static_cast<std::size_t>(i);
            out[at] = p.quantizeValue(in[at], p.tensorPlan, at);
        }
        result.decodeScale = q.elements ? p.tensorPlan.scale : 1.0f;
        result.amax = amax;
        return result;
    }
    const auto load = [&](std::int64_t at) { return in[static_cast<std::size_t>(at)]; };
    const auto store = [&](std::int64_t at, float v) { out[static_cast<std::size_t>(at)] = v; };
    const std::int64_t blocks = q.grid.count(q.view);
#pragma omp parallel for schedule(static) if (parallel)
    for (std::int64_t b = 0; b < blocks; ++b)
        qa::quantizeBlock(p, q.view, q.grid, b, load, store);
    return result;
}

} // namespace mantissa
