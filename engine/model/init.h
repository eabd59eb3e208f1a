#pragma once
// Weight initialisation and parameter allocation shared by every layer.
#include "engine/backend/backend.h"
#include "engine/model/parameter.h"

#include <string>

namespace mantissa {

// How to draw initial weights: "" = default for the layer, "normal:STD", "uniform:A",
// "zeros", "ones". Throws ConfigError for an unknown form.
struct InitRule {
    enum class Kind { Normal, Uniform, Constant } kind = Kind::Normal;
    float value = 0; // std, bound or constant
};
InitRule parseInitRule(const std::string& text, InitRule fallback);
// He (Kaiming) normal for ReLU nets, Xavier (Glorot) normal for tanh/sigmoid ones.
InitRule heNormal(std::int64_t fanIn);
InitRule xavierNormal(std::int64_t fanIn, std::int64_t fanOut);

// Allocates master, working, grad and fp32Grad for a parameter of `shape`, fills master
// from `rule` with a generator seeded by (seed, name) and refreshes the working copy.
// The working copy shares master's storage when computeType == masterType.
void createParameter(Parameter& p, std::string name, const Shape& shape, Backend& backend, DType masterType,
                     DType computeType, const InitRule& rule, std::uint64_t seed, bool decay);

} // namespace mantissa
