#pragma once
// The precision advisor's measurements (docs/advisor.md): from a model and a trained or partly
// trained state, what putting one layer that runs GEMMs (at any depth) in a lower format costs
// while every other layer stays as the baseline config has it.
//
// The probe: the layer's format set through model.precision_overrides (the rule every run
// follows, so a layer whose shapes the format cannot take is refused by the engine, in its
// words), the state's weights loaded, and the mean loss over a fixed set of held-out batches
// measured forward only (evaluation mode, no update); its increase over the baseline's is the
// layer's cost. With it, the shadow error it causes: the model output's RMS error relative to
// an fp32 copy of the same weights on the first held-out batch (the shadow track's comparison,
// engine/lens/shadow_model.h).
//
// The score: an estimate of the same held-out loss increase, in the loss's units, from the
// fp32 copy's gradients instead of a pass per layer and format. For the rounding
// d_i = Q(w_i) - w_i of the layer's weights (Q the format's weight quantisation, blocks along
// each weight row: the GEMM's K for a linear layer's [out, in] and a convolution's
// [out, in x kh x kw]), the second-order term of the loss's Taylor expansion with the Hessian
// taken as the empirical Fisher's diagonal:
//     score = 1/2 sum_i F_ii d_i^2,
// F_ii the per-sample mean of the squared gradient of the held-out loss, measured over the
// held-out samples split into micro-batches (from the spread of their gradients). The
// first-order term sum_i g_i d_i is left out: rounding errors fall on either side, so it
// averages out, and measured it is a noisy sign that ranks the layers worse (docs/advisor.md).
// It sees the weights' rounding only, not the inputs' or the gradients', and at a trained
// state the empirical Fisher is smaller than the curvature: it ranks layers, and is scaled
// to the probe's units by a few probes where it stands in for them (advice.h). It costs the
// micro-batches' forward and backward passes whatever the layer count.
#include "engine/backend/backend.h"
#include "engine/config/run_config.h"
#include "engine/data/dataset.h"
#include "engine/lens/shadow_model.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mantissa {

// One layer that runs GEMMs, as model.precision_overrides names it.
struct AdvisorLayer {
    std::string name;         // "2.transformer.mlp.up"
    std::int64_t flops = 0;   // forward FLOPs per sample (multiply-adds count two)
    std::int64_t weights = 0; // parameter values it holds (its bias included)
    double baselineBits = 32; // the bits a weight of it takes in the baseline (advisor_objective.h)
    // The widths its GEMMs' blocks run along ("in features", 100), Layer::tensorCoreExtents.
    std::vector<std::pair<std::string, std::int64_t>> widths;
};

struct LayerProbeResult {
    std::string layer;
    LayerPrecision format = LayerPrecision::Auto;
    // Non-empty where the model cannot take `format` at this layer: the engine's refusal.
    std::string misfit;
    double loss = 0;         // held-out loss with the layer in `format`
    double lossIncrease = 0; // loss - the baseline's
    // The model output's RMS error relative to fp32 on the first held-out batch; NaN where the
    // output was not finite.
    double outputRelativeError = 0;
};

struct AdvisorProbeOptions {
    std::int64_t heldOutBatches = 4;
    std::int64_t batchSize = 0; // 0: the config's training.batch_size
};

class PrecisionProbe {
public:
    // `config`: the baseline, as it runs (its precision and its own per-layer formats). The
    // weights and batch-norm statistics come from `checkpoint` (Trainer::saveCheckpoint; ""
    // keeps the config's initial weights). The held-out batches are the first ones of the
    // validation split, else of the test split. Throws ConfigError (a model the config cannot
    // build, no held-out data) and IoError (an unreadable checkpoint, or one of another model).
    PrecisionProbe(const RunConfig& config, Backend& backend, const DatasetSplits& data, std::string checkpoint,
                   const AdvisorProbeOptions& options = {});
    ~PrecisionProbe();

    // The layers that run GEMMs, in the order the model runs them.
    const std::vector<AdvisorLayer>& layers() const { return m_layers; }
    double baselineLoss() const { return m_baselineLoss; }
    double baselineOutputRelativeError() const { return m_baselineOutputError; }
    // "fashion-mnist/test: the first 512 samples (4 batches of 128)".
    const std::string& heldOutDescription() const { return m_heldOutDescription; }

    // `layer` in `format`, every other layer as the baseline has it. A ConfigError from the
    // model's construction (a shape the format refuses) is returned as the misfit, not thrown.
    LayerProbeResult probe(const std::string& layer, LayerPrecision format);
    // Only whether the model takes `format` at `layer`: the engine's refusal, or "".
    std::string misfit(const std::string& layer, LayerPrecision format);
    // Every layer's score for `format`, in layers()' order (0 where the format does not change
    // the weights' values, or the layer holds no weight matrix).
    std::vector<double> scores(LayerPrecision format);
    // How many micro-batches the score's gradients are measured on (after scores()).
    std::int64_t scoreMicroBatches() const { return m_scoreMicroBatches; }

private:
    std::unique_ptr<Model> buildModel(const ModelSpec& spec);
    // The baseline spec with `layer` in `format`.
    ModelSpec specWith(const std::string& layer, LayerPrecision format) const;
    // The fp32 pass of the first held-out batch, which the output errors compare with.
    void measureReference();
    double heldOutLoss(Model& model);
    double outputRelativeError(Model& model);

    RunConfig m_config;
    Backend& m_backend;
    std::string m_checkpoint;
    DataTask m_task;
    Dataset m_heldOut;
    std::int64_t m_batchSize;
    std::string m_heldOutDescription;
    std::vector<AdvisorLayer> m_layers;
    std::unique_ptr<Model> m_baseline;
    double m_baselineLoss = 0, m_baselineOutputError = 0;
    std::unique_ptr<ShadowModel> m_shadow;
    ShadowReference* m_reference = nullptr; // the fp32 pass of the first held-out batch
    // The fp32 copy's gradients of the held-out loss, by parameter (scores(): once).
    struct GradientMoments {
        std::vector<double> mean;          // g_i
        std::vector<double> sampleSquares; // F_ii: the per-sample mean of g_i^2
    };
    void measureGradientMoments();
    std::map<std::string, GradientMoments> m_gradients;
    std::int64_t m_scoreMicroBatches = 0;
};

} // namespace mantissa
