#include "engine/advisor/advice.h"

#include "engine/util/check.h"
#include "engine/util/enum_table.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace mantissa {

namespace {

void measureScores(PrecisionProbe& probe, AdviceTable& table, const AdviceHooks& hooks)
{
    for (std::size_t f = 0; f < table.formats.size(); ++f) {
        std::optional<std::vector<double>> scores;
        if (hooks.knownScores)
            scores = hooks.knownScores(table.formats[f]);
        if (!scores) {
            scores = probe.scores(table.formats[f]);
            if (hooks.scoresMeasured)
                hooks.scoresMeasured(table.formats[f], *scores);
        }
        for (std::size_t l = 0; l < table.layers.size(); ++l)
            table.scores[l][f] = scores->at(l);
    }
}

// Probe layer `l` in format `f` (or take what an earlier advise measured); false when stopped.
bool measureProbe(PrecisionProbe& probe, AdviceTable& table, const AdviceHooks& hooks, std::size_t l, std::size_t f,
                  std::size_t index, std::size_t total)
{
    const std::string& layer = table.layers[l].name;
    const LayerPrecision format = table.formats[f];
    std::optional<LayerProbeResult> result;
    if (hooks.knownProbe)
        result = hooks.knownProbe(layer, format);
    if (!result) {
        if (hooks.stopRequested && hooks.stopRequested())
            return false;
        if (hooks.probing)
            hooks.probing(index, total, layer, format);
        const auto start = std::chrono::steady_clock::now();
        result = probe.probe(layer, format);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (hooks.probed)
            hooks.probed(index, total, *result, seconds);
    }
    table.probes[l][f] = *result;
    table.misfits[l][f] = result->misfit;
    return true;
}

// Every layer in every format; false when stopped.
bool measureProbes(PrecisionProbe& probe, AdviceTable& table, const AdviceHooks& hooks)
{
    std::size_t index = 0;
    const std::size_t total = table.layers.size() * table.formats.size();
    for (std::size_t l = 0; l < table.layers.size(); ++l)
        for (std::size_t f = 0; f < table.formats.size(); ++f)
            if (!measureProbe(probe, table, hooks, l, f, ++index, total))
                return false;
    return true;
}

// The layers that calibrate format `f`'s scores: `count` of those that can take it, at evenly
// spread ranks of their scores (the lowest and the highest first among them).
std::vector<std::size_t> calibrationLayers(const AdviceTable& table, std::size_t f, std::size_t count)
{
    std::vector<std::size_t> candidates;
    for (std::size_t l = 0; l < table.layers.size(); ++l)
        if (table.misfits[l][f].empty() && std::isfinite(table.scores[l][f]))
            candidates.push_back(l);
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](std::size_t a, std::size_t b) { return table.scores[a][f] < table.scores[b][f]; });
    if (count == 0 || candidates.empty())
        return {};
    if (count >= candidates.size())
        return candidates;
    std::vector<std::size_t> chosen;
    for (std::size_t j = 0; j < count; ++j) {
        const std::size_t rank =
            count == 1 ? candidates.size() / 2 : (j * (candidates.size() - 1) + (count - 1) / 2) / (count - 1);
        if (chosen.empty() || chosen.back() != candidates[rank])
            chosen.push_back(candidates[rank]);
    }
    return chosen;
}

// Score-only: which layers fit each format, then the calibration probes and the scale they
// give the scores; false when stopped.
bool calibrateScores(PrecisionProbe& probe, AdviceTable& table, const AdviceHooks& hooks, std::size_t probesPerFormat)
{
    for (std::size_t l = 0; l < table.layers.size(); ++l)
        for (std::size_t f = 0; f < table.formats.size(); ++f)
            table.misfits[l][f] = probe.misfit(table.layers[l].name, table.formats[f]);
    std::vector<std::vector<std::size_t>> calibration;
    std::size_t total = 0;
    for (std::size_t f = 0; f < table.formats.size(); ++f) {
        calibration.push_back(calibrationLayers(table, f, probesPerFormat));
        total += calibration.back().size();
    }
    std::size_t index = 0;
    for (std::size_t f = 0; f < table.formats.size(); ++f) {
        // The geometric mean of probe / score over the probed layers whose loss went up: a
        // ratio of sums would be the one layer of largest score's alone. A decrease is the
        // held-out batches' noise (or a layer that costs nothing), which no ratio describes.
        double logRatios = 0;
        std::size_t ratios = 0;
        for (std::size_t l : calibration[f]) {
            if (!measureProbe(probe, table, hooks, l, f, ++index, total))
                return false;
            const double increase = table.probes[l][f].lossIncrease;
            if (table.misfits[l][f].empty() && std::isfinite(increase) && increase > 0 && table.scores[l][f] > 0) {
                logRatios += std::log(increase / table.scores[l][f]);
                ++ratios;
            }
        }
        if (!calibration[f].empty())
            table.scoreScale[f] = ratios > 0 ? std::exp(logRatios / static_cast<double>(ratios)) : 0.0;
    }
    return true;
}

} // namespace

std::optional<AdviceTable> adviseLayers(PrecisionProbe& probe, const AdviceRequest& request,
                                        const RecipeOptions& recipe, const std::string& baselineLabel,
                                        const AdviceHooks& hooks)
{
    if (request.formats.empty())
        throw ConfigError("no format to advise on: choose one lower format or more");
    if (!std::isfinite(request.budget))
        throw ConfigError("the loss budget must be a finite number");
    const std::vector<AdvisorLayer>& layers = probe.layers();
    if (layers.empty())
        throw ConfigError("the model has no layer that runs GEMMs: there is nothing to advise on");

    AdviceTable table;
    table.layers = layers;
    table.formats = request.formats;
    table.budget = request.budget;
    table.scoreOnly = request.scoreOnly;
    table.baselineLoss = probe.baselineLoss();
    table.baselineLabel = baselineLabel;
    table.scores.assign(layers.size(), std::vector<double>(table.formats.size(), NAN));
    table.misfits.assign(layers.size(), std::vector<std::string>(table.formats.size()));
    table.probes.assign(layers.size(), std::vector<LayerProbeResult>(table.formats.size()));
    table.costs.assign(layers.size(), std::vector<double>(table.formats.size(), NAN));
    table.scoreScale.assign(table.formats.size(), 1.0);
    measureScores(probe, table, hooks);
    const bool measuredAll = table.scoreOnly ? calibrateScores(probe, table, hooks, request.calibrationProbes)
                                             : measureProbes(probe, table, hooks);
    if (!measuredAll)
        return std::nullopt;

    std::vector<LayerCosts> costs(layers.size());
    for (std::size_t l = 0; l < layers.size(); ++l)
        for (std::size_t f = 0; f < table.formats.size(); ++f) {
            const double cost =
                table.measured(l, f) ? table.probes[l][f].lossIncrease : table.scoreScale[f] * table.scores[l][f];
            table.costs[l][f] = cost;
            costs[l].lossIncrease.push_back(std::isfinite(cost) ? cost : 0.0);
            costs[l].allowed.push_back(table.misfits[l][f].empty() && std::isfinite(cost));
        }
    table.assignment =
        assignFormats(advisorProblem(layers, costs, table.formats, recipe, request.objective, request.budget));
    if (!table.scoreOnly && hooks.rankCorrelation)
        for (std::size_t f = 0; f < table.formats.size(); ++f) {
            std::vector<double> score, measured;
            for (std::size_t l = 0; l < layers.size(); ++l)
                if (costs[l].allowed[f]) {
                    score.push_back(table.scores[l][f]);
                    measured.push_back(table.probes[l][f].lossIncrease);
                }
            table.rankCorrelations.push_back(hooks.rankCorrelation(score, measured));
        }
    return table;
}

std::string chosenFormat(const AdviceTable& table, std::size_t l)
{
    const int c = table.assignment.choice.at(l);
    return c < 0 ? std::string() : std::string(enumKey(table.formats.at(static_cast<std::size_t>(c))));
}

std::vector<FormatShare> formatShares(const AdviceTable& table)
{
    double flops = 0, weights = 0;
    for (const AdvisorLayer& layer : table.layers) {
        flops += static_cast<double>(layer.flops);
        weights += static_cast<double>(layer.weights);
    }
    std::vector<FormatShare> shares;
    for (int c = -1; c < static_cast<int>(table.formats.size()); ++c) {
        FormatShare share;
        if (c >= 0)
            share.format = std::string(enumKey(table.formats[static_cast<std::size_t>(c)]));
        for (std::size_t l = 0; l < table.layers.size(); ++l)
            if (table.assignment.choice.at(l) == c) {
                share.flops += static_cast<double>(table.layers[l].flops);
                share.weights += static_cast<double>(table.layers[l].weights);
            }
        share.flops = flops > 0 ? share.flops / flops : 0;
        share.weights = weights > 0 ? share.weights / weights : 0;
        shares.push_back(share);
    }
    return shares;
}

std::string scoreScaleSentence(const AdviceTable& table, std::size_t f)
{
    std::string probed;
    std::size_t count = 0;
    for (std::size_t l = 0; l < table.layers.size(); ++l)
        if (table.measured(l, f)) {
            probed += (count++ == 0 ? "" : ", ") + table.layers[l].name;
        }
    const std::string format(enumKey(table.formats.at(f)));
    if (count == 0)
        return "score-only in " + format +
               ", no layer probed: the budget is spent in the score itself, which sees the weights' rounding only "
               "and is well below the probe's increase";
    char scale[32];
    std::snprintf(scale, sizeof scale, "%.3g", table.scoreScale.at(f));
    return "score-only in " + format + ": estimated loss increase = score x " + scale +
           ", the geometric mean of the measured increase over the score of the " + std::to_string(count) +
           " layers probed (" + probed + "; those whose loss went down, or whose score is 0, left out)";
}

RunConfig advisedConfig(const RunConfig& config, const AdviceTable& table)
{
    RunConfig advised = config;
    for (std::size_t l = 0; l < table.layers.size(); ++l) {
        const int c = table.assignment.choice.at(l);
        if (c >= 0)
            advised.model.precisionOverrides[table.layers[l].name] =
                LayerFormat(table.formats.at(static_cast<std::size_t>(c)));
    }
    return advised;
}

} // namespace mantissa
