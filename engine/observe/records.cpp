#include "engine/observe/records.h"

namespace mantissa {

const char* eventKindName(EventKind kind)
{
    switch (kind) {
    case EventKind::Overflow: return "overflow";
    case EventKind::ScaleChange: return "scale_change";
    case EventKind::Divergence: return "divergence";
    case EventKind::Finished: return "finished";
    case EventKind::Error: return "error";
    }
    return "?";
}

const char* tensorKindName(TensorKind kind)
{
    switch (kind) {
    case TensorKind::Activation: return "activation";
    case TensorKind::ActivationGrad: return "activation_grad";
    case TensorKind::Weight: return "weight";
    case TensorKind::WeightGrad: return "weight_grad";
    }
    return "?";
}

std::optional<TensorKind> parseTensorKind(const std::string& name)
{
    for (TensorKind kind :
         {TensorKind::Activation, TensorKind::ActivationGrad, TensorKind::Weight, TensorKind::WeightGrad})
        if (name == tensorKindName(kind))
            return kind;
    return std::nullopt;
}

const char* shadowTensorName(ShadowTensor kind)
{
    switch (kind) {
    case ShadowTensor::Output: return "output";
    case ShadowTensor::InputGrad: return "input_grad";
    case ShadowTensor::WeightGrad: return "weight_grad";
    }
    return "?";
}

std::optional<ShadowTensor> parseShadowTensor(const std::string& name)
{
    for (ShadowTensor kind : {ShadowTensor::Output, ShadowTensor::InputGrad, ShadowTensor::WeightGrad})
        if (name == shadowTensorName(kind))
            return kind;
    return std::nullopt;
}

std::string describeNonFinite(std::int64_t nonFinite, std::int64_t nan)
{
    if (nan < 0)
        return std::to_string(nonFinite) + " Inf or NaN";
    const std::int64_t inf = nonFinite - nan;
    if (nan == 0)
        return std::to_string(inf) + " Inf";
    if (inf == 0)
        return std::to_string(nan) + " NaN";
    return std::to_string(inf) + " Inf, " + std::to_string(nan) + " NaN";
}

} // namespace mantissa
