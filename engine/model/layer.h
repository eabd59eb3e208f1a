#pragma once
// A layer with explicit forward and backward. Forward returns a context that backward
// consumes, so saved activations have an owner and a lifetime.
#include "engine/backend/backend.h"
#include "engine/config/layer_kind.h"
#include "engine/model/gemm_inputs.h"
#include "engine/model/parameter.h"
#include "engine/precision/precision_policy.h"

#include <memory>
#include <string>
#include <vector>

namespace mantissa {

// What a forward pass saves for backward; each layer defines its own.
struct LayerContext {
    virtual ~LayerContext() = default;
};

struct ForwardResult {
    Tensor output;
    std::unique_ptr<LayerContext> context; // may be null when backward needs nothing
};

// Sees every layer's tensors as a pass produces them. The numerics lens installs one on
// sampled steps only (PassState::tap), so other steps pay one null check per layer.
class LayerTap : public GemmInputObserver {
public:
    virtual ~LayerTap() = default;
    // After layer `index`'s forward, with its output.
    virtual void afterForward(std::size_t index, const Tensor& output) = 0;
    // After layer `index`'s backward: its parameters' gradients are written, and
    // inputGradient is its dx (undefined for the first layer, which computes none).
    virtual void afterBackward(std::size_t index, const Tensor& inputGradient) = 0;
    // During layer `index`'s forward, a tensor of its own that its output does not show: the
    // attention scores before the softmax, a norm's statistics. `tensor` names it
    // ("3.transformer.attention.scores"). A tap that wants only outputs ignores these.
    virtual void insideForward(std::size_t index, const std::string& tensor, const Tensor& t)
    {
        static_cast<void>(index);
        static_cast<void>(tensor);
        static_cast<void>(t);
    }
    // Whether gemmInput() should be called: true makes every quantised GEMM input of the pass
    // measure what its quantisation did, which costs the slow quantiser, so a tap that does
    // not read them (the overflow localisation) leaves it false.
    virtual bool measuresGemmInputs() const { return false; }
    // What a recipe's quantisation did to one GEMM input of any layer, nested ones included.
    void gemmInput(const std::string& layer, GemmPass pass, GemmOperand operand, const OperandFormat& format,
                   const QuantStats& stats) override
    {
        static_cast<void>(layer), static_cast<void>(pass), static_cast<void>(operand), static_cast<void>(format),
            static_cast<void>(stats);
    }
};

// Sees every node of the model's graph as a pass produces its tensors, nested layers of a block
// included (a transformer block's norms, attention and MLP): the shadow error track installs
// one on its steps only (PassState::nodeTap). Nodes are indices into Graph::nodes().
class NodeTap {
public:
    virtual ~NodeTap() = default;
    // After node `node`'s forward, with its first output.
    virtual void afterNodeForward(std::size_t node, const Tensor& output) = 0;
    // After node `node`'s backward, with the gradient of its first input (undefined where
    // nothing upstream needs it). Not called for nodes whose backward does not run.
    virtual void afterNodeBackward(std::size_t node, const Tensor& inputGradient) = 0;
};

// Runtime state shared by all layers of one pass.
struct PassState {
    Backend& backend;
    bool training = true;
    std::uint64_t seed = 0; // for dropout masks
    std::uint64_t step = 0; // for dropout masks
    // False for the first layer: nothing consumes the gradient of the input data, so its
    // backward may skip computing dx (and return an undefined tensor).
    bool inputGradNeeded = true;
    // Set by the data-parallel trainer on training passes under distributed.batch_norm
    // synchronised: batch-norm layers then normalise with the global batch's statistics.
    CrossRankSum* batchNormAcrossRanks = nullptr;
    LayerTap* tap = nullptr;    // sees the model's top-level layers when set
    NodeTap* nodeTap = nullptr; // sees every node of the model's graph when set
    std::size_t layerIndex = 0; // the top-level layer running, for LayerTap::insideForward
};

class Layer;
class Graph;

// A layer that another holds and runs (a transformer block's attention, an attention's query
// projection), with the suffix its name takes: "<holder>.<role>"; an empty role gives it the
// holder's own name (the linear layer inside an ActivatedLayer).
struct Sublayer {
    Layer* layer = nullptr;
    std::string role;
    // Reads the same input as the sublayer before it (an attention's key and value projections,
    // which Transformer Engine and Megatron run as one fused QKV GEMM with the query's).
    bool sameInputAsPrevious = false;
};

class Layer {
public:
    virtual ~Layer() = default;

    // The spec's type; its key ("linear", "conv2d", ...) names the layer's parameters.
    virtual LayerKind kind() const = 0;
    // Output shape for a batched input shape (shapes were validated when the model was built).
    virtual Shape outputShape(const Shape& input) const = 0;
    // The dtype this layer computes and stores its output in.
    DType computeType() const { return m_computeType; }
    void setComputeType(DType t) { m_computeType = t; }
    // Takes the policy's dtypes for this layer (before createParameters). A block also resolves
    // the overrides of the layers it holds against `policy`, with its own dtypes as their default.
    // The default hands the same dtypes (and so the recipe) to every sublayer, so that a GEMM at
    // any depth follows the run's recipe; a block with per-layer overrides resolves them instead.
    virtual void applyPrecision(const PrecisionPolicy& policy, const LayerDTypes& dtypes);
    // The recipe each operand role of this layer's GEMMs is quantised by (None outside the recipes).
    const OperandRecipes& gemmRecipes() const { return m_gemmInputs.recipes(); }
    bool quantisesGemms() const { return m_gemmInputs.quantises(); }
    // Whether the layer's format was stated (its "precision", model.precision_overrides, or
    // those of a layer holding it) rather than followed from the run's mode (LayerDTypes::stated).
    bool formatStated() const { return m_formatStated; }
    // "mxfp8", "fp32", "inputs bf16, weights mxfp4, gradients bf16": the format this layer's
    // GEMMs run in (layerFormatLabel).
    std::string formatLabel() const;
    // Leaves this layer's own GEMMs unquantised in the compute type (a recipe's kept first and
    // last GEMMs, keep_first_last); its sublayers are not touched.
    void keepGemmsUnquantised() { m_gemmInputs.setRecipes({}, m_gemmInputs.options()); }
    // This layer's own GEMM-input quantiser, whose delayed-scaling history a saved training
    // state carries (checkpoint.cpp).
    GemmInputQuantizer& gemmInputs() { return m_gemmInputs; }

    // Creates parameters (working, grad and fp32 grad tensors) on `backend`. masterType is fp32
    // except in pure low-precision runs. Initialisation draws from `seed`. The default creates
    // the sublayers' in their order.
    virtual void createParameters(Backend& backend, DType masterType, std::uint64_t seed);
    virtual std::vector<Parameter*> parameters() { return {}; }
    // Non-trainable state saved in checkpoints (batch-norm running statistics).
    virtual std::vector<std::pair<std::string, Tensor*>> buffers() { return {}; }

    // Compiles this layer into `graph` reading the value `input` and returns the value that holds
    // its output: one node that runs the layer (LayerOp), unless the layer is a block whose parts
    // become nodes of their own, joined by the graph's ops (Residual, TransformerBlock). Called
    // after applyPrecision, whose dtypes the block's ops take. A layer that holds others without
    // a skip path stays one node: attention's head split, scores and softmax are no graph ops
    // yet, and its three projections share one widened input that separate nodes would widen
    // three times; an activation's wrapper is one layer under one name.
    virtual std::size_t appendTo(Graph& graph, std::size_t input);

    // x arrives already in computeType(). Backward writes parameter gradients (grad) and
    // returns dx in computeType().
    virtual ForwardResult forward(PassState& pass, const Tensor& x) = 0;
    virtual Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) = 0;

    // --- facts for the model editor and reports (per sample, for the validated input shape) ---
    virtual std::int64_t parameterCount() const { return 0; }
    // Multiply-adds count as two FLOPs; forward only.
    virtual std::int64_t flopsPerSample() const { return 0; }
    // The GEMM/conv extents that tensor cores want as multiples of 8 (batch excluded), with
    // what each one is, e.g. {{"in features", 784}, {"out features", 1024}}.
    // A layer that holds others has its GEMMs' extents, each named by the GEMM's full name
    // ("2.transformer.attention.query: in features"), or as its own where the GEMM carries the
    // holder's name (the linear layer inside an activation's wrapper).
    virtual std::vector<std::pair<std::string, std::int64_t>> tensorCoreExtents() const;
    // The dtype the model hands this layer its input in: the compute type, except for a layer
    // that reads token ids, which stay fp32 (bf16 holds whole numbers only up to 256).
    virtual DType inputType() const { return computeType(); }
    // The layers a composite block is made of (a transformer block's norms, attention and
    // MLP), for the editor's expanded row; empty for a plain layer.
    virtual std::vector<const Layer*> parts() const { return {}; }
    // Every layer this one holds and runs, in the order its forward runs them: what names,
    // precision and parameter creation pass on, and what the walk over a model's GEMMs
    // (gemm_coverage.h) descends into. Empty for a leaf. A layer that holds another layer and
    // does not list it here leaves that layer's GEMMs outside the run's recipe (gemm_coverage_test
    // fails naming it).
    virtual std::vector<Sublayer> sublayers() { return {}; }
    // Whether this layer itself runs GEMMs on its inputs (a linear layer, a convolution), as
    // opposed to holding layers that do.
    virtual bool runsGemms() const { return false; }
    // The widths a recipe's blocks run along in this layer's own GEMMs, each K of the forward
    // or the data-gradient GEMM ({"in features", 784}); the weight gradient's K is the batch.
    virtual std::vector<std::pair<std::string, std::int64_t>> blockedWidths() const { return {}; }

    // Name prefix for parameters, "3.linear"; the sublayers take "<name>.<role>".
    const std::string& name() const { return m_name; }
    void setName(std::string name);

protected:
    // An input of one of this layer's GEMMs as the GEMM should read it: quantised by the run's
    // recipe (gemm_inputs.h), or `t` itself with scale 1. Every GEMM operand of every layer goes
    // through here, and the GEMM multiplies its sum by the two operands' scales (OperandScales).
    GemmOperandValues gemmInput(PassState& pass, const Tensor& t, GemmPass gemm, GemmOperand operand,
                                const KLayout& layout)
    {
        if (!m_gemmInputs.quantises())
            return {t, 1.0f, {}};
        return m_gemmInputs.prepare(gemmInputCall(pass), t, gemm, operand, layout);
    }
    // `t` for several of this layer's GEMMs (or a GEMM and a reduction) at once: widened once
    // where the backend's GEMMs would widen it for each (Backend::widenedForGemms), unless a
    // recipe quantises this layer's GEMM inputs, which then takes `t` as it is.
    Tensor sharedGemmInput(PassState& pass, const Tensor& t) const
    {
        return m_gemmInputs.quantises() ? t : pass.backend.widenedForGemms(t);
    }
    // gemmInput() for `t` again, where `prepared` is what gemmInput() gave for it (unchanged
    // since) in the GEMM of `preparedFor`: the same values without quantising them again where
    // the recipe makes them the same (GemmInputQuantizer::reuse: a per-tensor format shared by
    // both GEMMs; a linear layer's weight in fp8-block's 128x128 tiles, forward then data
    // gradient), else gemmInput(). An undefined `prepared` (nothing kept) prepares anew.
    GemmOperandValues gemmInputAgain(PassState& pass, const GemmOperandValues& prepared, GemmPass preparedFor,
                                     const Tensor& t, GemmPass gemm, GemmOperand operand, const KLayout& layout)
    {
        if (!m_gemmInputs.quantises())
            return {t, 1.0f, {}};
        const GemmInputCall call = gemmInputCall(pass);
        if (std::optional<GemmOperandValues> again =
                m_gemmInputs.reuse(call, prepared, preparedFor, t, gemm, operand, layout))
            return std::move(*again);
        return m_gemmInputs.prepare(call, t, gemm, operand, layout);
    }
    // Whether the forward's operand `operand` has the same values in the backward's GEMM `gemm`
    // (GemmInputQuantizer::samePerTensorValues) and is read again there, so that a layer keeps
    // it for gemmInputAgain rather than quantising it again. Only where the backend keeps
    // quantised operands (Backend::keepsQuantizedOperands), as GemmInputQuantizer::reuse reads
    // them again only there; elsewhere keeping it would only hold device memory.
    bool gemmInputReadAgain(const Backend& backend, GemmPass gemm, GemmOperand operand) const
    {
        return backend.keepsQuantizedOperands() &&
               m_gemmInputs.samePerTensorValues(GemmPass::Forward, gemm, operand, weightGradientMayRotate());
    }
    // Whether this layer's GEMMs apply per-block decode scales (Backend::gemmBlockScaled): a
    // linear layer's do; a convolution's cannot, since a 1x128 tile of its input lies at one
    // pixel and each output pixel sums over several (docs/formats.md).
    virtual bool gemmTakesBlockScales() const { return false; }
    // Whether the recipe's random Hadamard transform may rotate this layer's weight-gradient
    // inputs (precision.recipe.hadamard_wgrad): only where nothing else reads them, since the
    // rotated values mean something only in that one product.
    virtual bool weightGradientMayRotate() const { return false; }
    // Whether the operand this layer hands over as GemmOperand::Weight is a weight, which a
    // recipe may scale in 2D tiles (GemmInputCall::weightIsWeight).
    virtual bool weightOperandIsWeight() const { return true; }

    // Whether sublayers() become graph nodes of their own in appendTo (a transformer block's
    // norms, attention and MLP), so that each may compute in its own type.
    virtual bool partsAreGraphNodes() const { return false; }

private:
    // What the quantiser needs to know about this pass and this layer; the lens measures the
    // inputs only when its tap asks for them.
    GemmInputCall gemmInputCall(PassState& pass) const
    {
        GemmInputObserver* observer = pass.tap && pass.tap->measuresGemmInputs() ? pass.tap : nullptr;
        return {pass.backend,
                m_name,
                pass.training,
                pass.seed,
                pass.step,
                observer,
                weightGradientMayRotate(),
                gemmTakesBlockScales(),
                weightOperandIsWeight()};
    }

    DType m_computeType = DType::F32;
    bool m_formatStated = false;
    std::string m_name;
    GemmInputQuantizer m_gemmInputs;
};

using LayerPtr = std::unique_ptr<Layer>;

} // namespace mantissa
