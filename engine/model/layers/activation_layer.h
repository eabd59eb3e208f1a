#pragma once
// ReLU, GELU, tanh and sigmoid as layers of their own.
#include "engine/model/layer.h"
#include "engine/util/enum_table.h"

#include <optional>

namespace mantissa {

std::optional<Activation> parseActivation(const std::string& name);

class ActivationLayer final : public Layer {
public:
    explicit ActivationLayer(Activation kind) : m_kind(kind) {}

    LayerKind kind() const override;
    Shape outputShape(const Shape& input) const override { return input; }
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;
    Activation activation() const { return m_kind; }

private:
    Activation m_kind;
};

} // namespace mantissa
