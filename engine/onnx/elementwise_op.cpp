#include "engine/onnx/elementwise_op.h"

#include "engine/util/check.h"

#include <cmath>
#include <numbers>

namespace mantissa::onnx_import {

namespace {

struct ElementwiseContext final : LayerContext {
    std::int64_t batch = 0;
    std::vector<std::vector<float>> operands; // per operand: its values as forward read them
    std::vector<float> output;
};

constexpr std::size_t kMaxArity = 3;

} // namespace

std::size_t elementwiseArity(ElementwiseKind kind)
{
    switch (kind) {
    case ElementwiseKind::Sqrt:
    case ElementwiseKind::Erf: return 1;
    case ElementwiseKind::Where: return 3;
    default: return 2;
    }
}

ElementwiseOp::ElementwiseOp(std::string name, ElementwiseKind kind, DType computeType,
                             std::vector<std::int64_t> expanded, Shape output, std::vector<ElementwiseOperand> operands,
                             std::vector<Shape> valueShapes)
    : m_name(std::move(name)), m_kind(kind), m_computeType(computeType), m_output(std::move(output)),
      m_operands(std::move(operands)), m_valueShapes(std::move(valueShapes))
{
    MANTISSA_ASSERT(m_operands.size() == elementwiseArity(kind));
    MANTISSA_ASSERT(kind != ElementwiseKind::Where || m_operands[0].source == ElementwiseOperand::Source::Constant);
    const Shape shape(expanded);
    MANTISSA_ASSERT(shape.numel() == m_output.numel());
    // Each operand's offset for each output element, walked once here so that forward and
    // backward are plain loops.
    for (const ElementwiseOperand& operand : m_operands) {
        MANTISSA_ASSERT(operand.strides.size() == expanded.size());
        std::vector<std::int64_t> offsets(static_cast<std::size_t>(shape.numel()));
        std::vector<std::int64_t> index(expanded.size(), 0);
        for (std::int64_t& offset : offsets) {
            std::int64_t at = 0;
            for (std::size_t axis = 0; axis < expanded.size(); ++axis)
                at += index[axis] * operand.strides[axis];
            offset = at;
            for (std::size_t axis = expanded.size(); axis-- > 0;) {
                if (++index[axis] < expanded[axis])
                    break;
                index[axis] = 0;
            }
        }
        m_offsets.push_back(std::move(offsets));
    }
    m_addend = perSampleAddend();
}

int ElementwiseOp::perSampleAddend() const
{
    if (m_kind != ElementwiseKind::Add || m_operands.size() != 2)
        return -1;
    const auto inOrder = [&](std::size_t k) {
        const std::vector<std::int64_t>& offsets = m_offsets[k];
        for (std::size_t i = 0; i < offsets.size(); ++i)
            if (offsets[i] != static_cast<std::int64_t>(i))
                return false;
        return m_operands[k].elements == m_output.numel();
    };
    for (std::size_t k = 0; k < 2; ++k)
        if (m_operands[k].source == ElementwiseOperand::Source::Parameter &&
            m_operands[1 - k].source == ElementwiseOperand::Source::Value && inOrder(k) && inOrder(1 - k))
            return static_cast<int>(k);
    return -1;
}

std::vector<Shape> ElementwiseOp::outputShapes(const std::vector<Shape>& inputs) const
{
    MANTISSA_ASSERT(inputs.size() == m_valueShapes.size());
    return {batchedShape(inputs.empty() ? 1 : inputs[0][0], m_output)};
}

std::vector<Parameter*> ElementwiseOp::parameters()
{
    std::vector<Parameter*> all;
    for (const ElementwiseOperand& operand : m_operands)
        if (operand.source == ElementwiseOperand::Source::Parameter)
            all.push_back(operand.parameter);
    return all;
}

float ElementwiseOp::apply(const float* operands) const
{
    const float a = operands[0], b = operands[1];
    switch (m_kind) {
    case ElementwiseKind::Add: return a + b;
    case ElementwiseKind::Sub: return a - b;
    case ElementwiseKind::Mul: return a * b;
    case ElementwiseKind::Div: return a / b;
    case ElementwiseKind::Pow: return std::pow(a, b);
    case ElementwiseKind::Sqrt: return std::sqrt(a);
    case ElementwiseKind::Erf: return std::erf(a);
    case ElementwiseKind::Where: return a != 0.0f ? b : operands[2];
    }
    return 0.0f;
}

OpForward ElementwiseOp::forward(PassState& pass, const std::vector<Tensor>& inputs)
{
    MANTISSA_ASSERT(inputs.size() == m_valueShapes.size() && !inputs.empty());
    auto context = std::make_unique<ElementwiseContext>();
    const std::int64_t batch = inputs[0].shape()[0];
    context->batch = batch;
    if (m_addend >= 0) {
        // Each sample's values plus the parameter's, in fp32 and rounded once, as on the host.
        Tensor out = pass.backend.empty(batchedShape(batch, m_output), m_computeType);
        pass.backend.addBroadcast(inputs[0], m_operands[static_cast<std::size_t>(m_addend)].parameter->working, out,
                                  m_output.numel());
        OpForward result;
        result.outputs.push_back(out);
        if (pass.training)
            result.context = std::move(context);
        return result;
    }
    std::size_t nextInput = 0;
    for (const ElementwiseOperand& operand : m_operands) {
        std::vector<float> values;
        switch (operand.source) {
        case ElementwiseOperand::Source::Value: {
            const Tensor& t = inputs[nextInput++];
            values.resize(static_cast<std::size_t>(t.numel()));
            pass.backend.download(t, values.data());
            break;
        }
        case ElementwiseOperand::Source::Constant: values = operand.constant; break;
        case ElementwiseOperand::Source::Parameter:
            values.resize(static_cast<std::size_t>(operand.parameter->working.numel()));
            pass.backend.download(operand.parameter->working, values.data());
            break;
        }
        context->operands.push_back(std::move(values));
    }
    const std::int64_t perSample = m_output.numel();
    std::vector<float> y(static_cast<std::size_t>(batch * perSample));
    for (std::int64_t n = 0; n < batch; ++n) {
        for (std::int64_t i = 0; i < perSample; ++i) {
            float operand[kMaxArity] = {};
            for (std::size_t k = 0; k < m_operands.size(); ++k) {
                const bool perSampleValues = m_operands[k].source == ElementwiseOperand::Source::Value;
                const std::int64_t base = perSampleValues ? n * m_operands[k].elements : 0;
                operand[k] =
                    context->operands[k][static_cast<std::size_t>(base + m_offsets[k][static_cast<std::size_t>(i)])];
            }
            y[static_cast<std::size_t>(n * perSample + i)] = apply(operand);
        }
    }
    Tensor out = pass.backend.empty(batchedShape(batch, m_output), m_computeType);
    pass.backend.upload(y.data(), out);
    OpForward result;
    result.outputs.push_back(out);
    if (pass.training) {
        if (m_kind == ElementwiseKind::Pow || m_kind == ElementwiseKind::Sqrt)
            context->output = std::move(y);
        result.context = std::move(context);
    }
    return result;
}

std::vector<Tensor> ElementwiseOp::backward(PassState& pass, const std::vector<Tensor>& outputGradients,
                                            LayerContext* context, const std::vector<bool>& inputGradNeeded)
{
    auto& saved = static_cast<ElementwiseContext&>(*context);
    const std::int64_t batch = saved.batch;
    const std::int64_t perSample = m_output.numel();
    if (m_addend >= 0) {
        const Tensor& dy = outputGradients.at(0);
        pass.backend.addBroadcastBackward(dy, m_operands[static_cast<std::size_t>(m_addend)].parameter->grad,
                                          perSample);
        if (!inputGradNeeded.at(0))
            return {Tensor()};
        if (dy.dtype() == m_computeType)
            return {dy};
        Tensor dx = pass.backend.empty(dy.shape(), m_computeType);
        pass.backend.cast(dy, dx);
        return {dx};
    }
    std::vector<float> dy(static_cast<std::size_t>(batch * perSample));
    pass.backend.download(outputGradients.at(0), dy.data());

    // Which operands want a gradient, and an fp32 sum for each.
    std::vector<bool> wanted(m_operands.size(), false);
    std::vector<std::vector<float>> sums(m_operands.size());
    std::size_t input = 0;
    for (std::size_t k = 0; k < m_operands.size(); ++k) {
        const ElementwiseOperand& operand = m_operands[k];
        if (operand.source == ElementwiseOperand::Source::Value)
            wanted[k] = inputGradNeeded.at(input++);
        else
            wanted[k] = operand.source == ElementwiseOperand::Source::Parameter;
        if (wanted[k])
            sums[k].assign(saved.operands[k].size(), 0.0f);
    }
    for (std::int64_t n = 0; n < batch; ++n) {
        for (std::int64_t i = 0; i < perSample; ++i) {
            std::size_t at[kMaxArity] = {};
            float v[kMaxArity] = {};
            for (std::size_t k = 0; k < m_operands.size(); ++k) {
                const bool perSampleValues = m_operands[k].source == ElementwiseOperand::Source::Value;
                at[k] = static_cast<std::size_t>((perSampleValues ? n * m_operands[k].elements : 0) +
                                                 m_offsets[k][static_cast<std::size_t>(i)]);
                v[k] = saved.operands[k][at[k]];
            }
            const std::size_t o = static_cast<std::size_t>(n * perSample + i);
            const float g = dy[o];
            float d[kMaxArity] = {};
            float &da = d[0], &db = d[1];
            switch (m_kind) {
            case ElementwiseKind::Add: da = g, db = g; break;
            case ElementwiseKind::Sub: da = g, db = -g; break;
            case ElementwiseKind::Mul: da = g * v[1], db = g * v[0]; break;
            case ElementwiseKind::Div: da = g / v[1], db = -g * v[0] / (v[1] * v[1]); break;
            case ElementwiseKind::Pow:
                da = g * v[1] * std::pow(v[0], v[1] - 1.0f);
                db = g * saved.output[o] * std::log(v[0]);
                break;
            case ElementwiseKind::Sqrt: da = g * 0.5f / saved.output[o]; break;
            case ElementwiseKind::Erf:
                da = g * static_cast<float>(2.0 / std::sqrt(std::numbers::pi)) * std::exp(-v[0] * v[0]);
                break;
            // The gradient goes to the operand picked, as it is; the condition has none.
            case ElementwiseKind::Where: (v[0] != 0.0f ? d[1] : d[2]) = g; break;
            }
            for (std::size_t k = 0; k < m_operands.size(); ++k)
                if (wanted[k])
                    sums[k][at[k]] += d[k];
        }
    }
    std::vector<Tensor> gradients;
    input = 0;
    for (std::size_t k = 0; k < m_operands.size(); ++k) {
        const ElementwiseOperand& operand = m_operands[k];
        if (operand.source == ElementwiseOperand::Source::Parameter) {
            pass.backend.upload(sums[k].data(), operand.parameter->grad);
            continue;
        }
        if (operand.source != ElementwiseOperand::Source::Value)
            continue;
        const Shape& shape = m_valueShapes[input++];
        if (!wanted[k]) {
            gradients.emplace_back();
            continue;
        }
        Tensor dx = pass.backend.empty(batchedShape(batch, shape), m_computeType);
        pass.backend.upload(sums[k].data(), dx);
        gradients.push_back(dx);
    }
    return gradients;
}

} // namespace mantissa::onnx_import
