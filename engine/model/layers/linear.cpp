#include "engine/model/layers/linear.h"

#include "engine/model/init.h"
#include "engine/util/check.h"

namespace mantissa {

namespace {
struct LinearContext final : LayerContext {
    Tensor input;
    // The forward's operands, for the backward's GEMMs to read again where the recipe gives
    // them the same values (Layer::gemmInputAgain): neither changes in between. Kept only then.
    GemmOperandValues inputOperand, weight;
};
} // namespace

Linear::Linear(std::int64_t inFeatures, std::int64_t outFeatures, bool bias, std::string init, bool xavier,
               std::int64_t tokens)
    : m_in(inFeatures), m_out(outFeatures), m_tokens(tokens), m_hasBias(bias), m_init(std::move(init)), m_xavier(xavier)
{}

Shape Linear::outputShape(const Shape& input) const
{
    std::vector<std::int64_t> dims = input.dims();
    dims.back() = m_out;
    return Shape(dims);
}

void Linear::createParameters(Backend& backend, DType masterType, std::uint64_t seed)
{
    const InitRule fallback = m_xavier ? xavierNormal(m_in, m_out) : heNormal(m_in);
    MANTISSA_ASSERT(m_sharesTable == (m_tied != nullptr)); // the model ties a "tied" head first
    if (!m_tied)
        createParameter(m_weight, name() + ".weight", {m_out, m_in}, backend, masterType, computeType(),
                        parseInitRule(m_init, fallback), seed, true);
    if (m_hasBias)
        createParameter(m_bias, name() + ".bias", {m_out}, backend, masterType, computeType(),
                        {InitRule::Kind::Constant, 0.0f}, seed, false);
}

std::vector<Parameter*> Linear::parameters()
{
    std::vector<Parameter*> all;
    if (!m_tied)
        all.push_back(&m_weight);
    if (m_hasBias)
        all.push_back(&m_bias);
    return all;
}

namespace {

// C = op(a) op(b) (+ bias) for two prepared operands: the block-scaled GEMM when either carries
// block scales (fp8-block), else the sum scaled by the operands' scales (per-tensor FP8) or not.
// With `relu`, C = max(0, C): in the GEMM's epilogue where it has a bias (gemmRowBias), else a
// ReLU over C in place, with the same bits.
void multiply(Backend& backend, Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
              const GemmOperandValues& a, const GemmOperandValues& b, const Tensor* bias, Tensor& c, bool relu = false)
{
    if (a.blocks.present() || b.blocks.present()) {
        MANTISSA_ASSERT(a.scale == 1.0f && b.scale == 1.0f);
        backend.gemmBlockScaled(ta, tb, m, n, k, a.values, b.values, bias, c, {a.blocks, b.blocks});
    } else if (bias) {
        backend.gemmRowBias(ta, tb, m, n, k, a.values, b.values, *bias, c, {a.scale, b.scale}, relu);
        return;
    } else
        backend.gemm(ta, tb, m, n, k, a.scale * b.scale, a.values, b.values, 0.0f, c);
    if (relu)
        backend.activationForward(Activation::Relu, c, c);
}

} // namespace

ForwardResult Linear::forward(PassState& pass, const Tensor& x)
{
    const std::int64_t rows = x.numel() / m_in;
    Tensor input = x.reshaped({rows, m_in});
    Tensor y = pass.backend.empty({rows, m_out}, computeType());
    // K = in features, contiguous in both x [rows, in] and W [out, in].
    const GemmOperandValues xq =
        gemmInput(pass, input, GemmPass::Forward, GemmOperand::Activation, KLayout::rows(rows, m_in));
    const GemmOperandValues wq =
        gemmInput(pass, weight().working, GemmPass::Forward, GemmOperand::Weight, KLayout::rows(m_out, m_in));
    multiply(pass.backend, Transpose::No, Transpose::Yes, rows, m_out, m_in, xq, wq,
             m_hasBias ? &m_bias.working : nullptr, y, m_reluAfter);
    auto context = std::make_unique<LinearContext>();
    if (pass.training) {
        context->input = input;
        if (gemmInputReadAgain(pass.backend, GemmPass::WeightGrad, GemmOperand::Activation))
            context->inputOperand = xq;
        // fp8-block's 128x128 weight tiles can be read again too (GemmInputQuantizer::reuse).
        if (wq.blocks.present() || gemmInputReadAgain(pass.backend, GemmPass::DataGrad, GemmOperand::Weight))
            context->weight = wq;
    }
    return {y.reshaped(outputShape(x.shape())), std::move(context)};
}

Tensor Linear::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    auto& saved = static_cast<LinearContext&>(*context);
    const std::int64_t rows = dy.numel() / m_out;
    // dy is read by the weight gradient, the bias gradient and the data gradient.
    const Tensor gradient = sharedGemmInput(pass, dy.reshaped({rows, m_out}));
    // dW = dy^T x: its output is rounded to the compute type, which is where small
    // gradients underflow in fp16 unless the loss scale lifted them.
    // K = rows, the leading dimension of both dy [rows, out] and x [rows, in].
    const GemmOperandValues dyT =
        gemmInput(pass, gradient, GemmPass::WeightGrad, GemmOperand::Gradient, KLayout::along(1, rows, m_out));
    const GemmOperandValues xT =
        gemmInputAgain(pass, saved.inputOperand, GemmPass::Forward, saved.input, GemmPass::WeightGrad,
                       GemmOperand::Activation, KLayout::along(1, rows, m_in));
    multiply(pass.backend, Transpose::Yes, Transpose::No, m_out, m_in, rows, dyT, xT, nullptr, weight().grad);
    if (m_hasBias)
        pass.backend.rowBiasGrad(gradient, m_bias.grad);
    if (!pass.inputGradNeeded)
        return {};
    Tensor dx = pass.backend.empty({rows, m_in}, computeType());
    // K = out features: contiguous in dy [rows, out], the leading dimension of W [out, in].
    const GemmOperandValues dyq = gemmInputAgain(pass, dyT, GemmPass::WeightGrad, gradient, GemmPass::DataGrad,
                                                 GemmOperand::Gradient, KLayout::rows(rows, m_out));
    const GemmOperandValues wq =
        gemmInputAgain(pass, saved.weight, GemmPass::Forward, weight().working, GemmPass::DataGrad, GemmOperand::Weight,
                       KLayout::along(1, m_out, m_in));
    multiply(pass.backend, Transpose::No, Transpose::No, rows, m_in, m_out, dyq, wq, nullptr, dx);
    std::vector<std::int64_t> dims = dy.shape().dims();
    dims.back() = m_in;
    return dx.reshaped(Shape(dims));
}

} // namespace mantissa
