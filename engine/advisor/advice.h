#pragma once
// The precision advisor from end to end on a probe already built (docs/advisor.md): each
// format's scores, each layer's probe in each format, the choice within the loss budget and
// the rank correlation of score and probe. `mantissa-cli advise` and the workbench's Advise
// panel both call adviseLayers(); what differs between them (keeping measurements across
// interruptions, printing, a progress bar) goes through AdviceHooks.
#include "engine/advisor/advisor_objective.h"
#include "engine/advisor/format_assignment.h"
#include "engine/advisor/precision_probe.h"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mantissa {

struct AdviceRequest {
    std::vector<LayerPrecision> formats; // the lower formats to consider (no auto, no repeats)
    double budget = 0.01;                // the largest total loss increase accepted
    AdvisorObjective objective = AdvisorObjective::Flops;
    // Skip most probes: each layer's loss increase is estimated from its score
    // (precision_probe.h), scaled into the probe's units by the ratios of probe to score over
    // `calibrationProbes` layers per format (spread over the scores' range: the lowest, the
    // highest and between), which are probed and keep their measured increase. 0 probes
    // nothing and takes the score itself as the estimate.
    bool scoreOnly = false;
    std::size_t calibrationProbes = 3;
};

struct AdviceTable {
    std::vector<AdvisorLayer> layers;
    std::vector<LayerPrecision> formats;
    // [layer][format]; in score-only, only the calibration probes are measured (the others
    // are left default: measured() says which).
    std::vector<std::vector<LayerProbeResult>> probes;
    std::vector<std::vector<double>> scores;
    // [layer][format]: the loss increase the choice counted: the probe's where measured, else
    // the score times the format's scoreScale.
    std::vector<std::vector<double>> costs;
    // Per format, in score-only: what the score is multiplied by to estimate a loss increase
    // (the geometric mean of probe / score over the calibration probes whose loss went up, 0
    // when none did; 1 without calibration probes). 1 when every layer was probed.
    std::vector<double> scoreScale;
    std::vector<std::vector<std::string>> misfits;
    Assignment assignment;
    double budget = 0;
    bool scoreOnly = false;
    double baselineLoss = 0;
    std::string baselineLabel; // "mixed-fp16"
    // Per format: the correlation of score and probe over the layers measured in it
    // (AdviceHooks::rankCorrelation; empty in score-only or without that hook).
    std::vector<std::optional<double>> rankCorrelations;

    bool measured(std::size_t l, std::size_t f) const { return !probes[l][f].layer.empty(); }
};

// Where the caller watches, stops, and keeps what was measured. Every hook may be empty.
struct AdviceHooks {
    // Asked before each probe; true stops there (adviseLayers() then returns nothing).
    std::function<bool()> stopRequested;
    // Measurements made earlier (a resumed advise): returned instead of measured again.
    std::function<std::optional<std::vector<double>>(LayerPrecision)> knownScores;
    std::function<std::optional<LayerProbeResult>(const std::string& layer, LayerPrecision)> knownProbe;
    // Before probe `index` of `total` (1-based) is measured; not called for known probes.
    std::function<void(std::size_t index, std::size_t total, const std::string& layer, LayerPrecision)> probing;
    // After a format's scores or a probe were measured (not for known ones).
    std::function<void(LayerPrecision, const std::vector<double>&)> scoresMeasured;
    std::function<void(std::size_t index, std::size_t total, const LayerProbeResult&, double seconds)> probed;
    // The rank correlation of the scores and the probes' loss increases (paired by layer): the
    // callers pass stats::spearmanCorrelation, as the engine sits below stats/. Empty: none.
    std::function<std::optional<double>(const std::vector<double>& scores, const std::vector<double>& probes)>
        rankCorrelation;
};

// Throws ConfigError for a request without formats, a model without GEMM layers, or a
// non-finite budget; nothing when stopRequested() stopped it.
std::optional<AdviceTable> adviseLayers(PrecisionProbe& probe, const AdviceRequest& request,
                                        const RecipeOptions& recipe, const std::string& baselineLabel,
                                        const AdviceHooks& hooks = {});

// The chosen format of layer `l` ("" for the baseline's).
std::string chosenFormat(const AdviceTable& table, std::size_t l);
// The share of the GEMM layers' FLOPs and weights left in the baseline's formats (the first,
// `format` "") and put in each format asked for (then in the table's order), in [0, 1].
struct FormatShare {
    std::string format;
    double flops = 0;
    double weights = 0;
};
std::vector<FormatShare> formatShares(const AdviceTable& table);
// In score-only, what the estimate of format `f` is: "score-only in mxfp4: estimated loss
// increase = score x 41.2, the ratio of ... (1.linear, 13.linear, 25.linear)".
std::string scoreScaleSentence(const AdviceTable& table, std::size_t f);
// `config` with the chosen formats set in model.precision_overrides (other layers' kept).
RunConfig advisedConfig(const RunConfig& config, const AdviceTable& table);

} // namespace mantissa
