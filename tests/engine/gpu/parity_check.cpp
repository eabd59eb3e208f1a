#include "parity_check.h"

#include "engine/numerics/conversions.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace mantissa::test {

namespace {

constexpr double kUnitRoundoff = 0x1.0p-24;
// See the header: 8 u (sqrt(k) + 2) for fp32 products, 4 u (k + 2) for tensor-core ones.
constexpr double kSqrtTermsUlps = 8;
constexpr double kLinearTermsUlps = 4;
constexpr double kEpilogueTerms = 2;

// One ulp of `dtype` at magnitude `x` (the spacing of the binade x lies in).
double ulpOf(double x, DType dtype)
{
    const DTypeLimits limits = dtypeLimits(dtype);
    if (x == 0 || !std::isfinite(x))
        return limits.minSubnormal;
    int exponent = 0;
    std::frexp(x, &exponent); // x = m * 2^exponent, m in [0.5, 1)
    return std::max(std::ldexp(1.0, exponent - 1 - limits.mantissaBits), static_cast<double>(limits.minSubnormal));
}

double allowance(const Tolerance& t, DType dtype, double magnitude, double maxAbs)
{
    double allowed = 0;
    switch (t.kind) {
    case Tolerance::Kind::Exact: return 0;
    case Tolerance::Kind::Elementwise: allowed = t.amount * kUnitRoundoff * magnitude; break;
    case Tolerance::Kind::Normwise: allowed = t.amount * kUnitRoundoff * maxAbs; break;
    case Tolerance::Kind::Reduction:
        allowed = (t.tensorCoreInputs ? kLinearTermsUlps * (t.amount + kEpilogueTerms)
                                      : kSqrtTermsUlps * (std::sqrt(t.amount) + kEpilogueTerms)) *
                  kUnitRoundoff * maxAbs;
        break;
    case Tolerance::Kind::Relative: allowed = t.amount * maxAbs; break;
    }
    if (dtype != DType::F32)
        allowed += ulpOf(magnitude, dtype);
    return allowed;
}

std::string number(double v)
{
    std::ostringstream out;
    out.precision(9);
    out << v;
    return out.str();
}

} // namespace

Tolerance exact() { return {}; }
Tolerance elementwise(double ulps) { return {Tolerance::Kind::Elementwise, ulps, false}; }
Tolerance normwise(double ulps) { return {Tolerance::Kind::Normwise, ulps, false}; }
Tolerance relative(double r) { return {Tolerance::Kind::Relative, r, false}; }

Tolerance reduction(std::int64_t terms, DType inputType)
{
    return {Tolerance::Kind::Reduction, static_cast<double>(terms), inputType != DType::F32};
}

std::string describe(const Tolerance& t)
{
    switch (t.kind) {
    case Tolerance::Kind::Exact: return "exact";
    case Tolerance::Kind::Elementwise: return number(t.amount) + " fp32 ulps of the value";
    case Tolerance::Kind::Normwise: return number(t.amount) + " fp32 ulps of the tensor's largest value";
    case Tolerance::Kind::Reduction:
        return "reduction of " + number(t.amount) + (t.tensorCoreInputs ? " 16-bit" : " fp32") + " terms";
    case Tolerance::Kind::Relative: return "relative " + number(t.amount);
    }
    return "?";
}

Deviation compare(const KeptOutput& expected, const KeptOutput& actual)
{
    Deviation worst;
    if (expected.values.size() != actual.values.size()) {
        worst.count = std::max(expected.values.size(), actual.values.size());
        worst.ratio = std::numeric_limits<double>::infinity();
        return worst;
    }
    double maxAbs = 0;
    for (double e : expected.values)
        if (std::isfinite(e))
            maxAbs = std::max(maxAbs, std::abs(e));
    worst.ratio = -1;
    for (std::size_t i = 0; i < expected.values.size(); ++i) {
        const double e = expected.values[i], a = actual.values[i];
        double ratio = 0, allowed = 0;
        if (!std::isfinite(e) || !std::isfinite(a)) {
            const bool same = (std::isnan(e) && std::isnan(a)) || e == a;
            ratio = same ? 0 : std::numeric_limits<double>::infinity();
        } else {
            const double difference = std::abs(a - e);
            allowed = allowance(expected.tolerance, expected.dtype, std::max(std::abs(e), std::abs(a)), maxAbs);
            if (allowed > 0)
                ratio = difference / allowed;
            else
                ratio = difference > 0 ? std::numeric_limits<double>::infinity() : 0;
        }
        worst.count += ratio > 1 ? 1 : 0;
        if (ratio > worst.ratio) {
            worst.ratio = ratio;
            worst.index = i;
            worst.expected = e;
            worst.actual = a;
            worst.allowed = allowed;
        }
    }
    return worst;
}

std::string describe(const Deviation& d, const KeptOutput& expected)
{
    std::ostringstream out;
    out << d.count << " of " << expected.values.size() << " values off; worst [" << d.index << "]: device "
        << number(d.actual) << ", oracle " << number(d.expected) << ", |difference| "
        << number(std::abs(d.actual - d.expected)) << " > allowed " << number(d.allowed) << " ("
        << describe(expected.tolerance) << ", stored as " << dtypeName(expected.dtype) << ")";
    return out.str();
}

Draw uniform(float lo, float hi)
{
    return [lo, hi](std::mt19937& generator, std::size_t) {
        return std::uniform_real_distribution<float>(lo, hi)(generator);
    };
}

Draw levels()
{
    return [](std::mt19937& generator, std::size_t) {
        return 0.5f * static_cast<float>(std::uniform_int_distribution<int>(-3, 3)(generator));
    };
}

Draw specials()
{
    static const float kSpecials[] = {
        0.0f,
        -0.0f,
        INFINITY,
        -INFINITY,
        NAN,
        65504.0f, // fp16's largest finite value
        65519.0f, // rounds down to it in fp16
        65520.0f, // halfway to 2^16: rounds to inf in fp16
        1e5f,
        -3e38f,                            // beyond fp16; near the top of bf16
        std::numeric_limits<float>::max(), // rounds to inf in bf16
        0x1.0p-25f,                        // half of fp16's smallest subnormal: ties to zero
        0x1.8p-25f,                        // rounds up to fp16's smallest subnormal
        1e-40f,                            // fp32 subnormal
        1.0f + 0x1.0p-11f,                 // fp16 halfway case, ties to even (1)
        1.0f + 0x1.8p-10f,                 // fp16 halfway case, ties to even (1 + 2^-9)
        1.0f + 0x1.0p-8f,                  // bf16 halfway case, ties to even (1)
        -(1.0f + 0x1.8p-7f),               // bf16 halfway case, ties to even (-(1 + 2^-6))
    };
    constexpr std::size_t kCount = sizeof(kSpecials) / sizeof(kSpecials[0]);
    return [](std::mt19937& generator, std::size_t index) {
        const float u = std::uniform_real_distribution<float>(-2.0f, 2.0f)(generator);
        // The first values are every special in turn, then one in five.
        if (index < kCount)
            return kSpecials[index];
        return index % 5 == 0 ? kSpecials[(index / 5) % kCount] : u;
    };
}

Draw with(Draw base, float value, std::size_t period, std::size_t first)
{
    return [base = std::move(base), value, period, first](std::mt19937& generator, std::size_t index) {
        const float drawn = base(generator, index); // always drawn: the sequence stays aligned
        return index >= first && (index - first) % period == 0 ? value : drawn;
    };
}

std::vector<float> OpRun::draw(std::int64_t n, const Draw& how)
{
    std::vector<float> values(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = how(m_generator, i);
    return values;
}

Tensor OpRun::input(const Shape& shape, DType dtype, const Draw& how)
{
    std::vector<float> values = draw(shape.numel(), how);
    for (float& v : values)
        v = roundToDType(v, dtype);
    Tensor t = m_backend.empty(shape, dtype);
    m_backend.upload(values.data(), t);
    return t;
}

Tensor OpRun::output(const Shape& shape, DType dtype)
{
    Tensor t = m_backend.empty(shape, dtype);
    m_backend.fill(t, NAN);
    return t;
}

void OpRun::keep(const std::string& name, const Tensor& t, Tolerance tolerance)
{
    std::vector<float> values(static_cast<std::size_t>(t.numel()));
    m_backend.download(t, values.data());
    m_kept.push_back({name, t.dtype(), std::vector<double>(values.begin(), values.end()), tolerance});
}

void OpRun::keepScalar(const std::string& name, double value, Tolerance tolerance)
{
    m_kept.push_back({name, DType::F32, {value}, tolerance});
}

} // namespace mantissa::test
