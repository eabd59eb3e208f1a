#include "engine/model/init.h"

#include "engine/util/check.h"

#include <cmath>
#include <random>
#include <vector>

namespace mantissa {

InitRule parseInitRule(const std::string& text, InitRule fallback)
{
    if (text.empty())
        return fallback;
    if (text == "zeros")
        return {InitRule::Kind::Constant, 0.0f};
    if (text == "ones")
        return {InitRule::Kind::Constant, 1.0f};
    const auto colon = text.find(':');
    if (colon != std::string::npos) {
        const std::string kind = text.substr(0, colon);
        float value = 0;
        try {
            value = std::stof(text.substr(colon + 1));
        } catch (const std::exception&) {
            throw ConfigError("init \"" + text + "\": the value after ':' is not a number");
        }
        if (kind == "normal")
            return {InitRule::Kind::Normal, value};
        if (kind == "uniform")
            return {InitRule::Kind::Uniform, value};
    }
    throw ConfigError("init \"" + text + "\": expected normal:STD, uniform:BOUND, zeros or ones");
}

InitRule heNormal(std::int64_t fanIn) { return {InitRule::Kind::Normal, std::sqrt(2.0f / static_cast<float>(fanIn))}; }

InitRule xavierNormal(std::int64_t fanIn, std::int64_t fanOut)
{
    return {InitRule::Kind::Normal, std::sqrt(2.0f / static_cast<float>(fanIn + fanOut))};
}

void createParameter(Parameter& p, std::string name, const Shape& shape, Backend& backend, DType masterType,
                     DType computeType, const InitRule& rule, std::uint64_t seed, bool decay)
{
    p.name = std::move(name);
    p.decay = decay;
    // Seeding by (seed, name) keeps each tensor's initial values independent of the order in
    // which layers are built and identical across precision modes: comparisons start equal.
    // FNV-1a rather than std::hash, whose value may differ between standard libraries.
    std::uint64_t nameHash = 0xcbf29ce484222325ull;
    for (unsigned char c : p.name)
        nameHash = (nameHash ^ c) * 0x100000001b3ull;
    std::mt19937_64 generator(seed ^ nameHash);
    std::vector<float> values(static_cast<std::size_t>(shape.numel()));
    switch (rule.kind) {
    case InitRule::Kind::Normal: {
        std::normal_distribution<float> dist(0.0f, rule.value);
        for (float& v : values)
            v = dist(generator);
        break;
    }
    case InitRule::Kind::Uniform: {
        std::uniform_real_distribution<float> dist(-rule.value, rule.value);
        for (float& v : values)
            v = dist(generator);
        break;
    }
    case InitRule::Kind::Constant: std::fill(values.begin(), values.end(), rule.value); break;
    }
    p.master = backend.empty(shape, masterType);
    backend.upload(values.data(), p.master);
    if (computeType == masterType) {
        p.working = p.master;
    } else {
        p.working = backend.empty(shape, computeType);
        backend.cast(p.master, p.working);
    }
    p.grad = backend.empty(shape, computeType);
    backend.fill(p.grad, 0.0f);
    if (computeType == DType::F32) {
        // An fp32 gradient is its own fp32 copy: unscaling then works in place, rather than
        // copying every gradient each step (a sixth of an fp32 MLP step's memory traffic).
        p.fp32Grad = p.grad;
        return;
    }
    p.fp32Grad = backend.empty(shape, DType::F32);
    backend.fill(p.fp32Grad, 0.0f);
}

} // namespace mantissa
