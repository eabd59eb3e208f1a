#include "engine/advisor/advice.h"

#include "engine/util/check.h"
#include "engine/util/enum_table.h"

#include <chrono>
#include <cmath>

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

// False when stopped.
bool measureProbes(PrecisionProbe& probe, AdviceTable& table, const AdviceHooks& hooks)
{
    std::size_t index = 0;
    const std::size_t total = table.layers.size() * table.formats.size();
    for (std::size_t l = 0; l < table.layers.size(); ++l)
        for (std::size_t f = 0; f < table.formats.size(); ++f) {
            ++index;
            const std::string& layer = table.layers[l].name;
            const LayerPrecision format = table.formats[f];
            if (table.scoreOnly) {
                table.misfits[l][f] = probe.misfit(layer, format);
                continue;
            }
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
    measureScores(probe, table, hooks);
    if (!measureProbes(probe, table, hooks))
        return std::nullopt;

    std::vector<LayerCosts> costs(layers.size());
    for (std::size_t l = 0; l < layers.size(); ++l)
        for (std::size_t f = 0; f < table.formats.size(); ++f) {
            const double cost = table.scoreOnly ? table.scores[l][f] : table.probes[l][f].lossIncrease;
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
